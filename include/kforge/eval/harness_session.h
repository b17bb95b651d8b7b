// HarnessSession: the parent's side of one harness process (runner/HARNESS.md, protocol 2). It
// starts the harness (sandboxed, with the channel at fd 3 and the arena at fd 4, in a fresh
// freezer), speaks the commands as typed values, keeps its own clock around every command, and
// after every reply that carries outputs freezes the child, copies what the parent judges into
// private memory and thaws it. Nothing the caller gets back lives in memory the child can reach.
//
// Every method returns either its reply or a HarnessProblem: a failure the harness reported
// (`"ok": false`, with a verdict status), the process's end (crash, exit, timeout), a reply that
// breaks the protocol (a harness is candidate code's process: a malformed reply is the
// candidate's doing), or a failure of KForge itself. After a problem other than kFailure the
// session is over; `ended()` says so.
//
// Thread-safety: one owner. Usage:
//   auto s = HarnessSession::Start(launch);                  // the process starts warm
//   s->Hello({.device = "cpu", .arena_bytes = need});        // once, when sizes are known
//   auto x = s->Place(spec); memcpy(s->Bytes(x), ...);       // a trial's inputs, at its turn
//   s->Load({...}); auto out = s->Call({...});               // out->outputs: frozen copies
#ifndef KFORGE_EVAL_HARNESS_SESSION_H_
#define KFORGE_EVAL_HARNESS_SESSION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/core/sandbox.h"
#include "kforge/core/subprocess.h"
#include "kforge/eval/arena.h"
#include "kforge/eval/freezer.h"

namespace kforge {

inline constexpr int kHarnessProtocolVersion = 2;

// Shape and type of one tensor (runner/PROTOCOL.md "Tensor files" names and scalar rules).
struct TensorSpec {
  std::string name;
  std::string dtype;  // float32, float16, bfloat16, float64, int32, int64, int16, int8, uint8, bool
  std::vector<std::int64_t> shape;
  std::string scalar;  // "" for tensors; "int" or "float" for a Python number (0-d float64)
  std::string key;     // state tensors: the state_dict() key ("" otherwise)

  std::int64_t numel() const;
  std::uint64_t bytes() const;  // 0 for an unknown dtype
  bool operator==(const TensorSpec&) const = default;
};

// A tensor placed in the arena.
struct ArenaTensor {
  TensorSpec spec;
  ArenaRegion region;
};

// A tensor in the parent's own memory (a frozen copy of what the child wrote).
struct HostTensor {
  TensorSpec spec;
  std::vector<std::byte> data;
};

struct HarnessProblem {
  enum class Kind {
    kFailure,   // the harness answered "ok": false: `status` and `diagnostics` are its own
    kEnded,     // the process ended (exit or signal: `process`)
    kTimedOut,  // no reply before the deadline: the process group was killed (`process`)
    kProtocol,  // a reply that breaks HARNESS.md (malformed, wrong fields, too long)
    kInfra,     // KForge's own failure (arena, freezer, channel creation)
  };
  Kind kind = Kind::kInfra;
  std::string status;       // kFailure: compile_error, runtime_error, out_of_memory, ...
  std::string message;      // one line: what happened
  std::string diagnostics;  // kFailure: the harness's; kEnded/kTimedOut: the tail of stderr
  ProcessResult process;    // kEnded, kTimedOut
};

template <typename T>
using HarnessResult = std::expected<T, HarnessProblem>;

// How the harness process is started.
struct HarnessLaunch {
  std::vector<std::string> argv;       // the harness's command line (argv[0] absolute)
  std::vector<std::string> wrapper;    // put before it inside the sandbox; empty: none
  // Put before the sandbox's own command line: a tool that must stay out of the candidate's
  // reach (Nsight Compute with its report in a folder the sandbox hides); empty: none.
  std::vector<std::string> outer_wrapper;
  std::vector<std::string> env;        // complete environment; empty: inherit
  SandboxPolicy policy;                // scratch folder, visible and hidden paths
  bool sandboxed = true;               // false: only limits and the user switch (tests)
  std::shared_ptr<const Sandbox> sandbox;  // null: DefaultSandbox()
  ResourceLimits limits;
  // The scratch folder's quota, watched while the process runs (its end then says
  // limit_exceeded: resource_limit); null: none.
  std::shared_ptr<FolderQuota> folder_quota;
  std::chrono::seconds max_wait{1800};  // how long the process may wait for its first command
  std::optional<FreezeMethod> freeze;   // default: the strongest here (eval/freezer.h)
};

struct HelloRequest {
  std::string device;            // "cpu", "cuda:0"
  std::uint64_t arena_bytes = 0;  // the arena grows to this before the child maps it
};
struct HelloReply {
  std::string harness;           // the harness's name and version
  int protocol = 0;
  std::string environment_json;  // JSON object text
  std::string observed_isolation_json;
  double parent_seconds = 0;
};

// What `load` serves (runner/HARNESS.md "Messages in detail", `load.candidate`).
struct LoadRequest {
  std::string kind = "native";  // native, module, opencl, reference
  std::filesystem::path artifact;     // native: the shared object, as the child sees it
  std::filesystem::path source_file;  // module, opencl: the candidate's Python file
  std::string backend;                // module: triton, cute, metal, kernelbench, ...
  std::filesystem::path task_file;    // module, reference: the task's source
  std::string overrides_json;         // module, reference: JSON object text ("" for none)
  std::uint64_t init_seed = 0;        // module, reference
  std::string opencl_platform;        // opencl
  std::string variant;                // reference: eager, compile, compile-max-autotune
  std::vector<ArenaTensor> state;     // the reference Model's state tensors (keys set)
  std::string stream_handle = "none";  // cuda-stream, hip-stream, sycl-queue, none
};
struct LoadReply {
  double parent_seconds = 0;
  std::string result_fields_json;  // extra fields of the reply (e.g. state_loaded), JSON object
};

struct CallRequest {
  std::vector<ArenaTensor> inputs;   // the task inputs (then the state, for native candidates)
  std::vector<ArenaTensor> outputs;  // where the outputs go; the parent poisons them first
  std::vector<ArenaRegion> inputs_after;  // where the inputs go as they are after the call
  bool reuse = false;  // the previous call's buffers, re-poisoned (the address probe)
  bool profile = false;  // inside an external profiler's capture range (device-time check)
};
struct CallReply {
  std::vector<HostTensor> outputs;       // frozen copies, with the parent's specs
  std::vector<HostTensor> inputs_after;  // frozen copies, same specs as the inputs
  // Module candidates: what the call returned, where it differs from the parent's specs.
  std::vector<TensorSpec> output_descs;
  std::vector<std::string> problems;  // output problems the harness saw (a lazy output, ...)
  std::vector<std::string> findings;  // "[check-id] ...": what candidate code did to the harness
  double parent_seconds = 0;          // send to reply, on the parent's clock
  double freeze_seconds = 0;          // freeze, copy and thaw
};

struct TimingSet {
  std::vector<ArenaTensor> inputs;
  std::vector<ArenaTensor> outputs;
};
struct PrepareTimingRequest {
  std::vector<TimingSet> sets;
  std::string clock;  // cold, warm, host, cpu: the mode `sample` uses unless it names one
};

struct SampleRequest {
  int set = 0;
  std::string mode;   // cold, warm, host, cpu
  double spin_s = 0;  // cold: the spin kernel's length (0: the harness's own choice)
  int repeat = 1;     // calls back to back in this sample; `seconds` is per call
};
struct SampleReply {
  // The child's clock, raw (the clock's own cost in it: the parent subtracts the median of the
  // empty samples): a claim.
  double seconds = 0;
  double enqueue_s = 0;  // host time to enqueue the call (cold)
  int sm_mhz = 0;        // SM clock after the sample (0: unknown)
  std::vector<std::string> findings;
  double parent_seconds = 0;
};

struct GraphReply {
  double seconds_per_call = 0;
  std::vector<std::string> findings;
  double parent_seconds = 0;
};

class HarnessSession {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the harness process (sandboxed unless launch.sandboxed is false); it waits for
  // `hello`. Errors for what KForge could not set up (arena, freezer, fork, exec).
  static Result<std::unique_ptr<HarnessSession>> Start(const HarnessLaunch& launch,
                                                       std::stop_token stop = {});
  // Ends the process: `quit`, then its group killed if it is still there.
  ~HarnessSession();
  HarnessSession(const HarnessSession&) = delete;
  HarnessSession& operator=(const HarnessSession&) = delete;

  // Every command waits for its reply until `timeout` from when it is sent (set_timeout).
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  HarnessResult<HelloReply> Hello(const HelloRequest& request);
  HarnessResult<LoadReply> Load(const LoadRequest& request);
  HarnessResult<CallReply> Call(const CallRequest& request);
  HarnessResult<void> PrepareTiming(const PrepareTimingRequest& request);
  HarnessResult<SampleReply> Sample(const SampleRequest& request);
  HarnessResult<GraphReply> Graph(int set, int calls);
  // Freezes the child, copies `tensors` out of the arena, thaws (a timed sample's outputs,
  // chosen after the sample ran).
  HarnessResult<std::vector<HostTensor>> FreezeAndCopy(const std::vector<ArenaTensor>& tensors);

  // Arena placement: a region for `spec` (its bytes), and the bytes of a placed tensor.
  Result<ArenaTensor> Place(const TensorSpec& spec);
  std::span<std::byte> Bytes(const ArenaTensor& tensor);
  Arena& arena() { return *arena_; }

  // The process has ended (a problem other than kFailure, or quit).
  bool ended() const { return ended_; }
  FreezeMethod freeze_method() const { return freezer_->method(); }
  pid_t pid() const;
  std::string StderrSoFar() const;
  // Seconds the child's longest freeze took so far (the window after a reply in which the
  // child still runs is the time to the start of the freeze; diagnostics).
  double max_freeze_seconds() const { return max_freeze_seconds_; }

 private:
  HarnessSession() = default;
  struct Exchange;  // one command's reply, parsed
  // Sends `body` (a JSON object's text) with a fresh id and waits for the reply that echoes it.
  HarnessResult<Exchange> Command(const std::string& name, const std::string& body);
  HarnessProblem Ended(HarnessProblem::Kind kind, std::string message);
  HarnessResult<std::vector<HostTensor>> CopyFrozen(const std::vector<ArenaTensor>& tensors,
                                                    double* seconds);

  std::unique_ptr<Arena> arena_;
  std::unique_ptr<Freezer> freezer_;
  std::unique_ptr<class ChildProcess> child_;
  std::unique_ptr<class HarnessChannel> channel_;
  std::chrono::milliseconds timeout_{std::chrono::seconds(120)};
  std::chrono::seconds max_wait_{1800};
  // The process's own deadline (how long it may wait for `hello`); none once `hello` is sent.
  std::shared_ptr<std::atomic<std::int64_t>> deadline_;
  bool hello_done_ = false;
  bool sandboxed_ = true;
  std::shared_ptr<const Sandbox> sandbox_;  // the one that wrapped the process
  std::uint64_t last_id_ = 0;
  bool ended_ = false;
  double max_freeze_seconds_ = 0;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_HARNESS_SESSION_H_
