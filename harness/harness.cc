#include "harness.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

#include "isolation.h"
#include "no_fork.h"

namespace kforge_harness {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxMessage = 64 * 1024;
constexpr std::size_t kMaxDiagnostics = 4000;

const std::map<std::string, std::pair<std::int32_t, int>>& Dtypes() {
  static const std::map<std::string, std::pair<std::int32_t, int>> table = {
      {"float32", {kforge_float32, 4}}, {"float16", {kforge_float16, 2}},
      {"bfloat16", {kforge_bfloat16, 2}}, {"float64", {kforge_float64, 8}},
      {"int32", {kforge_int32, 4}},     {"int64", {kforge_int64, 8}},
      {"int8", {kforge_int8, 1}},       {"uint8", {kforge_uint8, 1}},
      {"bool", {kforge_bool, 1}},       {"int16", {kforge_int16, 2}}};
  return table;
}

json Fail(const Failure& f) {
  std::string d = f.diagnostics;
  if (d.size() > kMaxDiagnostics) d = d.substr(0, kMaxDiagnostics) + " [...]";
  return {{"ok", false}, {"status", f.status}, {"diagnostics", d}};
}

json Fail(const std::string& status, const std::string& diagnostics) {
  return Fail(Failure{status, diagnostics});
}

}  // namespace

bool Desc::floating() const {
  return dtype == kforge_float32 || dtype == kforge_float16 || dtype == kforge_bfloat16 ||
         dtype == kforge_float64;
}

Harness::Harness(std::unique_ptr<Device> device) : device_(std::move(device)) {}

Harness::~Harness() {
  // Buffers stay until the process ends; the device context goes with it.
}

int Harness::Run() {
  std::string buffer(kMaxMessage + 1, '\0');
  while (true) {
    const ssize_t n = ::recv(kChannelFd, buffer.data(), buffer.size(), MSG_TRUNC);
    if (n == 0) return 0;  // the parent closed the channel
    if (n < 0) {
      if (errno == EINTR) continue;
      return 2;
    }
    json reply;
    if (static_cast<std::size_t>(n) > kMaxMessage) {
      reply = Fail("infra_error", "a command over the 64 KiB limit");
    } else {
      json command = json::parse(buffer.data(), buffer.data() + n, nullptr, false);
      if (command.is_object() && command.value("command", "") == "quit") return 0;
      reply = Handle(command);
      // The reply echoes the command's id (runner/HARNESS.md "Commands").
      if (command.is_object() && command.contains("id")) reply["id"] = command["id"];
    }
    const std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    if (::send(kChannelFd, text.data(), text.size(), MSG_NOSIGNAL) < 0) return 2;
  }
}

json Harness::Handle(const json& command) {
  if (!command.is_object() || !command.contains("command") || !command["command"].is_string()) {
    return Fail("infra_error", "a command is a JSON object with a string \"command\"");
  }
  const std::string name = command["command"].get<std::string>();
  try {
    if (name == "hello") return Hello(command);
    if (!hello_) return Fail("infra_error", "`" + name + "` before `hello`");
    if (name == "load") return Load(command);
    if (name == "call") return Call(command);
    if (name == "prepare_timing") return PrepareTiming(command);
    if (name == "sample") return Sample(command);
    if (name == "graph") return Graph(command);
    return Fail("infra_error", "unknown command `" + name + "`");
  } catch (const std::exception& e) {
    return Fail("infra_error", "malformed `" + name + "`: " + e.what());
  }
}

json Harness::Hello(const json& c) {
  if (hello_) return Fail("infra_error", "a second `hello`");
  if (c.value("protocol", 0) != kProtocol) {
    return Fail("infra_error", "this harness speaks protocol " + std::to_string(kProtocol));
  }
  arena_bytes_ = c.at("arena_bytes").get<std::uint64_t>();
  if (arena_bytes_ > 0) {
    void* base = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, kArenaFd, 0);
    if (base == MAP_FAILED) {
      return Fail("infra_error", std::string("cannot map the arena: ") + std::strerror(errno));
    }
    arena_ = static_cast<std::byte*>(base);
  }
  Failure failure;
  if (!device_->Init(c.at("device").get<std::string>(), &failure)) return Fail(failure);
  hello_ = true;
  json env = json::parse(device_->EnvironmentJson(), nullptr, false);
  if (!env.is_object()) env = json::object();
  env["harness_device"] = device_->kind();
  return {{"ok", true},
          {"harness", "kforge-harness " + device_->kind()},
          {"protocol", kProtocol},
          {"environment", env},
          {"observed_isolation", json::parse(ObserveIsolationJson())}};
}

std::byte* Harness::ArenaAt(std::uint64_t offset, std::uint64_t bytes) const {
  if (offset > arena_bytes_ || bytes > arena_bytes_ - offset) {
    throw std::runtime_error("region [" + std::to_string(offset) + ", +" +
                             std::to_string(bytes) + ") is outside the arena of " +
                             std::to_string(arena_bytes_) + " bytes");
  }
  return arena_ + offset;
}

Desc Harness::ParseDesc(const json& j) const {
  Desc d;
  d.dtype_name = j.at("dtype").get<std::string>();
  const auto it = Dtypes().find(d.dtype_name);
  if (it == Dtypes().end()) throw std::runtime_error("unknown dtype " + d.dtype_name);
  d.dtype = it->second.first;
  d.shape = j.at("shape").get<std::vector<std::int64_t>>();
  if (d.shape.size() > KFORGE_MAX_DIMS) throw std::runtime_error("more than 8 dimensions");
  std::uint64_t n = 1;
  for (auto s : d.shape) {
    if (s < 0) throw std::runtime_error("a negative dimension");
    n *= static_cast<std::uint64_t>(s);
  }
  d.offset = j.at("region").at("offset").get<std::uint64_t>();
  d.bytes = j.at("region").at("bytes").get<std::uint64_t>();
  if (d.offset % 64 != 0) throw std::runtime_error("a region's offset is not 64-byte aligned");
  if (d.bytes != n * static_cast<std::uint64_t>(it->second.second)) {
    throw std::runtime_error("a region's size does not match its dtype and shape");
  }
  ArenaAt(d.offset, d.bytes);  // throws when outside
  d.scalar = j.contains("scalar") && j["scalar"].is_string() && !j["scalar"].get<std::string>().empty();
  return d;
}

bool Harness::NewBuffer(const Desc& desc, bool fill_from_arena, Buffer* out, Failure* failure) {
  out->desc = desc;
  out->host = desc.scalar;
  const std::size_t bytes = std::max<std::size_t>(desc.bytes, 1);
  out->data = out->host ? std::aligned_alloc(64, 64 + (bytes + 63) / 64 * 64)
                        : device_->Alloc(bytes);
  if (out->data == nullptr) {
    *failure = {"out_of_memory", "cannot allocate " + std::to_string(desc.bytes) +
                                     " bytes of device memory for a tensor"};
    return false;
  }
  all_.push_back(*out);
  if (!fill_from_arena) return true;
  const std::byte* src = ArenaAt(desc.offset, desc.bytes);
  if (out->host) {
    std::memcpy(out->data, src, desc.bytes);
    return true;
  }
  return device_->CopyToDevice(out->data, src, desc.bytes, failure);
}

bool Harness::Poison(Buffer& b, Failure* failure) {
  const std::uint8_t byte = b.desc.floating() ? 0xFF : 0x5A;  // NaN; an integer pattern
  if (b.host) {
    std::memset(b.data, byte, b.desc.bytes);
    return true;
  }
  return device_->Fill(b.data, byte, b.desc.bytes, failure);
}

bool Harness::Restore(Buffer& dst, const Buffer& src, Failure* failure) {
  if (dst.host) {
    std::memcpy(dst.data, src.data, dst.desc.bytes);
    return true;
  }
  return device_->CopyOnDevice(dst.data, src.data, dst.desc.bytes, failure);
}

bool Harness::CopyOut(const Buffer& b, std::uint64_t offset, Failure* failure) {
  std::byte* dst = ArenaAt(offset, b.desc.bytes);
  if (b.host) {
    std::memcpy(dst, b.data, b.desc.bytes);
    return true;
  }
  return device_->CopyToHost(dst, b.data, b.desc.bytes, failure);
}

std::vector<kforge_tensor> Harness::Abi(const std::vector<Buffer>& buffers) {
  std::vector<kforge_tensor> out(std::max<std::size_t>(buffers.size(), 1));
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    kforge_tensor& t = out[i];
    std::memset(&t, 0, sizeof(t));
    const Desc& d = buffers[i].desc;
    t.data = buffers[i].data;
    t.dtype = d.dtype;
    t.ndim = static_cast<std::int32_t>(d.shape.size());
    std::int64_t stride = 1;
    for (int k = t.ndim - 1; k >= 0; --k) {
      t.shape[k] = d.shape[static_cast<std::size_t>(k)];
      t.strides[k] = stride;
      stride *= d.shape[static_cast<std::size_t>(k)];
    }
  }
  return out;
}

std::vector<Buffer> Harness::WithState(const std::vector<Buffer>& inputs) const {
  std::vector<Buffer> all = inputs;
  all.insert(all.end(), state_.begin(), state_.end());
  return all;
}

int Harness::Forward(std::vector<kforge_tensor>& inputs, std::vector<kforge_tensor>& outputs) {
  return forward_(inputs.data(), static_cast<int>(inputs.size()), outputs.data(),
                  static_cast<int>(outputs.size()), stream_);
}

json Harness::Load(const json& c) {
  if (library_ != nullptr) return Fail("infra_error", "a second `load` after a candidate's");
  const json& candidate = c.at("candidate");
  if (!candidate.is_object() || candidate.value("kind", std::string()) != "native") {
    return Fail("infra_error", "kforge-harness serves candidates of kind native only");
  }
  const std::string path = candidate.at("artifact").get<std::string>();
  Failure failure;
  const std::string kind = c.value("stream_handle", std::string("none"));
  if (!device_->StreamHandle(kind, &stream_, &failure)) return Fail(failure);
  // The state tensors, in the reference's order: after the inputs of every call.
  state_.clear();
  for (const auto& j : c.value("state", json::array())) {
    Buffer b;
    if (!NewBuffer(ParseDesc(j), true, &b, &failure)) return Fail(failure);
    state_.push_back(b);
  }
  if (!device_->Synchronize(&failure)) return Fail(failure);
  std::string error;
  // Before any candidate code runs (its constructors run inside dlopen).
  if (!ForbidNewProcesses(&error)) return Fail("infra_error", "cannot forbid fork: " + error);
  library_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = ::dlerror();
    return Fail("compile_error", std::string("loading the candidate: cannot load its shared "
                                             "object: ") + (why ? why : "?"));
  }
  forward_ = reinterpret_cast<ForwardFn>(::dlsym(library_, "kforge_forward"));
  if (forward_ == nullptr) {
    return Fail("compile_error",
                "loading the candidate: the shared object does not export kforge_forward "
                "(declare it extern \"C\")");
  }
  return {{"ok", true}};
}

json Harness::Call(const json& c) {
  if (forward_ == nullptr) return Fail("infra_error", "`call` before `load`");
  std::vector<Desc> in_descs, out_descs;
  for (const auto& j : c.at("inputs")) in_descs.push_back(ParseDesc(j));
  for (const auto& j : c.at("outputs")) out_descs.push_back(ParseDesc(j));
  std::vector<std::uint64_t> after;
  for (const auto& r : c.value("inputs_after", json::array())) {
    after.push_back(r.at("offset").get<std::uint64_t>());
  }
  if (!after.empty() && after.size() != in_descs.size()) {
    return Fail("infra_error", "one inputs_after region per input");
  }
  Failure failure;
  const bool reuse = c.value("reuse", false);
  std::vector<Buffer> inputs, outputs;
  if (reuse) {
    if (last_inputs_.size() != in_descs.size() || last_outputs_.size() != out_descs.size()) {
      return Fail("infra_error", "`reuse` with another layout than the previous call");
    }
    inputs = last_inputs_;
    outputs = last_outputs_;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].desc.bytes != in_descs[i].bytes) return Fail("infra_error", "`reuse`: sizes differ");
      const std::byte* src = ArenaAt(in_descs[i].offset, in_descs[i].bytes);
      const bool ok = inputs[i].host
                          ? (std::memcpy(inputs[i].data, src, in_descs[i].bytes), true)
                          : device_->CopyToDevice(inputs[i].data, src, in_descs[i].bytes, &failure);
      if (!ok) return Fail(failure);
      inputs[i].desc = in_descs[i];
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) outputs[i].desc = out_descs[i];
  } else {
    for (const auto& d : in_descs) {
      Buffer b;
      if (!NewBuffer(d, true, &b, &failure)) return Fail(failure);
      inputs.push_back(b);
    }
    for (const auto& d : out_descs) {
      Buffer b;
      if (!NewBuffer(d, false, &b, &failure)) return Fail(failure);
      outputs.push_back(b);
    }
  }
  for (auto& o : outputs) {
    if (!Poison(o, &failure)) return Fail(failure);
  }
  if (!device_->Synchronize(&failure)) return Fail(failure);
  auto in_abi = Abi(WithState(inputs));
  auto out_abi = Abi(outputs);
  // `profile`: the call inside an external profiler's capture range (the device-time check).
  const bool profile = c.value("profile", false);
  if (profile && !device_->ProfileRange(true, &failure)) return Fail(failure);
  const int status = Forward(in_abi, out_abi);
  if (!device_->Synchronize(&failure)) return Fail("runtime_error", "call: " + failure.diagnostics);
  if (profile && !device_->ProfileRange(false, &failure)) return Fail(failure);
  if (status != 0) {
    return Fail("runtime_error", "call: kforge_forward returned " + std::to_string(status));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!CopyOut(outputs[i], out_descs[i].offset, &failure)) return Fail(failure);
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (!CopyOut(inputs[i], after[i], &failure)) return Fail(failure);
  }
  last_inputs_ = inputs;
  last_outputs_ = outputs;
  return {{"ok", true}};
}

json Harness::PrepareTiming(const json& c) {
  const json& sets = c.at("sets");
  const json& outputs = c.at("outputs");
  if (!sets.is_array() || !outputs.is_array() || sets.size() != outputs.size() || sets.empty()) {
    return Fail("infra_error", "prepare_timing: one outputs list per set, at least one set");
  }
  Failure failure;
  sets_.clear();
  for (std::size_t k = 0; k < sets.size(); ++k) {
    TimingSet set;
    for (const auto& j : sets[k].at("inputs")) {
      const Desc d = ParseDesc(j);
      Buffer pristine, working;
      if (!NewBuffer(d, true, &pristine, &failure) || !NewBuffer(d, false, &working, &failure)) {
        return Fail(failure);
      }
      set.pristine.push_back(pristine);
      set.inputs.push_back(working);
    }
    for (const auto& j : outputs[k]) {
      const Desc d = ParseDesc(j);
      Buffer out;
      if (!NewBuffer(d, false, &out, &failure)) return Fail(failure);
      set.outputs.push_back(out);
      set.output_offsets.push_back(d.offset);
    }
    sets_.push_back(std::move(set));
  }
  clock_ = c.value("clock", std::string());
  if (!device_->Synchronize(&failure)) return Fail(failure);
  return {{"ok", true}};
}

json Harness::Sample(const json& c) {
  const int k = c.at("set").get<int>();
  if (k < 0 || static_cast<std::size_t>(k) >= sets_.size()) {
    return Fail("infra_error", "sample: no timing set " + std::to_string(k));
  }
  TimingSet& set = sets_[static_cast<std::size_t>(k)];
  Failure failure;
  for (std::size_t i = 0; i < set.inputs.size(); ++i) {
    if (!Restore(set.inputs[i], set.pristine[i], &failure)) return Fail(failure);
  }
  for (auto& o : set.outputs) {
    if (!Poison(o, &failure)) return Fail(failure);
  }
  if (!device_->Synchronize(&failure)) return Fail(failure);
  auto in_abi = Abi(WithState(set.inputs));
  auto out_abi = Abi(set.outputs);
  // Before `load` the call is empty: the parent learns what the protocol itself costs.
  // `repeat` calls back to back in one sample (a batch for the parent's clock check): inputs
  // restored and outputs poisoned once before the batch; the reply is the time per call.
  const int repeat = c.value("repeat", 1);
  if (repeat < 1 || repeat > 100000) return Fail("infra_error", "sample: repeat 1..100000");
  CallFn call = forward_ == nullptr ? CallFn([] { return 0; }) : CallFn([&] {
    int status = 0;
    for (int r = 0; r < repeat && status == 0; ++r) status = Forward(in_abi, out_abi);
    return status;
  });
  const std::string mode = c.value("mode", clock_);
  SampleTime t;
  if (!device_->TimeCall(mode, c.value("spin_s", 0.0), call, &t, &failure)) {
    failure.diagnostics = "sample: " + failure.diagnostics;
    return Fail(failure);
  }
  t.seconds /= repeat;
  if (!device_->Synchronize(&failure)) return Fail("runtime_error", "sample: " + failure.diagnostics);
  for (std::size_t i = 0; i < set.outputs.size(); ++i) {
    if (!CopyOut(set.outputs[i], set.output_offsets[i], &failure)) return Fail(failure);
  }
  return {{"ok", true}, {"seconds", t.seconds}, {"enqueue_s", t.enqueue_s}, {"sm_mhz", t.sm_mhz}};
}

json Harness::Graph(const json& c) {
  const int k = c.at("set").get<int>();
  const int calls = c.at("calls").get<int>();
  if (k < 0 || static_cast<std::size_t>(k) >= sets_.size() || calls < 1 || calls > 100000) {
    return Fail("infra_error", "graph: a known set and 1..100000 calls");
  }
  if (forward_ == nullptr) return Fail("infra_error", "`graph` before `load`");
  TimingSet& set = sets_[static_cast<std::size_t>(k)];
  auto in_abi = Abi(WithState(set.inputs));
  auto out_abi = Abi(set.outputs);
  Failure failure;
  double per_call = 0;
  if (!device_->GraphPerCall(calls, [&] { return Forward(in_abi, out_abi); }, &per_call,
                             &failure)) {
    failure.diagnostics = "graph: " + failure.diagnostics;
    return Fail(failure);
  }
  return {{"ok", true}, {"seconds_per_call", per_call}};
}

}  // namespace kforge_harness
