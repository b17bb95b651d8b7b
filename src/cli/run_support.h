// What the commands that start runs share: run ids, paths made absolute, and the options that say
// where a run's LLM answers come from (bound to app::ModelSource).
#ifndef KFORGE_CLI_RUN_SUPPORT_H_
#define KFORGE_CLI_RUN_SUPPORT_H_

#include <CLI/CLI.hpp>
#include <string>

#include "kforge/app/run_config.h"

namespace kforge {

// A fresh run id: run-YYYYMMDD-HHMMSS-xxxx (UTC).
std::string NewRunId();
// An existing file named on the command line, made absolute so that a resume from elsewhere
// finds it; anything else unchanged.
std::string Absolute(const std::string& path);
// The model source's files made absolute (registries and the replayed cassette when they exist,
// the recorded cassette always).
void AbsoluteModelSource(app::ModelSource& source);

// Adds the options that say where a command's LLM answers come from and go to — --models,
// --record, --record-note, --replay, --replay-match, --inbox-wait — bound to `source`. `run`,
// `bench` and `e2e` share them (each binds --model and --analysis-model itself).
void AddModelSourceOptions(CLI::App* cmd, app::ModelSource* source);

}  // namespace kforge

#endif  // KFORGE_CLI_RUN_SUPPORT_H_
