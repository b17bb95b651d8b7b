// A Provider answering from a function, for tests of wrappers (limits, budget, cassettes).
#ifndef KFORGE_TESTS_LLM_SCRIPTED_PROVIDER_H_
#define KFORGE_TESTS_LLM_SCRIPTED_PROVIDER_H_

#include <functional>
#include <utility>

#include "kforge/llm/provider.h"

namespace kforge::llm::testing {

class ScriptedProvider : public Provider {
 public:
  using Script = std::function<Result<Response>(const Request&, const CallOptions&)>;
  explicit ScriptedProvider(Script script, std::string model_id = "scripted")
      : script_(std::move(script)), model_id_(std::move(model_id)) {}

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    return script_(request, options);
  }
  ProviderInfo Info() const override {
    return ProviderInfo{"scripted", model_id_, "scripted-model", "memory"};
  }

 private:
  Script script_;
  std::string model_id_;
};

inline Request UserRequest(std::string text) {
  Request r;
  r.messages = {Message::User(std::move(text))};
  return r;
}

}  // namespace kforge::llm::testing

#endif  // KFORGE_TESTS_LLM_SCRIPTED_PROVIDER_H_
