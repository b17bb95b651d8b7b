// Target: where a kernel runs and how it is written, e.g. "nvidia-h200/cuda", "cpu/opencl".
//
// Grammar: vendor[-device]/model. The vendor is one of nvidia, amd, intel, apple, cpu; the device
// is a product name (h200, mi300x, b580, m4) or an architecture (sm90, gfx942); the programming
// model is one of the registry's (src/target/registry.cc: cuda, hip, sycl, metal, triton, cute,
// opencl, cpp), each with the vendors that support it. A Target is a value type:
// Parse(t.ToString()) == t, and the string it prints is the one it was parsed from.
#ifndef KFORGE_TARGET_TARGET_H_
#define KFORGE_TARGET_TARGET_H_

#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"

namespace kforge {

enum class Vendor { kNvidia, kAmd, kIntel, kApple, kCpu };
enum class ProgrammingModel { kCuda, kTriton, kCute, kHip, kSycl, kMetal, kOpenCl, kCpp, kHelion };

std::string_view VendorName(Vendor vendor);
std::string_view ProgrammingModelName(ProgrammingModel model);
const std::vector<ProgrammingModel>& AllProgrammingModels();

struct Target {
  Vendor vendor = Vendor::kCpu;
  std::string device;  // lower case product or architecture name; empty: any device of the vendor
  ProgrammingModel model = ProgrammingModel::kCpp;
  // Architecture number when known: NVIDIA compute capability as 90 for sm_90, AMD gfx number as
  // 0x942 for gfx942; 0 when the device does not pin it.
  int arch = 0;

  static Result<Target> Parse(std::string_view text);
  std::string ToString() const;
  bool operator==(const Target&) const = default;
};

// The programming models a vendor supports, in the order `kforge targets` lists them.
std::vector<ProgrammingModel> ModelsOf(Vendor vendor);

// One target string per supported (vendor, model) pair, without a device: "nvidia/cuda", ...
std::vector<Target> AllTargets();

}  // namespace kforge

#endif  // KFORGE_TARGET_TARGET_H_
