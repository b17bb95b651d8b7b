#include "kforge/e2e/pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "kforge/core/files.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void Step(const E2eSetup& setup, const std::string& line) {
  spdlog::info("e2e: {}", line);
  if (setup.on_step) setup.on_step(line);
}

// Step 1: the workload profiled, sites ranked, tasks written.
Result<Profile> ProfileStep(const E2eSetup& setup) {
  Step(setup, fmt::format("profiling {} (configuration {}) on {}", setup.model_file.string(),
                          setup.config, setup.synthesis.backend->RunnerDevice()));
  return ProfileModel({.model_file = setup.model_file,
                       .config = setup.config,
                       .device = setup.synthesis.backend->RunnerDevice(),
                       .seed = setup.seed,
                       .top = setup.top,
                       .sites = setup.sites,
                       .tasks_dir = setup.phase.dir / "tasks"},
                      setup.phase);
}

// Step 2: one site's task through the synthesis loop.
Result<SiteOutcome> SynthesizeStep(const E2eSetup& setup, const Site& site,
                                   PrecisionPolicy policy) {
  SiteOutcome out;
  out.site = site.name;
  out.task_file = site.task_file;
  auto task = LoadTask(site.task_file.string());
  if (!task) return std::unexpected(task.error());
  task->policy = policy;
  Step(setup, fmt::format("synthesizing {} ({})", site.name, site.task_file.string()));
  synth::SynthesisSetup s = setup.synthesis;
  s.task = *task;
  s.stream_prefix = site.name + "/";
  s.best_dir = setup.phase.dir / "best" / site.name;
  if (setup.complete_synthesis) setup.complete_synthesis(s.task, s);
  auto result = synth::Synthesizer(std::move(s)).Run();
  if (!result) return std::unexpected(result.error());
  out.steps = result->steps;
  // Any failed LLM call leaves the site unfinished (a permanent one too: e2e runs again whole).
  out.interrupted = result->interrupted || result->call_failure.has_value();
  out.awaiting_answer = result->awaiting_answer;
  out.stop_reason = result->stop_reason;
  if (!result->best_path.empty() && result->best && result->best->correct()) {
    out.correct = true;
    out.best = result->best_path;
    out.task_speedup = result->best->verdict.speedup_vs_eager;
  }
  return out;
}

// Step 3: the winner built into e2e/kernels/<site>.<so>, where its ABI allows integration.
void BuildStep(const E2eSetup& setup, SiteOutcome& site) {
  const CandidateFormat& format = setup.synthesis.backend->format();
  if (format.kind != CandidateKind::kNative) {
    site.not_integrated = fmt::format(
        "{} kernels are Python modules (ModelNew); kforge e2e integrates native C-ABI kernels "
        "only so far",
        setup.synthesis.backend->target().ToString());
    return;
  }
  auto built = setup.compiler->Compile(*setup.synthesis.backend, site.best);
  if (!built || !built->ok) {
    site.not_integrated =
        built ? "the kernel did not compile again: " + built->diagnostics : built.error().message;
    return;
  }
  const fs::path kernels = setup.phase.dir / "kernels";
  std::error_code ec;
  fs::create_directories(kernels, ec);
  const fs::path dest = kernels / (site.site + ".so");
  fs::copy_file(built->artifact, dest, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    site.not_integrated = fmt::format("cannot copy {} to {}: {}", built->artifact.string(),
                                      dest.string(), ec.message());
    return;
  }
  site.kernel = dest;
}

// e2e/sites.json: what `kforge export` needs of the integrated sites.
Status WriteSites(const E2eSetup& setup, const Profile& profile,
                  const std::vector<SiteOutcome>& outcomes) {
  json sites = json::array();
  for (const SiteOutcome& o : outcomes) {
    if (o.kernel.empty()) continue;
    for (const Site& s : profile.sites) {
      if (s.name != o.site) continue;
      json entry = json::parse(s.json);
      entry["kernel_source"] = o.best.string();
      entry["kernel_file"] = o.kernel.string();
      sites.push_back(entry);
    }
  }
  const json doc = {{"e2e_sites_version", 1},
                    {"run_id", setup.synthesis.run_id},
                    {"target", setup.synthesis.backend->target().ToString()},
                    {"model_file", setup.model_file.string()},
                    {"config", setup.config},
                    {"seed", setup.seed},
                    {"implementation", profile.implementation},
                    {"policy", profile.policy},
                    {"sites", sites}};
  return WriteFile(setup.phase.dir / "sites.json", doc.dump(2));
}

}  // namespace

bool E2eOutcome::Matches() const {
  if (!measurement) return false;
  bool any = false;
  for (const Equivalence& e : measurement->equivalence) {
    if (e.configuration != "eager+kforge") continue;
    any = true;
    if (!e.within_tolerance || !e.tokens_agree) return false;
  }
  return any;
}

Result<E2eOutcome> RunE2e(E2eSetup setup) {
  if (setup.synthesis.store == nullptr || setup.synthesis.backend == nullptr ||
      setup.synthesis.evaluator == nullptr || setup.compiler == nullptr ||
      !setup.synthesis.generation_provider) {
    return Internal("RunE2e: store, backend, evaluator, compiler and provider are required");
  }
  if (setup.phase.dir.empty()) setup.phase.dir = setup.run_dir / "e2e";
  E2eOutcome outcome;
  auto profile = ProfileStep(setup);
  if (!profile) return std::unexpected(profile.error());
  outcome.profile = *profile;
  auto policy = ParsePrecisionPolicy(profile->policy);
  if (!policy) return std::unexpected(policy.error());

  for (const Site& site : profile->sites) {
    if (!site.selected) continue;
    auto synthesized = SynthesizeStep(setup, site, *policy);
    if (!synthesized) return std::unexpected(synthesized.error());
    if (synthesized->interrupted) outcome.interrupted = true;
    if (synthesized->awaiting_answer) outcome.awaiting_answer = true;
    if (synthesized->correct) {
      Step(setup, fmt::format("building the kernel of {}", site.name));
      BuildStep(setup, *synthesized);
    }
    outcome.sites.push_back(std::move(*synthesized));
  }
  if (auto written = WriteSites(setup, *profile, outcome.sites); !written) {
    return std::unexpected(written.error());
  }

  MeasureRequest request;
  request.model_file = setup.model_file;
  request.config = setup.config;
  request.device = setup.synthesis.backend->RunnerDevice();
  request.seed = setup.seed;
  request.op_namespace =
      "kforge_" + setup.synthesis.run_id.substr(setup.synthesis.run_id.size() - 4);
  request.warmup_steps = setup.warmup_steps;
  request.timed_steps = setup.timed_steps;
  request.kernel_repeats = setup.kernel_repeats;
  for (auto& c : request.op_namespace)
    if (c == '-') c = '_';
  for (const SiteOutcome& o : outcome.sites) {
    if (o.kernel.empty()) continue;
    request.kernels[o.site] = o.kernel;
    for (const Site& s : profile->sites)
      if (s.name == o.site) request.site_json.push_back(s.json);
  }
  if (request.kernels.empty()) {
    outcome.not_measured = "no site got a correct kernel that could be put in";
  } else {
    Step(setup,
         fmt::format("measuring the model with {} kernel(s) put in", request.kernels.size()));
    auto measured = MeasureModel(request, setup.phase);
    if (!measured) return std::unexpected(measured.error());
    outcome.measurement = std::move(*measured);
  }
  if (auto written = WriteFile(setup.phase.dir / "result.json", OutcomeJson(outcome, setup));
      !written) {
    return std::unexpected(written.error());
  }
  return outcome;
}

std::string OutcomeJson(const E2eOutcome& outcome, const E2eSetup& setup) {
  json sites = json::array();
  for (const SiteOutcome& s : outcome.sites) {
    json entry = {{"site", s.site},
                  {"task_file", s.task_file.string()},
                  {"correct", s.correct},
                  {"steps", s.steps},
                  {"stop_reason", s.stop_reason},
                  {"best", s.best.string()},
                  {"kernel", s.kernel.string()},
                  {"integrated", !s.kernel.empty()},
                  {"not_integrated", s.not_integrated}};
    entry["task_speedup_vs_eager"] = s.task_speedup ? json(*s.task_speedup) : json(nullptr);
    sites.push_back(entry);
  }
  const json doc = {
      {"e2e_result_version", 1},
      {"run_id", setup.synthesis.run_id},
      {"run_dir", setup.run_dir.string()},
      {"model_file", setup.model_file.string()},
      {"config", setup.config},
      {"target", setup.synthesis.backend->target().ToString()},
      {"implementation", outcome.profile.implementation},
      {"profile", json::parse(outcome.profile.json)},
      {"syntheses", sites},
      {"measurement", outcome.measurement ? json::parse(outcome.measurement->json) : json(nullptr)},
      {"not_measured", outcome.not_measured},
      {"interrupted", outcome.interrupted},
      {"outputs_match", outcome.Matches()}};
  return doc.dump(2);
}

}  // namespace kforge::e2e
