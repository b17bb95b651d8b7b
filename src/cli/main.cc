// The `kforge` command.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_command.h"
#include "eval_command.h"
#include "kforge/core/log.h"
#include "run_command.h"
#include "targets_command.h"
#if __has_include("models_command.h")
#include "models_command.h"
#define KFORGE_HAVE_MODELS_COMMAND 1
#endif

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
  kforge::AddRunCommand(app);
  kforge::AddResumeCommand(app);
  kforge::AddBenchCommand(app);
#ifdef KFORGE_HAVE_MODELS_COMMAND
  kforge::AddModelsCommand(app);
#endif
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
