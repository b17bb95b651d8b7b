// Rate limits, concurrency limits and the run budget.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "kforge/llm/budget.h"
#include "kforge/llm/pricing.h"
#include "kforge/llm/rate_limiter.h"
#include "scripted_provider.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;
using testing::ScriptedProvider;
using testing::UserRequest;
using Clock = std::chrono::steady_clock;

RateLimits Rpm(double rpm, int burst) {
  RateLimits limits;
  limits.requests_per_minute = rpm;
  limits.burst = burst;
  return limits;
}
RateLimits Tpm(double tpm) {
  RateLimits limits;
  limits.tokens_per_minute = tpm;
  return limits;
}
RateLimits Concurrency(int n) {
  RateLimits limits;
  limits.max_concurrency = n;
  return limits;
}
BudgetLimits TokenBudget(std::int64_t tokens) {
  BudgetLimits limits;
  limits.max_tokens = tokens;
  return limits;
}
BudgetLimits MoneyBudget(double usd) {
  BudgetLimits limits;
  limits.max_usd = usd;
  return limits;
}

Response Answer(std::int64_t in, std::int64_t out, double usd) {
  Response r;
  r.text = "ok";
  r.usage.input_tokens = in;
  r.usage.output_tokens = out;
  r.cost_usd = usd;
  return r;
}

TEST(RateLimiterTest, SpacesRequestsByTheRequestRate) {
  auto inner = std::make_shared<ScriptedProvider>(
      [](const Request&, const CallOptions&) -> Result<Response> { return Answer(1, 1, 0); });
  auto limited = NewRateLimitedProvider(
      inner, std::make_shared<RateLimiter>(Rpm(600, 1)));  // 100 ms
  std::vector<Clock::time_point> starts;
  const auto begin = Clock::now();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(limited->Complete(UserRequest("hi"), CallOptions{}).has_value());
    starts.push_back(Clock::now());
  }
  EXPECT_GE(Clock::now() - begin, milliseconds(500));
  for (std::size_t i = 1; i < starts.size(); ++i) {
    EXPECT_GE(starts[i] - starts[i - 1], milliseconds(95));
  }
}

TEST(RateLimiterTest, BurstLetsRequestsStartTogetherAfterIdle) {
  RateLimiter limiter(Rpm(60, 3));  // 1 s apart
  const auto begin = Clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter.Acquire(1, CallOptions{}).has_value());
  EXPECT_LT(Clock::now() - begin, milliseconds(100));
}

TEST(RateLimiterTest, BoundsConcurrency) {
  std::atomic<int> in_flight{0};
  std::atomic<int> peak{0};
  auto inner = std::make_shared<ScriptedProvider>(
      [&](const Request&, const CallOptions&) -> Result<Response> {
        const int now = ++in_flight;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(milliseconds(20));
        --in_flight;
        return Answer(1, 1, 0);
      });
  auto limited = NewRateLimitedProvider(
      inner, std::make_shared<RateLimiter>(Concurrency(2)));
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 3; ++k) EXPECT_TRUE(limited->Complete(UserRequest("x"), {}).has_value());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(peak.load(), 2);
}

TEST(RateLimiterTest, TokenRateMakesLargePromptsWait) {
  // 60000 tokens per minute = 1000 per second, bucket of 60000. Each prompt is ~30300 tokens:
  // the first passes, the second waits ~0.6 s for the bucket to refill.
  RateLimiter limiter(Tpm(60000));
  const auto begin = Clock::now();
  ASSERT_TRUE(limiter.Acquire(30300, CallOptions{}).has_value());
  ASSERT_TRUE(limiter.Acquire(30300, CallOptions{}).has_value());
  const auto waited = Clock::now() - begin;
  EXPECT_GE(waited, milliseconds(550));
  EXPECT_LT(waited, milliseconds(1500));
}

TEST(RateLimiterTest, QueuedCallsCanBeCancelled) {
  RateLimiter limiter(Rpm(6, 1));  // 10 s apart
  ASSERT_TRUE(limiter.Acquire(1, CallOptions{}).has_value());
  CallOptions options;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    options.cancel.Cancel();
  });
  const auto begin = Clock::now();
  auto second = limiter.Acquire(1, options);
  canceller.join();
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kCancelled);
  EXPECT_LT(Clock::now() - begin, milliseconds(1000));
}

TEST(RateLimiterTest, ConcurrencyWaitHonoursTheDeadline) {
  RateLimiter limiter(Concurrency(1));
  auto held = limiter.Acquire(1, CallOptions{});
  ASSERT_TRUE(held.has_value());
  CallOptions options;
  options.deadline = Clock::now() + milliseconds(100);
  auto second = limiter.Acquire(1, options);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kTimeout);
}

TEST(BudgetTest, StopsNewCallsWhenTheTokenBudgetIsReached) {
  std::atomic<int> calls{0};
  auto inner = std::make_shared<ScriptedProvider>(
      [&](const Request&, const CallOptions&) -> Result<Response> {
        ++calls;
        return Answer(30, 10, 0.01);
      });
  auto budget = std::make_shared<Budget>(TokenBudget(100));
  auto provider = NewBudgetedProvider(inner, budget);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(provider->Complete(UserRequest("x"), {}).has_value()) << i;
  }
  auto refused = provider->Complete(UserRequest("x"), {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("budget reached: 120 of 100 tokens"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(calls.load(), 3);
  const BudgetSpent spent = budget->Spent();
  EXPECT_EQ(spent.input_tokens, 90);
  EXPECT_EQ(spent.output_tokens, 30);
  EXPECT_NEAR(spent.usd, 0.03, 1e-12);
  EXPECT_EQ(spent.calls, 3);
  EXPECT_EQ(spent.refused, 1);
}

TEST(BudgetTest, StopsNewCallsWhenTheMoneyBudgetIsReached) {
  auto inner = std::make_shared<ScriptedProvider>(
      [&](const Request&, const CallOptions&) -> Result<Response> { return Answer(1, 1, 0.5); });
  auto budget = std::make_shared<Budget>(MoneyBudget(1.0));
  auto a = NewBudgetedProvider(inner, budget);
  auto b = NewBudgetedProvider(inner, budget);  // the budget is run-wide, across models
  ASSERT_TRUE(a->Complete(UserRequest("x"), {}).has_value());
  ASSERT_TRUE(b->Complete(UserRequest("x"), {}).has_value());
  auto refused = a->Complete(UserRequest("x"), {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("$1.0000 of $1.0000"), std::string::npos)
      << refused.error().message;
}

TEST(CostTest, PricesUsagePerMillionTokens) {
  EXPECT_DOUBLE_EQ(CostUsd(Usage{1'000'000, 500'000, false}, Pricing{3.0, 15.0}), 10.5);
}

}  // namespace
}  // namespace kforge::llm
