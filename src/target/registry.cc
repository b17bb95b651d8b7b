#include "registry.h"

#include <cassert>

namespace kforge {

const std::vector<RegisteredModel>& RegisteredModels() {
  using V = Vendor;
  using PM = ProgrammingModel;
  static const std::vector<RegisteredModel> kModels = {
      {PM::kCuda, "cuda", {V::kNvidia}, NewCudaBackend},
      {PM::kHip, "hip", {V::kAmd}, NewHipBackend},
      {PM::kSycl, "sycl", {V::kIntel}, NewSyclBackend},
      {PM::kMetal, "metal", {V::kApple}, NewMetalBackend},
      {PM::kTriton, "triton", {V::kNvidia, V::kAmd, V::kIntel}, NewTritonBackend},
      {PM::kCute, "cute", {V::kNvidia}, NewCuteBackend},
      {PM::kHelion, "helion", {V::kNvidia}, NewHelionBackend},
      {PM::kOpenCl, "opencl", {V::kNvidia, V::kAmd, V::kIntel, V::kCpu}, NewOpenClBackend},
      {PM::kCpp, "cpp", {V::kCpu}, NewCppBackend},
  };
  return kModels;
}

const RegisteredModel& RegistryEntry(ProgrammingModel model) {
  for (const RegisteredModel& m : RegisteredModels()) {
    if (m.model == model) return m;
  }
  assert(false && "every ProgrammingModel has a registry line");
  return RegisteredModels().front();
}

}  // namespace kforge
