#include "kforge/eval/device_time_check.h"

#include "harness_timing.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "file_modes.h"
#include "kforge/core/files.h"
#include "kforge/eval/harness_binary.h"
#include "kforge/eval/harness_session.h"
#include "kforge/target/probe.h"
#include "native_harness.h"
#include "runner_process.h"
#include "runner_protocol.h"
#include "work_slot.h"

namespace kforge {
namespace {

using namespace file_modes;  // NOLINT(google-build-using-namespace): the modes read as words

namespace fs = std::filesystem;

DeviceTimeCheck Skipped(double reported, std::string why) {
  DeviceTimeCheck c;
  c.outcome = DeviceTimeCheck::Outcome::kSkipped;
  c.reported_s = reported;
  c.reason = std::move(why);
  return c;
}

DeviceTimeCheck Failed(double reported, std::string why) {
  DeviceTimeCheck c = Skipped(reported, std::move(why));
  c.outcome = DeviceTimeCheck::Outcome::kFailed;
  return c;
}

std::string NcuPath() {
  std::string ncu = FindProgram("ncu");
  if (ncu.empty() && ::access("/usr/local/cuda/bin/ncu", X_OK) == 0) ncu = "/usr/local/cuda/bin/ncu";
  return ncu;
}

// One CSV line's fields (double quotes, "" inside them).
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  out.push_back(field);
  return out;
}

Status ReadInto(const fs::path& file, std::span<std::byte> out) {
  auto text = ReadFile(file);
  if (!text) return std::unexpected(text.error());
  if (text->size() != out.size()) return IoError(fmt::format("{} has the wrong size", file.string()));
  std::memcpy(out.data(), text->data(), out.size());
  return Ok();
}

TensorSpec SpecOf(const TensorFile& t) {
  return TensorSpec{.name = t.name, .dtype = t.dtype, .shape = t.shape, .scalar = t.scalar, .key = t.key};
}

}  // namespace

std::string_view DeviceTimeCheck::OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kAgree:
      return "agree";
    case Outcome::kDisagree:
      return "disagree";
    case Outcome::kSkipped:
      return "skipped";
    case Outcome::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string DeviceTimeCheck::ToJson() const {
  return nlohmann::json{{"outcome", OutcomeName(outcome)},
                        {"reason", reason},
                        {"reported_s", reported_s},
                        {"device_s", device_s},
                        {"calls", calls},
                        {"kernels_per_call", kernels_per_call},
                        {"tool", tool},
                        {"agreement", kDeviceTimeAgreement},
                        {"slack_s", kDeviceTimeSlackS}}
      .dump();
}

std::string DeviceTimeCheck::Describe() const {
  if (outcome == Outcome::kSkipped || outcome == Outcome::kFailed) {
    return fmt::format("device-time check {}: {}", OutcomeName(outcome), reason);
  }
  return fmt::format("device-time check {}: {} per call by {} ({} kernel(s), {} calls) against {} "
                     "reported",
                     OutcomeName(outcome), FormatSeconds(device_s), tool, kernels_per_call, calls,
                     FormatSeconds(reported_s));
}

std::vector<double> ParseNcuDurations(const std::string& csv) {
  std::vector<double> out;
  std::istringstream in(csv);
  std::string line;
  std::vector<std::string> header;
  int name_col = -1, unit_col = -1, value_col = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;  // ncu's own messages start with ==PROF==
    auto fields = CsvFields(line);
    if (header.empty()) {
      header = fields;
      for (std::size_t i = 0; i < header.size(); ++i) {
        if (header[i] == "Metric Name") name_col = static_cast<int>(i);
        if (header[i] == "Metric Unit") unit_col = static_cast<int>(i);
        if (header[i] == "Metric Value") value_col = static_cast<int>(i);
      }
      continue;
    }
    if (name_col < 0 || value_col < 0 || static_cast<int>(fields.size()) <= value_col) continue;
    if (fields[static_cast<std::size_t>(name_col)] != "gpu__time_duration.sum") continue;
    std::string value = fields[static_cast<std::size_t>(value_col)];
    std::erase(value, ',');
    double v = std::strtod(value.c_str(), nullptr);
    const std::string unit = unit_col >= 0 ? fields[static_cast<std::size_t>(unit_col)] : "ns";
    if (unit == "ns" || unit == "nsecond") v *= 1e-9;
    else if (unit == "us" || unit == "usecond") v *= 1e-6;
    else if (unit == "ms" || unit == "msecond") v *= 1e-3;
    else if (unit != "s" && unit != "second") v *= 1e-9;
    out.push_back(v);
  }
  return out;
}

DeviceTimeCheck CheckDeviceTime(CompileService& compiler, const Task& task, const Backend& backend,
                                const fs::path& candidate, double reported_median_s,
                                const DeviceTimeCheckOptions& options) {
  const auto native = NativeHarnessOf(backend);
  auto kind = backend.KindOf(candidate);
  if (!native || native->adapter != "cuda" || !kind || *kind != CandidateKind::kNative) {
    return Skipped(reported_median_s,
                   fmt::format("no out-of-process device timer for {} candidates of {} (Nsight "
                               "Compute times native CUDA kernels)",
                               kind ? CandidateKindName(*kind) : "these",
                               backend.target().ToString()));
  }
  const std::string ncu = NcuPath();
  if (ncu.empty()) {
    return Skipped(reported_median_s, "Nsight Compute (ncu) is not installed here");
  }
  auto binary = HarnessBinary(native->adapter);
  if (!binary) return Skipped(reported_median_s, binary.error().message);
  const fs::path work_root = options.work_root.empty() ? DefaultWorkRoot() : options.work_root;
  auto runner_dir = InstallRunner(work_root);
  if (!runner_dir) return Failed(reported_median_s, runner_dir.error().message);
  SlotConfig config{.work_root = work_root,
                    .runner_dir = *runner_dir,
                    .device = backend.RunnerDevice(),
                    .uses_accelerator = backend.UsesAccelerator(),
                    .memory_limit_bytes = 8ull << 30,
                    .process_limit = 1024,
                    .tmp_bytes = 1ull << 30,
                    .shm_bytes = 1ull << 30,
                    .scratch_quota_bytes = 1ull << 30,
                    .open_files = 4096,
                    .keep = false,
                    .max_wait = std::chrono::seconds(600),
                    .harness = *binary,
                    .warm_candidate = false,
                    .sandbox = nullptr};
  auto slot = WorkSlot::Prepare(config);
  if (!slot) return Failed(reported_median_s, slot.error().message);
  WorkSlot& s = **slot;
  auto source = ReadFile(candidate);
  if (!source) return Failed(reported_median_s, source.error().message);
  const fs::path candidate_file = s.work() / ("candidate" + candidate.extension().string());
  if (!WriteFile(s.task_file(), task.source) || !WriteFile(candidate_file, *source)) {
    return Failed(reported_median_s, "cannot write the check's files");
  }
  std::error_code ec;
  fs::permissions(s.task_file(), kReadableFile, ec);
  fs::permissions(candidate_file, kReadableFile, ec);
  auto compiled = compiler.Submit(backend, candidate_file);

  // A fresh input set, drawn for this check alone.
  std::random_device device;
  std::mt19937_64 seeds(options.seed.value_or((static_cast<std::uint64_t>(device()) << 32) ^ device()));
  ReferenceJob job;
  job.task_file = s.task_file();
  job.task = &task;
  job.device = backend.RunnerDevice();
  job.init_seed = seeds() >> 1;
  job.trials.push_back({seeds() >> 1, "task"});
  job.tolerance = ToleranceOf(task.policy);
  job.inputs_dir = s.inputs_dir();
  job.outputs_dir = s.outputs_dir();
  auto ref_run = s.reference().Run(ReferenceJobJson(job), options.timeout, {});
  if (!ref_run || ref_run->process.result_text.empty()) {
    return Failed(reported_median_s, "the reference did not run for the check");
  }
  auto reference =
      ParseReferenceResult(ref_run->process.result_text, s.inputs_dir(), s.outputs_dir());
  if (!reference || reference->status != "ok" || reference->trials.empty()) {
    return Failed(reported_median_s, "the reference failed for the check");
  }
  s.SealReference();
  auto outcome = compiled.get();
  if (!outcome || !outcome->ok) return Failed(reported_median_s, "the candidate did not compile");
  const fs::path artifact = s.bin_dir() / "candidate.so";
  fs::copy_file(outcome->artifact, artifact, fs::copy_options::overwrite_existing, ec);
  fs::permissions(artifact, kReadable, ec);

  // ncu outside the sandbox, its report in ref/ (hidden from the sandbox, KForge's user only).
  const fs::path report = s.ref_dir() / "ncu.csv";
  HarnessLaunch launch;
  launch.outer_wrapper = {ncu,
                          "--clock-control", "none",
                          "--profile-from-start", "off",
                          "--target-processes", "all",
                          "--metrics", "gpu__time_duration.sum",
                          "--csv", "--print-units", "base",
                          "--log-file", report.string()};
  launch.argv = {binary->string()};
  launch.env = HarnessEnvironment(s.cand_dir());
  launch.policy.scratch_dir = s.cand_dir();
  launch.policy.visible_paths = {s.bin_dir()};
  launch.policy.hidden_paths = {s.ref_dir()};
  launch.policy.drop_privileges = !options.keep_privileges;
  if (options.keep_privileges && ::geteuid() == 0) {
    [[maybe_unused]] const int rc = ::chown(s.cand_dir().c_str(), 0, 0);
  }
  launch.max_wait = options.timeout;
  auto session = HarnessSession::Start(launch);
  if (!session) return Failed(reported_median_s, session.error().message);
  HarnessSession& h = **session;
  h.set_timeout(options.timeout);
  const auto& trial = reference->trials[0];
  std::uint64_t need = 1 << 16;
  const std::vector<TensorFile>* lists[] = {&trial.inputs, &trial.outputs, &reference->state};
  for (const auto* list : lists) {
    for (const auto& t : *list) need += SpecOf(t).bytes() + kArenaAlignment;
  }
  auto hello = h.Hello({.device = backend.RunnerDevice(), .arena_bytes = need});
  if (!hello) return Failed(reported_median_s, "the harness did not start: " + hello.error().message);
  std::vector<ArenaTensor> state, inputs, outputs;
  auto place = [&](const std::vector<TensorFile>& files, std::vector<ArenaTensor>& out, bool fill) {
    for (const auto& f : files) {
      auto t = h.Place(SpecOf(f));
      if (!t) return false;
      if (fill && !ReadInto(f.file, h.Bytes(*t))) return false;
      out.push_back(*t);
    }
    return true;
  };
  if (!place(reference->state, state, true) || !place(trial.inputs, inputs, true) ||
      !place(trial.outputs, outputs, false)) {
    return Failed(reported_median_s, "the arena has no room for the check's tensors");
  }
  LoadRequest load;
  load.kind = "native";
  load.artifact = artifact;
  load.state = state;
  load.stream_handle = native->stream_handle;
  if (auto loaded = h.Load(load); !loaded) {
    return Failed(reported_median_s, "the candidate did not load: " + loaded.error().diagnostics);
  }
  const int calls = std::max(options.calls, 1);
  // One warm-up call outside the capture range, then the profiled ones, each output compared.
  for (int i = 0; i <= calls; ++i) {
    auto r = h.Call({.inputs = inputs, .outputs = outputs, .inputs_after = {}, .reuse = false,
                     .profile = i > 0});
    if (!r) return Failed(reported_median_s, "a profiled call failed: " + r.error().message);
    for (std::size_t m = 0; m < trial.outputs.size() && m < r->outputs.size(); ++m) {
      const TensorFile* truth =
          m < trial.truth.size() && trial.truth[m] ? &*trial.truth[m] : nullptr;
      auto cmp = JudgeFrozenOutput(trial.outputs[m], truth, r->outputs[m], task.policy);
      if (!cmp || !cmp->ok) {
        DeviceTimeCheck c;
        c.outcome = DeviceTimeCheck::Outcome::kDisagree;
        c.reported_s = reported_median_s;
        c.reason = "a profiled call on the check's fresh inputs was wrong: " +
                   (cmp ? cmp->problem : cmp.error().message);
        return c;
      }
    }
  }
  session->reset();  // quit: ncu writes its report when the harness has ended
  auto csv = ReadFile(report);
  if (!csv) return Failed(reported_median_s, "ncu wrote no report: " + csv.error().message);
  const std::vector<double> kernels = ParseNcuDurations(*csv);
  if (kernels.empty() || kernels.size() % static_cast<std::size_t>(calls) != 0) {
    return Failed(reported_median_s,
                  fmt::format("ncu reported {} kernel launches for {} calls", kernels.size(), calls));
  }
  const std::size_t per_call = kernels.size() / static_cast<std::size_t>(calls);
  std::vector<double> totals;
  for (int i = 0; i < calls; ++i) {
    double sum = 0;
    for (std::size_t k = 0; k < per_call; ++k) sum += kernels[static_cast<std::size_t>(i) * per_call + k];
    totals.push_back(sum);
  }
  std::sort(totals.begin(), totals.end());
  DeviceTimeCheck c;
  c.reported_s = reported_median_s;
  c.device_s = totals[totals.size() / 2];
  c.calls = calls;
  c.kernels_per_call = static_cast<int>(per_call);
  c.tool = "ncu " + ProgramVersion(ncu, {"--version"});
  const double allowed = std::max(kDeviceTimeAgreement * c.device_s, kDeviceTimeSlackS);
  c.outcome = std::fabs(reported_median_s - c.device_s) <= allowed
                  ? DeviceTimeCheck::Outcome::kAgree
                  : DeviceTimeCheck::Outcome::kDisagree;
  if (c.outcome == DeviceTimeCheck::Outcome::kDisagree) {
    c.reason = fmt::format("reported {} but Nsight Compute measured {} per call (allowed: {})",
                           FormatSeconds(reported_median_s), FormatSeconds(c.device_s),
                           FormatSeconds(allowed));
  }
  return c;
}

}  // namespace kforge
