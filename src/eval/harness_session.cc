#include "kforge/eval/harness_session.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kforge/core/child_process.h"
#include "kforge/eval/harness_channel.h"
#include "kforge/eval/tensor_compare.h"

namespace kforge {
namespace {

using nlohmann::json;
using Clock = HarnessSession::Clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

json RegionJson(const ArenaRegion& r) { return {{"offset", r.offset}, {"bytes", r.bytes}}; }

json DescJson(const ArenaTensor& t) {
  json d = {{"dtype", t.spec.dtype}, {"shape", t.spec.shape}, {"region", RegionJson(t.region)}};
  if (!t.spec.name.empty()) d["name"] = t.spec.name;
  if (!t.spec.scalar.empty()) d["scalar"] = t.spec.scalar;
  if (!t.spec.key.empty()) d["key"] = t.spec.key;
  return d;
}

// "findings" of a reply: lines naming a check, kept short (the reply is the child's).
std::vector<std::string> Findings(const json& reply) {
  std::vector<std::string> out;
  auto it = reply.find("findings");
  if (it == reply.end() || !it->is_array()) return out;
  for (const auto& f : *it) {
    if (f.is_string() && out.size() < 16) out.push_back(f.get<std::string>().substr(0, 500));
  }
  return out;
}

json DescsJson(const std::vector<ArenaTensor>& ts) {
  json a = json::array();
  for (const auto& t : ts) a.push_back(DescJson(t));
  return a;
}

// A number field of a reply; the reply is candidate-controlled, so every field is checked.
std::optional<double> Number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::uint64_t TensorSpec::bytes() const {
  const int size = DtypeSize(dtype);
  const std::int64_t n = numel();
  return size <= 0 || n < 0 ? 0 : static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(size);
}

struct HarnessSession::Exchange {
  json reply;
  double parent_seconds = 0;
};

Result<std::unique_ptr<HarnessSession>> HarnessSession::Start(const HarnessLaunch& launch,
                                                              std::stop_token stop) {
  if (launch.argv.empty()) return InvalidArgument("HarnessSession: empty command line");
  std::unique_ptr<HarnessSession> s(new HarnessSession());
  s->max_wait_ = launch.max_wait;
  s->sandboxed_ = launch.sandboxed;
  s->sandbox_ = launch.sandbox ? launch.sandbox : DefaultSandbox();
  auto arena = Arena::Create(0);
  if (!arena) return std::unexpected(arena.error());
  s->arena_ = std::move(*arena);
  auto freezer = Freezer::Create(launch.freeze);
  if (!freezer) return std::unexpected(freezer.error());
  s->freezer_ = std::move(*freezer);
  auto channel = HarnessChannel::Create();
  if (!channel) return std::unexpected(channel.error());
  s->channel_ = std::make_unique<HarnessChannel>(std::move(*channel));

  ProcessSpec spec;
  spec.argv = launch.wrapper;
  spec.argv.insert(spec.argv.end(), launch.argv.begin(), launch.argv.end());
  spec.env = launch.env;
  spec.limits = launch.limits;
  spec.folder_quota = launch.folder_quota;
  spec.inherit_fds = {s->channel_->child_fd(), s->arena_->fd()};
  spec.cgroup_procs = s->freezer_->procs_file();
  s->deadline_ = std::make_shared<std::atomic<std::int64_t>>(
      std::chrono::nanoseconds((Clock::now() + launch.max_wait).time_since_epoch()).count());
  spec.deadline = s->deadline_;
  if (!launch.policy.scratch_dir.empty()) spec.cwd = launch.policy.scratch_dir;
  // The harness's own program must be in its view: a sandbox with a private /tmp hides a harness
  // kept there (a build on the GPU machine, a copy beside a carried kforge).
  SandboxPolicy policy = launch.policy;
  if (const std::filesystem::path program = launch.argv.front(); program.is_absolute()) {
    policy.visible_paths.push_back(program.parent_path());
  }
  ProcessSpec wrapped = launch.sandboxed ? s->sandbox_->Wrap(std::move(spec), policy)
                                         : std::move(spec);
  if (!launch.sandboxed && launch.policy.drop_privileges && ::geteuid() == 0) {
    wrapped.uid = kUnprivilegedUid;
    wrapped.gid = kUnprivilegedUid;
  }
  wrapped.argv.insert(wrapped.argv.begin(), launch.outer_wrapper.begin(),
                      launch.outer_wrapper.end());
  auto child = ChildProcess::Start(wrapped, stop);
  if (!child) return std::unexpected(child.error());
  s->child_ = std::move(*child);
  s->channel_->CloseChildEnd();
  s->freezer_->Attach(s->child_->pid());
  return s;
}

HarnessSession::~HarnessSession() {
  if (child_ == nullptr) return;
  if (freezer_) (void)freezer_->Thaw();
  if (!ended_ && child_->running()) {
    (void)channel_->Send(R"({"command":"quit"})");
    child_->WaitUntil(Clock::now() + std::chrono::milliseconds(200));
  }
  if (child_->running()) {
    freezer_->KillAll();
    child_->Kill();
  }
  child_.reset();
}

pid_t HarnessSession::pid() const { return child_->pid(); }
std::string HarnessSession::StderrSoFar() const { return child_->StderrSoFar(); }

HarnessProblem HarnessSession::Ended(HarnessProblem::Kind kind, std::string message) {
  ended_ = true;
  (void)freezer_->Thaw();  // a frozen process cannot die (cgroup v1)
  HarnessProblem p;
  p.kind = kind;
  p.message = std::move(message);
  auto r = child_->WaitUntil(Clock::now() + std::chrono::milliseconds(
                                                kind == HarnessProblem::Kind::kEnded ? 500 : 0));
  if (!r) freezer_->KillAll();
  p.process = r ? *r : child_->Kill(kind == HarnessProblem::Kind::kTimedOut);
  // A sandbox wrapper reports its child's signal as an exit code: the harness's own end.
  if (sandboxed_) sandbox_->UnwrapResult(p.process);
  p.diagnostics = p.process.stderr_text;
  return p;
}

HarnessResult<HarnessSession::Exchange> HarnessSession::Command(const std::string& name,
                                                                const std::string& body) {
  if (ended_) {
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kInfra;
    p.message = "the harness session has ended";
    return std::unexpected(p);
  }
  // Every command carries a fresh id that its reply must echo: a reply to an earlier command (or
  // one sent before its command) is a protocol violation, never taken for this command's.
  const std::uint64_t id = ++last_id_;
  std::string text = body;
  text.insert(1, fmt::format("\"id\":{},", id));
  const auto sent = Clock::now();
  if (auto s = channel_->Send(text); !s) {
    return std::unexpected(Ended(HarnessProblem::Kind::kEnded,
                                 fmt::format("the harness is gone before `{}`", name)));
  }
  auto received = channel_->Receive(sent + timeout_, child_->pidfd());
  const auto replied = Clock::now();
  if (!received) {
    if (received.error().code == ErrorCode::kTimeout) {
      return std::unexpected(Ended(
          HarnessProblem::Kind::kTimedOut,
          fmt::format("`{}` got no reply within {} s; the harness's process group was killed", name,
                      std::chrono::duration<double>(timeout_).count())));
    }
    if (received.error().code == ErrorCode::kParse) {
      return std::unexpected(Ended(HarnessProblem::Kind::kProtocol, received.error().message));
    }
    return std::unexpected(
        Ended(HarnessProblem::Kind::kEnded, fmt::format("the harness ended during `{}`", name)));
  }
  json reply = json::parse(*received, nullptr, false);
  if (reply.is_discarded() || !reply.is_object() || !reply.contains("ok") ||
      !reply["ok"].is_boolean()) {
    return std::unexpected(Ended(
        HarnessProblem::Kind::kProtocol,
        fmt::format("the reply to `{}` is not a JSON object with a boolean \"ok\"", name)));
  }
  if (!reply.contains("id") || !reply["id"].is_number_unsigned() ||
      reply["id"].get<std::uint64_t>() != id) {
    return std::unexpected(Ended(
        HarnessProblem::Kind::kProtocol,
        fmt::format("the reply to `{}` does not carry the command's id {}", name, id)));
  }
  if (!reply["ok"].get<bool>()) {
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kFailure;
    p.status = reply.value("status", std::string("runtime_error"));
    if (!reply["status"].is_string()) p.status = "runtime_error";
    p.diagnostics = reply.contains("diagnostics") && reply["diagnostics"].is_string()
                        ? reply["diagnostics"].get<std::string>()
                        : "";
    p.message = fmt::format("`{}` failed: {}", name, p.status);
    return std::unexpected(p);
  }
  return Exchange{std::move(reply), SecondsBetween(sent, replied)};
}

Result<ArenaTensor> HarnessSession::Place(const TensorSpec& spec) {
  auto region = arena_->Allocate(spec.bytes());
  if (!region) return std::unexpected(region.error());
  return ArenaTensor{spec, *region};
}

std::span<std::byte> HarnessSession::Bytes(const ArenaTensor& tensor) {
  return arena_->Bytes(tensor.region);
}

HarnessResult<HelloReply> HarnessSession::Hello(const HelloRequest& request) {
  if (auto s = arena_->Grow(request.arena_bytes); !s) {
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kInfra;
    p.message = s.error().message;
    return std::unexpected(p);
  }
  // From here each command has its own deadline: the process may live as long as it answers.
  deadline_->store(0);
  auto x = Command("hello", json{{"command", "hello"},
                                 {"protocol", kHarnessProtocolVersion},
                                 {"arena_bytes", arena_->size()},
                                 {"device", request.device}}
                                .dump());
  if (!x) return std::unexpected(x.error());
  HelloReply r;
  r.parent_seconds = x->parent_seconds;
  const json& j = x->reply;
  r.protocol = j.value("protocol", 0);
  if (!j["protocol"].is_number_integer() || r.protocol != kHarnessProtocolVersion) {
    return std::unexpected(
        Ended(HarnessProblem::Kind::kProtocol,
              fmt::format("the harness speaks protocol {}, kforge speaks {}",
                          j.contains("protocol") ? j["protocol"].dump() : "none",
                          kHarnessProtocolVersion)));
  }
  if (j.contains("harness") && j["harness"].is_string()) r.harness = j["harness"];
  if (j.contains("environment") && j["environment"].is_object()) {
    r.environment_json = j["environment"].dump();
  }
  if (j.contains("observed_isolation") && j["observed_isolation"].is_object()) {
    r.observed_isolation_json = j["observed_isolation"].dump();
  }
  hello_done_ = true;
  return r;
}

HarnessResult<LoadReply> HarnessSession::Load(const LoadRequest& request) {
  json candidate = {{"kind", request.kind}};
  if (!request.artifact.empty()) candidate["artifact"] = request.artifact.string();
  if (!request.source_file.empty()) candidate["source_file"] = request.source_file.string();
  if (!request.backend.empty()) candidate["backend"] = request.backend;
  if (!request.task_file.empty()) {
    candidate["task_file"] = request.task_file.string();
    candidate["init_seed"] = request.init_seed;
    json overrides = request.overrides_json.empty()
                         ? json::object()
                         : json::parse(request.overrides_json, nullptr, false);
    candidate["overrides"] = overrides.is_object() ? overrides : json::object();
  }
  if (!request.opencl_platform.empty()) candidate["opencl_platform"] = request.opencl_platform;
  if (!request.variant.empty()) candidate["variant"] = request.variant;
  auto x = Command("load", json{{"command", "load"},
                                {"candidate", candidate},
                                {"state", DescsJson(request.state)},
                                {"stream_handle", request.stream_handle.empty()
                                                      ? std::string("none")
                                                      : request.stream_handle}}
                               .dump());
  if (!x) return std::unexpected(x.error());
  LoadReply r;
  r.parent_seconds = x->parent_seconds;
  json extra = x->reply;
  extra.erase("ok");
  extra.erase("id");
  r.result_fields_json = extra.dump();
  return r;
}

HarnessResult<std::vector<HostTensor>> HarnessSession::CopyFrozen(
    const std::vector<ArenaTensor>& tensors, double* seconds) {
  const auto start = Clock::now();
  if (auto s = freezer_->Freeze(start + std::chrono::seconds(10)); !s) {
    (void)freezer_->Thaw();
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kInfra;
    p.message = "cannot freeze the harness: " + s.error().message;
    return std::unexpected(p);
  }
  std::vector<HostTensor> copies;
  copies.reserve(tensors.size());
  for (const auto& t : tensors) {
    auto bytes = arena_->Bytes(t.region);
    copies.push_back(HostTensor{t.spec, std::vector<std::byte>(bytes.begin(), bytes.end())});
  }
  if (auto s = freezer_->Thaw(); !s) {
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kInfra;
    p.message = "cannot thaw the harness: " + s.error().message;
    return std::unexpected(p);
  }
  const double took = SecondsBetween(start, Clock::now());
  max_freeze_seconds_ = std::max(max_freeze_seconds_, took);
  if (seconds != nullptr) *seconds = took;
  return copies;
}

HarnessResult<std::vector<HostTensor>> HarnessSession::FreezeAndCopy(
    const std::vector<ArenaTensor>& tensors) {
  if (ended_) {
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kInfra;
    p.message = "the harness session has ended";
    return std::unexpected(p);
  }
  return CopyFrozen(tensors, nullptr);
}

HarnessResult<CallReply> HarnessSession::Call(const CallRequest& request) {
  std::vector<ArenaTensor> after;
  if (!request.inputs_after.empty() && request.inputs_after.size() != request.inputs.size()) {
    HarnessProblem p;
    p.kind = HarnessProblem::Kind::kInfra;
    p.message = "Call: one inputs_after region per input";
    return std::unexpected(p);
  }
  json regions = json::array();
  for (std::size_t i = 0; i < request.inputs_after.size(); ++i) {
    regions.push_back(RegionJson(request.inputs_after[i]));
    after.push_back(ArenaTensor{request.inputs[i].spec, request.inputs_after[i]});
  }
  // The parent poisons the output regions: whatever the child leaves unwritten reads as NaN
  // (integers: 0x5A bytes), never as a previous call's answer.
  for (const auto& o : request.outputs) {
    auto bytes = arena_->Bytes(o.region);
    const bool floating = o.spec.dtype.starts_with("float") || o.spec.dtype == "bfloat16";
    std::memset(bytes.data(), floating ? 0xFF : 0x5A, bytes.size());
  }
  auto x = Command("call", json{{"command", "call"},
                                {"inputs", DescsJson(request.inputs)},
                                {"outputs", DescsJson(request.outputs)},
                                {"inputs_after", regions},
                                {"reuse", request.reuse},
                                {"profile", request.profile}}
                               .dump());
  if (!x) return std::unexpected(x.error());
  CallReply r;
  r.parent_seconds = x->parent_seconds;
  std::vector<ArenaTensor> wanted = request.outputs;
  wanted.insert(wanted.end(), after.begin(), after.end());
  auto copies = CopyFrozen(wanted, &r.freeze_seconds);
  if (!copies) return std::unexpected(copies.error());
  r.outputs.assign(std::make_move_iterator(copies->begin()),
                   std::make_move_iterator(copies->begin() +
                                           static_cast<std::ptrdiff_t>(request.outputs.size())));
  r.inputs_after.assign(
      std::make_move_iterator(copies->begin() + static_cast<std::ptrdiff_t>(request.outputs.size())),
      std::make_move_iterator(copies->end()));
  const json& j = x->reply;
  r.findings = Findings(j);
  if (j.contains("problems") && j["problems"].is_array()) {
    for (const auto& p : j["problems"]) {
      if (p.is_string() && r.problems.size() < 16) r.problems.push_back(p.get<std::string>().substr(0, 500));
    }
  }
  if (j.contains("output_descs") && j["output_descs"].is_array()) {
    for (const auto& d : j["output_descs"]) {
      if (!d.is_object() || !d.contains("dtype") || !d["dtype"].is_string() ||
          !d.contains("shape") || !d["shape"].is_array()) {
        return std::unexpected(Ended(HarnessProblem::Kind::kProtocol,
                                     "the reply to `call` has a malformed output_descs entry"));
      }
      TensorSpec spec;
      spec.dtype = d["dtype"].get<std::string>();
      for (const auto& n : d["shape"]) {
        if (!n.is_number_integer()) {
          return std::unexpected(Ended(HarnessProblem::Kind::kProtocol,
                                       "the reply to `call` has a non-integer output dimension"));
        }
        spec.shape.push_back(n.get<std::int64_t>());
      }
      r.output_descs.push_back(std::move(spec));
    }
  }
  return r;
}

HarnessResult<void> HarnessSession::PrepareTiming(const PrepareTimingRequest& request) {
  json sets = json::array();
  json outputs = json::array();
  for (const auto& set : request.sets) {
    sets.push_back({{"inputs", DescsJson(set.inputs)}});
    outputs.push_back(DescsJson(set.outputs));
  }
  auto x = Command("prepare_timing", json{{"command", "prepare_timing"},
                                          {"sets", sets},
                                          {"outputs", outputs},
                                          {"clock", request.clock}}
                                         .dump());
  if (!x) return std::unexpected(x.error());
  return {};
}

HarnessResult<SampleReply> HarnessSession::Sample(const SampleRequest& request) {
  json cmd = {{"command", "sample"}, {"set", request.set}, {"mode", request.mode}};
  if (request.spin_s > 0) cmd["spin_s"] = request.spin_s;
  if (request.repeat > 1) cmd["repeat"] = request.repeat;
  auto x = Command("sample", cmd.dump());
  if (!x) return std::unexpected(x.error());
  SampleReply r;
  r.parent_seconds = x->parent_seconds;
  const auto seconds = Number(x->reply, "seconds");
  if (!seconds || !(*seconds >= 0) || *seconds > 3600) {
    return std::unexpected(Ended(HarnessProblem::Kind::kProtocol,
                                 "the reply to `sample` lacks a plausible \"seconds\""));
  }
  r.seconds = *seconds;
  r.enqueue_s = Number(x->reply, "enqueue_s").value_or(0);
  r.sm_mhz = static_cast<int>(Number(x->reply, "sm_mhz").value_or(0));
  r.findings = Findings(x->reply);
  return r;
}

HarnessResult<GraphReply> HarnessSession::Graph(int set, int calls) {
  auto x = Command("graph", json{{"command", "graph"}, {"set", set}, {"calls", calls}}.dump());
  if (!x) return std::unexpected(x.error());
  GraphReply r;
  r.parent_seconds = x->parent_seconds;
  const auto per_call = Number(x->reply, "seconds_per_call");
  if (!per_call || !(*per_call >= 0)) {
    return std::unexpected(Ended(HarnessProblem::Kind::kProtocol,
                                 "the reply to `graph` lacks \"seconds_per_call\""));
  }
  r.seconds_per_call = *per_call;
  r.findings = Findings(x->reply);
  return r;
}

}  // namespace kforge
