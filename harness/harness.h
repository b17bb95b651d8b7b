// The portable core of kforge-harness (runner/HARNESS.md, protocol 2): the command loop over the
// channel at fd 3, the arena at fd 4, the kernel ABI (runner/kforge_runner/abi/kforge_kernel.h),
// and the commands hello, prepare_timing, sample, load, call, graph, quit, on top of one Device
// adapter. Nothing here decides a verdict: every reply is a claim the parent checks.
#ifndef KFORGE_HARNESS_HARNESS_H_
#define KFORGE_HARNESS_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device.h"
#include "kforge_kernel.h"

namespace kforge_harness {

inline constexpr int kProtocol = 2;
inline constexpr int kChannelFd = 3;
inline constexpr int kArenaFd = 4;

// A tensor as a command names it: dtype, shape, its bytes in the arena.
struct Desc {
  std::int32_t dtype = 0;  // kforge_dtype
  std::string dtype_name;
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  bool scalar = false;  // a Python number: a 0-d float64 host tensor
  bool floating() const;
};

// A tensor the harness holds: device memory (host memory for scalars) and its ABI descriptor.
struct Buffer {
  Desc desc;
  void* data = nullptr;
  bool host = false;
};

class Harness {
 public:
  explicit Harness(std::unique_ptr<Device> device);
  ~Harness();

  // Reads commands until quit or the channel closes; returns the process's exit code.
  int Run();

  // One command (JSON object) to its reply; public for tests of the core without a channel.
  nlohmann::json Handle(const nlohmann::json& command);

 private:
  nlohmann::json Hello(const nlohmann::json& c);
  nlohmann::json Load(const nlohmann::json& c);
  nlohmann::json Call(const nlohmann::json& c);
  nlohmann::json PrepareTiming(const nlohmann::json& c);
  nlohmann::json Sample(const nlohmann::json& c);
  nlohmann::json Graph(const nlohmann::json& c);

  // A descriptor from a command, checked against the arena; throws std::runtime_error.
  Desc ParseDesc(const nlohmann::json& j) const;
  std::byte* ArenaAt(std::uint64_t offset, std::uint64_t bytes) const;
  // A fresh buffer for `desc` at an address no earlier buffer of this process had (earlier
  // buffers are kept until exit), filled from the arena when `fill_from_arena`.
  bool NewBuffer(const Desc& desc, bool fill_from_arena, Buffer* out, Failure* failure);
  bool Poison(Buffer& b, Failure* failure);
  bool Restore(Buffer& dst, const Buffer& src, Failure* failure);
  bool CopyOut(const Buffer& b, std::uint64_t offset, Failure* failure);
  static std::vector<kforge_tensor> Abi(const std::vector<Buffer>& buffers);
  // The call's inputs followed by the state tensors (the kernel ABI's order).
  std::vector<Buffer> WithState(const std::vector<Buffer>& inputs) const;
  int Forward(std::vector<kforge_tensor>& inputs, std::vector<kforge_tensor>& outputs);

  std::unique_ptr<Device> device_;
  std::byte* arena_ = nullptr;
  std::uint64_t arena_bytes_ = 0;
  bool hello_ = false;

  void* library_ = nullptr;
  using ForwardFn = int (*)(const kforge_tensor*, int, kforge_tensor*, int, void*);
  ForwardFn forward_ = nullptr;
  void* stream_ = nullptr;

  std::vector<Buffer> state_;  // loaded with the candidate
  std::vector<Buffer> all_;  // every buffer ever made (fresh addresses: nothing is reused)
  std::vector<Buffer> last_inputs_;
  std::vector<Buffer> last_outputs_;

  struct TimingSet {
    std::vector<Buffer> pristine;
    std::vector<Buffer> inputs;
    std::vector<Buffer> outputs;
    std::vector<std::uint64_t> output_offsets;
  };
  std::vector<TimingSet> sets_;
  std::string clock_;
};

}  // namespace kforge_harness

#endif  // KFORGE_HARNESS_HARNESS_H_
