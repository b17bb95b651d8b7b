// What `kforge run` and `kforge bench` share: building the run's LLM providers.
#ifndef KFORGE_CLI_RUN_SUPPORT_H_
#define KFORGE_CLI_RUN_SUPPORT_H_

#include <memory>
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
  std::string analysis_model;  // empty: the generation model
  std::vector<std::string> models;  // extra registry files
  std::string record;               // cassette to record into; empty: none
  std::string record_note;          // who answered the recorded calls (the cassette's header)
  std::string replay;               // cassette to replay; empty: the registry's models
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

struct Providers {
  std::shared_ptr<llm::Provider> generation;
  std::shared_ptr<llm::Provider> analysis;
};

// The providers of a run: replayed from a cassette, or built from the model registry (and
// recorded into a cassette with --record); every one charges `budget`. A resumed run records
// beside the first recording (<record>.resumed.jsonl).
Result<Providers> MakeProviders(const ProviderArgs& args, bool resuming,
                                const std::shared_ptr<llm::Budget>& budget);

}  // namespace kforge

#endif  // KFORGE_CLI_RUN_SUPPORT_H_
