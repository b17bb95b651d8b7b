// The run-wide budget (tokens and dollars) and the provider wrapper that enforces it.
//
// A call may start while the spent amounts are below every limit; a call that starts is always
// allowed to finish, so the final total can exceed a limit by the calls that were in flight.
// Once a limit is reached every new call is refused with kResourceExhausted.
#ifndef KFORGE_LLM_BUDGET_H_
#define KFORGE_LLM_BUDGET_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "kforge/core/error.h"
#include "kforge/llm/provider.h"
#include "kforge/llm/response.h"

namespace kforge::llm {

struct BudgetLimits {
  std::optional<std::int64_t> max_tokens;  // input + output tokens over the run; unset = no limit
  std::optional<double> max_usd;           // dollars over the run; unset = no limit
};

struct BudgetSpent {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double usd = 0.0;
  std::int64_t calls = 0;
  std::int64_t refused = 0;  // calls refused because the budget was reached
};

// Thread-safe; one per run, shared by all providers of the run.
class Budget {
 public:
  explicit Budget(BudgetLimits limits) : limits_(limits) {}

  // Ok while below every limit; else kResourceExhausted with what was spent and what to change.
  Status CheckCanStart();
  void Record(const Usage& usage, double usd);
  BudgetSpent Spent() const;
  const BudgetLimits& limits() const { return limits_; }

 private:
  const BudgetLimits limits_;
  mutable std::mutex mu_;
  BudgetSpent spent_;  // guarded by mu_
};

std::unique_ptr<Provider> NewBudgetedProvider(std::shared_ptr<Provider> inner,
                                              std::shared_ptr<Budget> budget);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_BUDGET_H_
