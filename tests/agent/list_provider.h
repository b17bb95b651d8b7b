// A Provider answering from a list, in order, and counting the calls it gets (tests of the agents
// and the synthesis loop). Past the end of the list it fails with kUnavailable.
#ifndef KFORGE_TESTS_AGENT_LIST_PROVIDER_H_
#define KFORGE_TESTS_AGENT_LIST_PROVIDER_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kforge/llm/provider.h"

namespace kforge::agent::testing {

class ListProvider : public llm::Provider {
 public:
  explicit ListProvider(std::vector<std::string> answers, std::string model_id = "scripted")
      : answers_(std::move(answers)), model_id_(std::move(model_id)) {}

  Result<llm::Response> Complete(const llm::Request& request,
                                 const llm::CallOptions& /*options*/) override {
    std::size_t index = 0;
    {
      std::lock_guard lock(mu_);
      index = calls_++;
      prompts_.push_back(request.messages.empty() ? std::string() : request.messages.back().Text());
    }
    if (before_answer) before_answer(index);
    if (index >= answers_.size()) {
      return std::unexpected(Error{ErrorCode::kUnavailable, "the script has no more answers"});
    }
    llm::Response response;
    response.text = answers_[index];
    response.model = "scripted-model";
    response.finish_reason = "stop";
    response.usage.input_tokens = input_tokens;
    response.usage.output_tokens = output_tokens;
    response.cost_usd = cost_usd;
    return response;
  }
  llm::ProviderInfo Info() const override {
    return llm::ProviderInfo{"scripted", model_id_, "scripted-model", "memory"};
  }

  int calls() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(calls_);
  }
  std::vector<std::string> prompts() const {
    std::lock_guard lock(mu_);
    return prompts_;
  }

  // Called with the 0-based call index before each answer (e.g. to kill the process).
  std::function<void(std::size_t)> before_answer;
  std::int64_t input_tokens = 1000;
  std::int64_t output_tokens = 500;
  double cost_usd = 0.01;

 private:
  const std::vector<std::string> answers_;
  const std::string model_id_;
  mutable std::mutex mu_;
  std::size_t calls_ = 0;             // guarded by mu_
  std::vector<std::string> prompts_;  // guarded by mu_
};

// A fenced answer holding `source` as the cpu/cpp candidate file, with prose around it.
inline std::string CppAnswer(const std::string& source) {
  return "Here is the kernel.\n\n```cpp\n" + source + "```\n\nIt handles any shape.\n";
}

}  // namespace kforge::agent::testing

#endif  // KFORGE_TESTS_AGENT_LIST_PROVIDER_H_
