// The registry of programming models: one line per model — its name in target strings, the
// vendors that support it and its backend's factory. Target parsing, ProgrammingModelName(),
// ModelsOf() and NewBackend() all read it. Internal to src/target.
#ifndef KFORGE_SRC_TARGET_REGISTRY_H_
#define KFORGE_SRC_TARGET_REGISTRY_H_

#include <memory>
#include <string_view>
#include <vector>

#include "kforge/target/backend.h"
#include "kforge/target/target.h"

namespace kforge {

struct RegisteredModel {
  ProgrammingModel model;
  std::string_view name;        // in target strings: "cuda"
  std::vector<Vendor> vendors;  // vendors whose devices run it
  std::unique_ptr<Backend> (*make)(const Target& target, const Env& env);
};

// Every programming model, in the order a vendor's models are listed (`kforge targets`).
const std::vector<RegisteredModel>& RegisteredModels();

// The entry of `model`; every ProgrammingModel has one.
const RegisteredModel& RegistryEntry(ProgrammingModel model);

}  // namespace kforge

#endif  // KFORGE_SRC_TARGET_REGISTRY_H_
