// Load: 500 requests through one provider with 32 in flight and a rate limit of 6000/min hold the
// limit, lose nothing and finish; the client's CPU time per request is measured and bounded.
//
// The server runs in this process, so the client's CPU is measured per client thread
// (getrusage(RUSAGE_THREAD) around each worker's loop): libcurl, JSON building and parsing, the
// rate limiter and the provider all run on the calling thread.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "kforge/llm/openai.h"
#include "kforge/llm/rate_limiter.h"
#include "scripted_provider.h"
#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using std::chrono::duration;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kRequests = 500;
constexpr int kInFlight = 32;
constexpr double kPerMinute = 6000;  // 100 per second: the run takes about 5 s

double ThreadCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// The largest number of `times` (sorted) inside any half-open window of `width`.
int MaxInWindow(const std::vector<Clock::time_point>& times, Clock::duration width) {
  int best = 0;
  std::size_t begin = 0;
  for (std::size_t end = 0; end < times.size(); ++end) {
    while (times[end] - times[begin] >= width) ++begin;
    best = std::max(best, static_cast<int>(end - begin + 1));
  }
  return best;
}

TEST(LlmLoadTest, FiveHundredRequestsHoldTheRateLimitAndLoseNothing) {
  testing::TestServer ts(/*threads=*/kInFlight + 8);
  ts.server().set_keep_alive_max_count(kRequests);
  std::mutex mu;
  std::vector<Clock::time_point> arrivals;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mu);
      arrivals.push_back(Clock::now());
    }
    ++hits;
    const json body = json::parse(req.body);
    const std::string prompt = body["messages"][1]["content"].get<std::string>();
    const std::string answer = "answer to " + prompt;
    res.set_content(json{{"model", "load-model"},
                         {"choices", {{{"message", {{"content", answer}}}, {"finish_reason", "stop"}}}},
                         {"usage", {{"prompt_tokens", 20}, {"completion_tokens", 5}}}}
                        .dump(),
                    "application/json");
  });

  auto config = testing::FastConfig(ts.url() + "/v1", "");
  config.retry.max_attempts = 1;  // a lost request must show, not be papered over by a retry
  std::shared_ptr<Provider> http = NewOpenAiCompatibleProvider(config, NewCurlTransport());
  std::vector<Clock::time_point> starts;
  auto probe = std::make_shared<testing::ScriptedProvider>(
      [&](const Request& request, const CallOptions& options) {
        {
          std::lock_guard lock(mu);
          starts.push_back(Clock::now());
        }
        return http->Complete(request, options);
      });
  RateLimits limits;
  limits.max_concurrency = kInFlight;
  limits.requests_per_minute = kPerMinute;
  limits.burst = 1;
  auto provider = NewRateLimitedProvider(probe, std::make_shared<RateLimiter>(limits));

  std::atomic<int> next{0};
  std::atomic<int> ok{0};
  std::vector<std::string> failures;
  std::vector<double> cpu(kInFlight, 0.0);
  const auto begin = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < kInFlight; ++w) {
    workers.emplace_back([&, w] {
      const double cpu_start = ThreadCpuSeconds();
      for (int i = next++; i < kRequests; i = next++) {
        Request request;
        request.messages = {Message::System("You write kernels."),
                            Message::User("request " + std::to_string(i))};
        request.max_tokens = 64;
        auto response = provider->Complete(request, CallOptions{});
        if (response && response->text == "answer to request " + std::to_string(i) &&
            response->usage.Total() == 25) {
          ++ok;
        } else {
          std::lock_guard lock(mu);
          failures.push_back(response ? "wrong answer: " + response->text
                                      : response.error().ToString());
        }
      }
      cpu[w] = ThreadCpuSeconds() - cpu_start;
    });
  }
  for (auto& t : workers) t.join();
  const double elapsed = duration<double>(Clock::now() - begin).count();

  ASSERT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
  EXPECT_EQ(ok.load(), kRequests);
  EXPECT_EQ(hits.load(), kRequests);  // nothing lost, nothing sent twice

  // The limit: 100 per second, one at a time, so 499 intervals of 10 ms at least.
  std::sort(starts.begin(), starts.end());
  std::sort(arrivals.begin(), arrivals.end());
  ASSERT_EQ(starts.size(), static_cast<std::size_t>(kRequests));
  const double span = duration<double>(starts.back() - starts.front()).count();
  EXPECT_GE(span, (kRequests - 1) * 60.0 / kPerMinute * 0.99);
  const int max_started = MaxInWindow(starts, std::chrono::seconds(1));
  const int max_arrived = MaxInWindow(arrivals, std::chrono::seconds(1));
  // Starts are scheduled exactly 10 ms apart; a thread woken a few ms late can bring one extra
  // start into a 1 s window, so a little slack is allowed on the windowed count of starts. The
  // server sees them after network and scheduling delays the client does not control (under
  // ThreadSanitizer 107 in a second was seen), so at the server the long-run rate is checked
  // exactly and the windowed count with 10% slack.
  EXPECT_LE(max_started, 103) << "calls started in one second";
  const double arrival_span = duration<double>(arrivals.back() - arrivals.front()).count();
  EXPECT_GE(arrival_span, (kRequests - 1) * 60.0 / kPerMinute * 0.99);
  EXPECT_LE(max_arrived, 110) << "requests arrived at the server in one second";
  const double observed_per_minute = (kRequests - 1) / span * 60.0;
  EXPECT_LE(observed_per_minute, kPerMinute * 1.01);

  double cpu_total = 0;
  for (double c : cpu) cpu_total += c;
  const double cpu_per_request_ms = cpu_total / kRequests * 1000.0;
  std::printf(
      "[llm load] %d requests, %d in flight, limit %.0f/min: %.2f s wall, observed %.0f/min, "
      "max %d started and %d arrived in any 1 s window; client CPU %.3f ms per request "
      "(%.3f s over %d threads)\n",
      kRequests, kInFlight, kPerMinute, elapsed, observed_per_minute, max_started, max_arrived,
      cpu_per_request_ms, cpu_total, kInFlight);
  RecordProperty("client_cpu_us_per_request", static_cast<int>(cpu_per_request_ms * 1000));
  RecordProperty("observed_per_minute", static_cast<int>(observed_per_minute));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr double kCpuBoundMs = 10.0;  // sanitizers multiply CPU time
#else
  constexpr double kCpuBoundMs = 1.0;   // the bound; typical figures are far below it
#endif
  EXPECT_LE(cpu_per_request_ms, kCpuBoundMs);
}

}  // namespace
}  // namespace kforge::llm
