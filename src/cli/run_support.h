// What `kforge run` and `kforge bench` share: building the run's LLM providers.
#ifndef KFORGE_CLI_RUN_SUPPORT_H_
#define KFORGE_CLI_RUN_SUPPORT_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/provider.h"

namespace kforge {

// A fresh run id: run-YYYYMMDD-HHMMSS-xxxx (UTC).
std::string NewRunId();
// An existing file named on the command line, made absolute so that a resume from elsewhere
// finds it; anything else unchanged.
std::string Absolute(const std::string& path);

struct ProviderArgs {
  std::string model;
  std::string analysis_model;          // empty: the generation model
  std::vector<std::string> models;     // extra registry files
  std::string record;                  // cassette to record into; empty: none
  std::string record_note;             // who answered the recorded calls (the cassette's header)
  std::string replay;                  // cassette to replay; empty: the registry's models
  std::string replay_match = "exact";  // exact | numbers (llm::ReplayMatch)
  bool inbox_wait = false;             // inbox models wait for each answer file
};

// The provider settings of a command's arguments (`kforge run`'s and `kforge bench`'s share these
// field names).
template <typename CommandArgs>
ProviderArgs ProviderArgsOf(const CommandArgs& a) {
  return ProviderArgs{.model = a.model,
                      .analysis_model = a.analysis_model,
                      .models = a.models,
                      .record = a.record,
                      .record_note = a.record_note,
                      .replay = a.replay,
                      .replay_match = a.replay_match,
                      .inbox_wait = a.inbox_wait};
}

// Adds the options that say where a command's LLM answers come from and go to — --models,
// --record, --record-note, --replay, --replay-match, --inbox-wait — to `cmd`, bound to the
// fields of `args` of those names (as in ProviderArgsOf). `run`, `bench` and `e2e` share them.
template <typename CommandArgs>
void AddModelSourceOptions(CLI::App* cmd, CommandArgs* args) {
  cmd->add_option("--models", args->models, "Extra model registry files (TOML)");
  cmd->add_option("--record", args->record, "Record every LLM answer into this cassette (JSONL)");
  cmd->add_option("--record-note", args->record_note,
                  "Who answered the recorded calls, and how (kept in the cassette's header)");
  cmd->add_option("--replay", args->replay,
                  "Answer every LLM call from this cassette instead of calling a model")
      ->check(CLI::ExistingFile);
  cmd->add_option("--replay-match", args->replay_match,
                  "exact: a replayed prompt must equal the recorded one; numbers: numbers, the "
                  "folders of paths and the measured parts of the prompts (timings, profile "
                  "summaries, device facts) may differ, as they do between machines")
      ->default_val("exact")
      ->check(CLI::IsMember({"exact", "numbers"}));
  cmd->add_flag("--inbox-wait", args->inbox_wait,
                "With an inbox model: wait for each answer file instead of stopping");
}

// The model-source fields of a command's stored configuration (flat keys of its JSON, read back
// by `kforge resume`): model, analysis_model, models, record, record_note, replay, replay_match,
// inbox_wait. `model` is required when reading; the others default as on the command line.
template <typename CommandArgs>
void WriteModelSource(nlohmann::json& j, const CommandArgs& a) {
  j["model"] = a.model;
  j["analysis_model"] = a.analysis_model;
  j["models"] = a.models;
  j["record"] = a.record;
  j["record_note"] = a.record_note;
  j["replay"] = a.replay;
  j["replay_match"] = a.replay_match;
  j["inbox_wait"] = a.inbox_wait;
}

// Throws nlohmann::json::exception when `model` is missing or a field has the wrong type.
template <typename CommandArgs>
void ReadModelSource(const nlohmann::json& j, CommandArgs& a) {
  a.model = j.at("model").get<std::string>();
  a.analysis_model = j.value("analysis_model", "");
  a.models = j.value("models", std::vector<std::string>{});
  a.record = j.value("record", "");
  a.record_note = j.value("record_note", "");
  a.replay = j.value("replay", "");
  a.replay_match = j.value("replay_match", "exact");
  a.inbox_wait = j.value("inbox_wait", false);
}

struct Providers {
  std::shared_ptr<llm::Provider> generation;
  std::shared_ptr<llm::Provider> analysis;
};

// The providers of a run: replayed from a cassette, or built from the model registry (and
// recorded into a cassette with --record); every one charges `budget`. A resumed run appends to
// the run's cassette (llm::CassetteWriter::Open), which stays the whole conversation.
Result<Providers> MakeProviders(const ProviderArgs& args, bool resuming,
                                const std::shared_ptr<llm::Budget>& budget);

}  // namespace kforge

#endif  // KFORGE_CLI_RUN_SUPPORT_H_
