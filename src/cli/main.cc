// The `kforge` command.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "bench_command.h"
#include "calibrate_command.h"
#include "demo_command.h"
#include "e2e_command.h"
#include "eval_command.h"
#include "kforge/core/log.h"
#include "kforge/core/nearest_name.h"
#include "models_command.h"
#include "profile_command.h"
#include "report_command.h"
#include "run_command.h"
#include "targets_command.h"

int main(int argc, char** argv) {
  kforge::InitLogging();
  CLI::App app(
      "KForge: generate GPU kernels with LLMs and prove they are correct and fast.\n"
      "Logging: KFORGE_LOG=debug|info|warn (default warn).",
      "kforge");
  app.require_subcommand(1);
  app.set_version_flag("--version", "kforge 0.1.0");
  kforge::AddTargetsCommand(app);
  kforge::AddEvalCommand(app);
  kforge::AddCalibrateCommand(app);
  kforge::AddRunCommand(app);
  kforge::AddResumeCommand(app);
  kforge::AddDemoCommand(app);
  kforge::AddProfileCommand(app);
  kforge::AddBenchCommand(app);
  kforge::AddE2eCommand(app);
  kforge::AddExportCommand(app);
  kforge::AddModelsCommand(app);
  kforge::AddReportCommand(app);
  kforge::AddCompareCommand(app);
  // A first word that names no subcommand: say so, with the nearest name (CLI11 alone says "A
  // subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known |= sub->check_name(argv[1]);
      if (!sub->get_group().empty()) names.push_back(sub->get_name());
    }
    if (!known) {
      fmt::print(stderr, "kforge: unknown subcommand '{}'{}; `kforge --help` lists them\n",
                 argv[1], kforge::DidYouMean(argv[1], names));
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return 0;
}
