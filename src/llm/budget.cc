#include "kforge/llm/budget.h"

#include <fmt/format.h>

#include <utility>

namespace kforge::llm {

Status Budget::CheckCanStart() {
  std::lock_guard lock(mu_);
  const std::int64_t tokens = spent_.input_tokens + spent_.output_tokens;
  std::string reached;
  if (limits_.max_tokens && tokens >= *limits_.max_tokens) {
    reached = fmt::format("{} of {} tokens", tokens, *limits_.max_tokens);
  } else if (limits_.max_usd && spent_.usd >= *limits_.max_usd) {
    reached = fmt::format("${:.4f} of ${:.4f}", spent_.usd, *limits_.max_usd);
  }
  if (reached.empty()) return Ok();
  ++spent_.refused;
  return MakeError(ErrorCode::kResourceExhausted,
                   fmt::format("run budget reached: {} spent in {} calls; no new LLM calls are "
                               "made. Raise the run's token or money budget to continue.",
                               reached, spent_.calls));
}

void Budget::Record(const Usage& usage, double usd) {
  std::lock_guard lock(mu_);
  spent_.input_tokens += usage.input_tokens;
  spent_.output_tokens += usage.output_tokens;
  spent_.usd += usd;
  ++spent_.calls;
}

BudgetSpent Budget::Spent() const {
  std::lock_guard lock(mu_);
  return spent_;
}

namespace {

class BudgetedProvider : public Provider {
 public:
  BudgetedProvider(std::shared_ptr<Provider> inner, std::shared_ptr<Budget> budget)
      : inner_(std::move(inner)), budget_(std::move(budget)) {}

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    if (auto ok = budget_->CheckCanStart(); !ok) {
      Error error = ok.error();
      error.message = fmt::format("model '{}': {}", inner_->Info().model_id, error.message);
      return std::unexpected(std::move(error));
    }
    auto response = inner_->Complete(request, options);
    if (response) budget_->Record(response->usage, response->cost_usd);
    return response;
  }

  ProviderInfo Info() const override { return inner_->Info(); }

 private:
  const std::shared_ptr<Provider> inner_;
  const std::shared_ptr<Budget> budget_;
};

}  // namespace

std::unique_ptr<Provider> NewBudgetedProvider(std::shared_ptr<Provider> inner,
                                              std::shared_ptr<Budget> budget) {
  return std::make_unique<BudgetedProvider>(std::move(inner), std::move(budget));
}

}  // namespace kforge::llm
