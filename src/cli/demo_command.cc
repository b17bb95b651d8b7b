#include "demo_command.h"
#include "exit_codes.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/files.h"
#include "kforge/eval/timing.h"
#include "kforge/store/run_store.h"
#include "run_command.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// examples/demo/demo.toml: what the demo replays.
struct DemoManifest {
  fs::path task;
  std::string target;
  std::string model;
  int iterations = 1;
  bool profile = true;
  bool expect_faster = true;  // the final kernel must beat the first correct one
  fs::path conversation;
};

Result<DemoManifest> LoadManifest(const fs::path& path) {
  toml::table table;
  try {
    table = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    return ParseError(fmt::format("{}: {}", path.string(), e.description()));
  }
  DemoManifest m;
  const fs::path dir = path.parent_path();
  auto text = [&](const char* key) { return table[key].value<std::string>(); };
  if (!text("task") || !text("target") || !text("model") || !text("conversation")) {
    return ParseError(fmt::format(
        "{}: needs task, target, model and conversation (strings) and iterations", path.string()));
  }
  m.task = dir / *text("task");
  m.target = *text("target");
  m.model = *text("model");
  m.conversation = dir / *text("conversation");
  m.iterations = table["iterations"].value_or(1);
  m.profile = table["profile"].value_or(true);
  m.expect_faster = table["expect_faster"].value_or(true);
  return m;
}

// Who answered the recorded conversation, from the cassette's header line.
std::string RecordingNote(const fs::path& cassette) {
  std::ifstream in(cassette);
  std::string header;
  std::getline(in, header);
  const auto j = nlohmann::json::parse(header, nullptr, false);
  if (!j.is_object()) return "";
  return j.value("note", std::string()) +
         (j.contains("created_at") ? fmt::format(" (recorded {})", j.value("created_at", "")) : "");
}

struct Step {
  std::int64_t iteration = 0;
  std::string pass;
  std::string status;
  std::optional<double> median_s;
};

std::optional<double> CandidateMedian(const std::string& verdict_json) {
  const auto v = nlohmann::json::parse(verdict_json, nullptr, false);
  if (!v.is_object() || !v.contains("timing") || !v["timing"].is_object()) return std::nullopt;
  const auto& t = v["timing"];
  if (!t.contains("candidate") || !t["candidate"].is_object()) return std::nullopt;
  const auto& c = t["candidate"];
  if (!c.contains("median_s") || !c["median_s"].is_number()) return std::nullopt;
  return c["median_s"].get<double>();
}

Result<std::vector<Step>> StepsOf(const fs::path& run_dir, const std::string& run_id) {
  auto store = store::RunStore::Open(run_dir);
  if (!store) return std::unexpected(store.error());
  auto candidates = (*store)->ListCandidates(run_id);
  auto evaluations = (*store)->ListEvaluations(run_id);
  if (!candidates) return std::unexpected(candidates.error());
  if (!evaluations) return std::unexpected(evaluations.error());
  std::vector<Step> steps;
  for (const auto& c : *candidates) {
    Step step{.iteration = c.iteration,
              .pass = std::string(store::ToString(c.pass_kind)),
              .status = "not evaluated",
              .median_s = std::nullopt};
    for (const auto& e : *evaluations) {
      if (e.candidate_id != c.id) continue;
      step.status = std::string(store::ToString(e.status));
      if (e.status == store::EvaluationStatus::kCorrect)
        step.median_s = CandidateMedian(e.verdict_json);
    }
    steps.push_back(std::move(step));
  }
  std::sort(steps.begin(), steps.end(),
            [](const Step& a, const Step& b) { return a.iteration < b.iteration; });
  return steps;
}

struct DemoArgs {
  std::string manifest;
  std::string runs_dir = "kforge-runs";
};

int RunDemo(const DemoArgs& args) {
  const fs::path manifest_path =
      args.manifest.empty() ? KforgeHome() / "examples/demo/demo.toml" : fs::path(args.manifest);
  auto manifest = LoadManifest(manifest_path);
  if (!manifest) {
    fmt::print(stderr, "kforge demo: {}\n", manifest.error().message);
    return 2;
  }
  fmt::print(
      "KForge demo: a recorded LLM conversation replayed through the real harness on {} —\n"
      "real compilation, real execution and real timing on this machine; only the model's\n"
      "answers come from the recording ({}).\n",
      manifest->target, manifest->conversation.string());
  if (std::string note = RecordingNote(manifest->conversation); !note.empty()) {
    fmt::print("Recording: {}\n", note);
  }
  fmt::print("\n");
  std::fflush(stdout);

  fs::path run_dir;
  std::string run_id;
  const int code = RunReplayed({.task = manifest->task.string(),
                                .target = manifest->target,
                                .model = manifest->model,
                                .cassette = manifest->conversation.string(),
                                .iterations = manifest->iterations,
                                .profile = manifest->profile,
                                .runs_dir = args.runs_dir},
                               &run_dir, &run_id);
  if (code != 0) {
    fmt::print(stderr, "kforge demo: the replay did not end with a correct kernel (exit {})\n",
               code);
    return code;
  }
  if (auto run = store::RunStore::Open(run_dir); run) {
    auto record = (*run)->GetRun(run_id);
    if (record && record->status != store::RunStatus::kFinished) {
      fmt::print(stderr,
                 "kforge demo: the replay did not run to its end (run {}): see the reason "
                 "above\n",
                 store::ToString(record->status));
      return 1;
    }
  }
  auto steps = StepsOf(run_dir, run_id);
  if (!steps) {
    fmt::print(stderr, "kforge demo: {}\n", steps.error().message);
    return 3;
  }
  fmt::print("\nThe story of this run:\n");
  std::optional<double> first_correct;
  std::optional<double> best;
  for (const auto& s : *steps) {
    fmt::print("  iteration {}  {:<12} {:<14} {}\n", s.iteration + 1, s.pass, s.status,
               s.median_s ? "median " + FormatSeconds(*s.median_s) : "");
    if (s.median_s) {
      if (!first_correct) first_correct = s.median_s;
      best = std::min(best.value_or(*s.median_s), *s.median_s);
    }
  }
  if (!first_correct || !best) {
    fmt::print(stderr, "kforge demo: no correct candidate was timed\n");
    return 1;
  }
  if (!manifest->expect_faster) {
    fmt::print("\nFirst correct kernel: {}. Everything is stored in {}.\n",
               FormatSeconds(*first_correct), run_dir.string());
    return 0;
  }
  const double gain = *first_correct / *best;
  fmt::print("\nFirst correct kernel: {}; final kernel: {}; {:.2f}x faster, measured here.\n",
             FormatSeconds(*first_correct), FormatSeconds(*best), gain);
  fmt::print("Everything is stored in {}.\n", run_dir.string());
  if (gain <= 1.0) {
    fmt::print(stderr,
               "kforge demo: on this machine the optimized kernel was not faster than the first "
               "correct one\n");
    return 1;
  }
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand(
      "demo",
      "Replay the recorded conversation of examples/demo/ through the real harness on the CPU "
      "(cpu/opencl, PoCL): a correct first kernel, then optimization passes driven by the "
      "analysis agent's advice, and a faster final kernel — compiled, checked and timed here "
      "(--manifest examples/demo/repair.toml: a kernel that does not compile, and its fix). No "
      "API key or network needed.");
  cmd->footer(ExitCodesFooter("demo"));
  cmd->add_option("--manifest", args->manifest,
                  "Demo manifest (TOML: task, target, model, iterations, profile, expect_faster, "
                  "conversation); default: examples/demo/demo.toml of the KForge installation; "
                  "examples/demo/repair.toml replays a compile error and its fix");
  cmd->add_option("--runs-dir", args->runs_dir, "Where the run is stored")
      ->default_val("kforge-runs");
  cmd->callback([args] {
    int code = RunDemo(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
