// The LLM providers of a run, built from its model source: replayed from a cassette, or made from
// the model registry (and recorded into a cassette with `record`); every one charges the run's
// budget. Part of the composition root (app/setup.h).
#ifndef KFORGE_APP_PROVIDERS_H_
#define KFORGE_APP_PROVIDERS_H_

#include <memory>
#include <string>

#include "kforge/app/run_config.h"
#include "kforge/core/error.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/provider.h"

namespace kforge::app {

struct Providers {
  std::shared_ptr<llm::Provider> generation;
  std::shared_ptr<llm::Provider> analysis;  // the generation provider when the models are one
  std::string recording;                    // the cassette the calls are recorded into, or ""
};

// A resumed run appends to the run's cassette (llm::CassetteWriter::Open). Errors: an unknown
// model, a missing key, an unreadable cassette (the message says which).
Result<Providers> MakeProviders(const ModelSource& source, bool resuming,
                                const std::shared_ptr<llm::Budget>& budget);

}  // namespace kforge::app

#endif  // KFORGE_APP_PROVIDERS_H_
