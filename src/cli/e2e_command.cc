#include "e2e_command.h"
#include "exit_codes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/app/run_config.h"
#include "kforge/app/setup.h"
#include "kforge/e2e/pipeline.h"
#include "kforge/e2e/summary.h"
#include "kforge/e2e/torch_op_export.h"
#include "kforge/store/run_store.h"
#include "kforge/target/backend.h"
#include "run_support.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Exit codes, stated in --help.
constexpr int kExitMatch = 0;    // kernels put in and the patched model's outputs match
constexpr int kExitNoMatch = 1;  // no kernel put in, or the outputs differ, or interrupted
constexpr int kExitUsage = 2;    // bad input: named in the message
constexpr int kExitInfra = 3;    // KForge, a phase, the store or the toolchain failed

// What an e2e command line adds to its stored configuration; not stored.
struct E2eCommandArgs {
  app::RunConfig config;
  bool json = false;
};

int RunE2eCommand(E2eCommandArgs args) {
  auto fail = [](const Error& e, int code) {
    fmt::print(stderr, "kforge e2e: {}\n", e.message);
    return code;
  };
  app::RunConfig& config = args.config;
  config.kind = store::RunKind::kE2e;
  if (!config.models.record.empty() && !config.models.replay.empty()) {
    return fail({ErrorCode::kInvalidArgument, "--record and --replay exclude each other"},
                kExitUsage);
  }
  std::error_code ec;
  if (!fs::is_regular_file(config.e2e.model_file, ec)) {
    return fail({ErrorCode::kInvalidArgument,
                 fmt::format("model file {} does not exist; pass a Python file that defines "
                             "CONFIGS, build_model and new_session (docs/e2e.md, "
                             "examples/e2e/gpt_oss_moe.py)",
                             config.e2e.model_file)},
                kExitUsage);
  }
  config.e2e.model_file = Absolute(config.e2e.model_file);
  AbsoluteModelSource(config.models);
  std::vector<std::string>& sites = config.e2e.sites;
  if (sites.size() == 1 && sites[0].find(',') != std::string::npos) {
    std::vector<std::string> split;
    std::string item;
    for (char c : sites[0] + ",") {
      if (c != ',')
        item += c;
      else if (!item.empty())
        split.push_back(std::exchange(item, ""));
    }
    sites = split;
  }

  const std::string run_id = NewRunId();
  const fs::path run_dir = fs::absolute(fs::path(config.runs_dir) / run_id);
  app::SetupOptions options{.probe = true,
                            .providers = true,
                            .resuming = false,
                            .run_dir = run_dir,
                            .eval = {},
                            .budget_share = 1};
  options.eval.time = true;
  options.eval.prepare_next = true;
  auto built = app::Setup::Build(config, std::move(options));
  if (!built) {
    return fail(built.error().error, built.error().user_input ? kExitUsage : kExitInfra);
  }
  app::Setup& root = **built;
  if (!root.providers().recording.empty()) {
    fmt::print("recording LLM calls to {}\n", root.providers().recording);
  }
  store::RunStore& store = *root.store();
  store::RunRecord run;
  run.id = run_id;
  run.kind = store::RunKind::kE2e;
  run.command_line =
      fmt::format("kforge e2e {} --config {} --target {} --model {}", config.e2e.model_file,
                  config.e2e.config, config.target, config.models.model);
  run.config_json = config.ToJson();
  if (auto added = store.AddRun(run); !added) return fail(added.error(), kExitInfra);
  if (!args.json) {
    fmt::print("kforge e2e {} (configuration {}) on {} with {} — run {}\n", config.e2e.model_file,
               config.e2e.config, config.target, config.models.model, run_dir.string());
    std::fflush(stdout);
  }

  e2e::E2eSetup setup;
  setup.model_file = config.e2e.model_file;
  setup.config = config.e2e.config;
  setup.run_dir = run_dir;
  // Every site's synthesis: the root's, with the task, stream prefix, best folder and the
  // root's per-site parts (profile pass, device facts) set by the pipeline.
  setup.synthesis = root.SynthesisTemplate(run_id);
  const fs::path profiles = run_dir / "e2e" / "profiles";
  setup.complete_synthesis = [&root, profiles](const Task& task, synth::SynthesisSetup& s) {
    root.CompleteSynthesis(s, profiles / task.name);
  };
  setup.compiler = &root.compiler();
  setup.top = config.e2e.top;
  setup.sites = config.e2e.sites;
  setup.seed = config.e2e.seed;
  setup.warmup_steps = config.e2e.warmup_steps;
  setup.timed_steps = config.e2e.timed_steps;
  setup.kernel_repeats = config.e2e.kernel_repeats;
  setup.phase.timeout = std::chrono::seconds(config.e2e.phase_timeout_s);
  if (!args.json) {
    setup.on_step = [](const std::string& line) {
      fmt::print("· {}\n", line);
      std::fflush(stdout);
    };
    setup.synthesis.on_progress = [](const synth::ProgressEvent& e) {
      fmt::print("    iteration {} · {:<12} · {:<16} · best: {}{}\n", e.iteration + 1, e.pass,
                 e.status, e.best, e.reused ? " · (answer from the store)" : "");
      std::fflush(stdout);
    };
  }
  auto outcome = e2e::RunE2e(setup);
  if (!outcome) {
    (void)store.FinishRun(run_id, store::RunStatus::kFailed);
    const bool usage = outcome.error().code == ErrorCode::kInvalidArgument;
    return fail(outcome.error(), usage ? kExitUsage : kExitInfra);
  }
  (void)store.FinishRun(
      run_id, outcome->interrupted ? store::RunStatus::kInterrupted : store::RunStatus::kFinished);
  if (args.json) {
    fmt::print("{}\n", e2e::OutcomeJson(*outcome, setup));
  } else {
    fmt::print("\n{}", e2e::SummaryText(*outcome));
    fmt::print(
        "\nEverything is in {} (e2e/result.json, e2e/measure.json, e2e/tasks/, "
        "run.sqlite).\n",
        run_dir.string());
    if (outcome->measurement) {
      fmt::print("Export the kernels: kforge export {} --as torch-op\n", run_dir.string());
    }
    if (outcome->awaiting_answer) {
      fmt::print(
          "Paused: a prompt waits for your answer (the site's line above says where to write "
          "it); then run the same kforge e2e command again (answered prompts are not asked "
          "again), or add --inbox-wait.\n");
    } else if (outcome->interrupted) {
      fmt::print(
          "An LLM call did not complete: run the same command again to continue (answered "
          "prompts are not asked again).\n");
    }
  }
  if (outcome->interrupted && outcome->awaiting_answer) return kExitAnswerPause;
  if (!outcome->measurement) return kExitNoMatch;
  if (!outcome->Matches()) {
    fmt::print(stderr, "kforge e2e: the patched model's outputs differ from the original's\n");
    return kExitNoMatch;
  }
  return outcome->interrupted ? kExitNoMatch : kExitMatch;
}

}  // namespace

void AddE2eCommand(CLI::App& app) {
  auto args = std::make_shared<E2eCommandArgs>();
  auto* cmd = app.add_subcommand(
      "e2e",
      "Put KForge kernels into a model and measure it: profile the model file's decode workload, "
      "rank its leaf modules (kernel sites) by time, write the top ones as KernelBench tasks with "
      "the shapes and dtypes seen, synthesize a kernel for each (the loop of `kforge run`), put "
      "the correct ones in through torch.library custom operators, check that the patched model "
      "computes the same logits and greedy tokens as the original over many decode steps, and "
      "measure tokens/s for eager, torch.compile, eager+KForge and compile+KForge at each batch "
      "size, with per-kernel speedups. Integration takes native kernels (cpu/cpp, CUDA, HIP, "
      "SYCL). The model file's contract is in docs/e2e.md.");
  cmd->footer(ExitCodesFooter("e2e"));
  cmd->add_option("model_file", args->config.e2e.model_file,
                  "The model file: CONFIGS, build_model(config), new_session(...) (docs/e2e.md)")
      ->required();
  cmd->add_option("--config", args->config.e2e.config,
                  "A configuration of the model file's CONFIGS")
      ->default_val("tiny");
  cmd->add_option("-t,--target", args->config.target, "Target vendor[-device]/model, e.g. cpu/cpp")
      ->required();
  cmd->add_option("-m,--model", args->config.models.model,
                  "Generation model id (`kforge models` lists them)")
      ->required();
  cmd->add_option("--analysis-model", args->config.models.analysis_model,
                  "Model id of the analysis agent; default: the generation model");
  cmd->add_option("--top", args->config.e2e.top,
                  "Synthesize kernels for this many sites, most time first")
      ->default_val(3)
      ->check(CLI::Range(1, 100));
  cmd->add_option("--sites", args->config.e2e.sites,
                  "Synthesize these sites instead (site or class names, comma-separated; the "
                  "profile lists them)");
  cmd->add_option("--iterations", args->config.iterations, "Generation steps per site")
      ->default_val(3)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--samples", args->config.samples, "Independent samples per site; best kept")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_flag("!--no-profile", args->config.profile, "No profile pass before each analysis");
  cmd->add_option("--seed", args->config.e2e.seed, "Seed of the model's random weights")
      ->default_val(0);
  cmd->add_option("--warmup-steps", args->config.e2e.warmup_steps,
                  "Untimed decode steps per measurement")
      ->default_val(3);
  cmd->add_option("--timed-steps", args->config.e2e.timed_steps,
                  "Timed decode steps per measurement")
      ->default_val(20)
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--kernel-repeats", args->config.e2e.kernel_repeats,
                  "Timed calls per kernel and batch size (per-kernel speedups)")
      ->default_val(50)
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--phase-timeout", args->config.e2e.phase_timeout_s,
                  "Seconds the profile or the measure phase may take")
      ->default_val(1800);
  cmd->add_option("--max-tokens", args->config.max_tokens, "Token budget of the run");
  cmd->add_option("--max-cost", args->config.max_cost, "Money budget of the run, US dollars");
  cmd->add_option("--max-time", args->config.max_time_s, "Wall-time budget per site, seconds");
  cmd->add_option("--runs-dir", args->config.runs_dir, "Where runs are stored")
      ->default_val("kforge-runs");
  cmd->add_flag("--json", args->json, "Print the outcome as JSON (e2e/result.json) instead");
  AddModelSourceOptions(cmd, &args->config.models);
  cmd->callback([args] {
    int code = RunE2eCommand(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

void AddExportCommand(CLI::App& app) {
  struct ExportArgs {
    std::string run_dir;
    std::string as = "torch-op";
    std::string out;
    std::string package;
  };
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write the kernels a `kforge e2e` run put into its model as a small installable Python "
      "package that works without KForge: kernel sources, a build step (setup.py compiles them "
      "as KForge did), torch.library registration and patch(model). Install it into a virtual "
      "environment that sees the installed torch: `python3 -m venv --system-site-packages venv "
      "&& venv/bin/pip install --no-build-isolation --no-index OUT`.");
  cmd->footer(ExitCodesFooter("export"));
  cmd->add_option("run_dir", args->run_dir, "The e2e run directory (kforge-runs/run-...)")
      ->required();
  cmd->add_option("--as", args->as, "What to export as: torch-op")
      ->default_val("torch-op")
      ->check(CLI::IsMember({"torch-op"}));
  cmd->add_option("--out", args->out,
                  "The package folder to write; default RUN_DIR/export/torch-op");
  cmd->add_option("--package", args->package,
                  "Python package name; default kforge_ops_<last 4 characters of the run id>");
  cmd->callback([args] {
    const fs::path run_dir = fs::absolute(args->run_dir);
    const fs::path out =
        args->out.empty() ? run_dir / "export" / "torch-op" : fs::absolute(args->out);
    auto package =
        e2e::ExportTorchOp({.run_dir = run_dir, .out_dir = out, .package = args->package});
    if (!package) {
      fmt::print(stderr, "kforge export: {}\n", package.error().message);
      throw CLI::RuntimeError(package.error().code == ErrorCode::kInvalidArgument ? 2 : 3);
    }
    fmt::print("Wrote the package {} to {}\nInstall it:\n{}Use it:  import {}; {}.patch(model)\n",
               *package, out.string(), e2e::InstallCommands(out), *package, *package);
  });
}

}  // namespace kforge
