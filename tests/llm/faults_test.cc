// The HTTP providers under faults, against local servers speaking the wire formats: retries take
// rate-limit permits, provider-stated delays (Gemini RetryInfo, OpenAI x-ratelimit-reset-*) are
// honoured with the Retry-After cap, a whole-call timeout and an idle (no-progress) timeout end
// calls to servers that never answer or only trickle, and empty answers cut by the output limit
// or a content filter are failures that say so.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "kforge/llm/anthropic.h"
#include "kforge/llm/gemini.h"
#include "kforge/llm/openai.h"
#include "kforge/llm/rate_limiter.h"
#include "kforge/llm/retry.h"
#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FastConfig;
using testing::TestServer;
using Clock = std::chrono::steady_clock;

constexpr const char* kOkBody =
    R"({"model":"m","choices":[{"message":{"content":"fine"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":3,"completion_tokens":1}})";

Request Hello() {
  Request r;
  r.messages = {Message::User("hi")};
  return r;
}

long ElapsedMs(Clock::time_point start) {
  return static_cast<long>(
      std::chrono::duration_cast<milliseconds>(Clock::now() - start).count());
}

// Arrival times of the requests a server saw.
struct Arrivals {
  std::mutex mu;
  std::vector<Clock::time_point> times;
  int Add() {
    std::lock_guard lock(mu);
    times.push_back(Clock::now());
    return static_cast<int>(times.size()) - 1;
  }
  // The most requests that arrived within any window of `window`.
  int MostWithin(milliseconds window) {
    std::lock_guard lock(mu);
    int most = 0;
    for (std::size_t i = 0; i < times.size(); ++i) {
      int n = 0;
      for (std::size_t j = i; j < times.size() && times[j] - times[i] < window; ++j) ++n;
      most = std::max(most, n);
    }
    return most;
  }
  milliseconds Gap(std::size_t i) {
    std::lock_guard lock(mu);
    return std::chrono::duration_cast<milliseconds>(times.at(i) - times.at(i - 1));
  }
};

// The issue's case scaled in time: 12 requests per minute with every second request answered
// 500 let the server see 18 in one minute, because a retry went out inside its call's permit.
// Here 240 per minute (4 per second): the server must never see more than 4 in any second.
TEST(FaultsTest, EveryRequestOnTheWireTakesARateLimitPermitRetriesIncluded) {
  TestServer ts;
  Arrivals arrivals;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    if (arrivals.Add() % 2 == 1) {
      res.status = 500;
      res.set_content(R"({"error":{"message":"internal"}})", "application/json");
      return;
    }
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url() + "/v1");
  RateLimits limits;
  limits.requests_per_minute = 240;
  config.limiter = std::make_shared<RateLimiter>(limits);
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  for (int call = 0; call < 5; ++call) {
    auto response = provider->Complete(Hello(), CallOptions{});
    ASSERT_TRUE(response.has_value()) << response.error().message;
  }
  ASSERT_EQ(arrivals.times.size(), 9u);  // 5 calls, 4 of them retried once
  EXPECT_LE(arrivals.MostWithin(milliseconds(950)), 4);
  for (std::size_t i = 1; i < arrivals.times.size(); ++i) {
    EXPECT_GE(arrivals.Gap(i).count(), 225) << "request " << i << " came too soon";
  }
}

// A call waiting to retry does not hold its concurrency slot.
TEST(FaultsTest, AConcurrencySlotIsNotHeldWhileWaitingToRetry) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req,
                                               httplib::Response& res) {
    ++hits;
    if (req.body.find("first") != std::string::npos && hits.load() == 1) {
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content(R"({"error":{"message":"busy"}})", "application/json");
      return;
    }
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url() + "/v1");
  RateLimits limits;
  limits.max_concurrency = 1;
  config.limiter = std::make_shared<RateLimiter>(limits);
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  Request first;
  first.messages = {Message::User("first")};
  std::thread slow([&] { EXPECT_TRUE(provider->Complete(first, CallOptions{}).has_value()); });
  while (hits.load() == 0) std::this_thread::sleep_for(milliseconds(5));
  const auto start = Clock::now();
  ASSERT_TRUE(provider->Complete(Hello(), CallOptions{}).has_value());
  EXPECT_LT(ElapsedMs(start), 700) << "the second call waited for the first one's back-off";
  slow.join();
}

TEST(FaultsTest, ParsesTheDurationsProvidersWrite) {
  EXPECT_EQ(ParseDurationText("1m2.5s"), milliseconds(62500));
  EXPECT_EQ(ParseDurationText("250ms"), milliseconds(250));
  EXPECT_EQ(ParseDurationText("6m0s"), milliseconds(360000));
  EXPECT_EQ(ParseDurationText("25s"), milliseconds(25000));
  EXPECT_EQ(ParseDurationText("0.5s"), milliseconds(500));
  EXPECT_EQ(ParseDurationText("1h"), milliseconds(3600000));
  EXPECT_EQ(ParseDurationText("20us"), milliseconds(1));  // rounded up
  EXPECT_FALSE(ParseDurationText("").has_value());
  EXPECT_FALSE(ParseDurationText("12").has_value());
  EXPECT_FALSE(ParseDurationText("soon").has_value());
  EXPECT_FALSE(ParseDurationText("3 s").has_value());
}

HttpResponse TooMany(std::string body = "") {
  HttpResponse r;
  r.status = 429;
  r.body = std::move(body);
  return r;
}

TEST(FaultsTest, ClassifiesTheWaitsProvidersStateOutsideRetryAfter) {
  HttpResponse openai = TooMany();
  openai.headers = {{"x-ratelimit-remaining-requests", "0"},
                    {"x-ratelimit-reset-requests", "1s"},
                    {"x-ratelimit-remaining-tokens", "9000"},
                    {"x-ratelimit-reset-tokens", "6m0s"}};
  AttemptVerdict v = ClassifyHttpStatus(openai);
  EXPECT_TRUE(v.retry);
  EXPECT_EQ(v.retry_after, milliseconds(1000));  // the limit that ran out, not the longer reset
  EXPECT_EQ(v.retry_after_source, "x-ratelimit-reset-requests");

  HttpResponse tokens = TooMany();
  tokens.headers = {{"x-ratelimit-reset-requests", "120ms"}, {"x-ratelimit-reset-tokens", "1m2.5s"}};
  EXPECT_EQ(ClassifyHttpStatus(tokens).retry_after, milliseconds(62500));  // unknown: the longer

  HttpResponse both = tokens;
  both.headers.emplace_back("retry-after", "2");
  EXPECT_EQ(ClassifyHttpStatus(both).retry_after, milliseconds(2000));  // Retry-After first

  const HttpResponse gemini = TooMany(
      R"({"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED",)"
      R"("details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},)"
      R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"25s"}]}})");
  v = ClassifyHttpStatus(gemini);
  EXPECT_TRUE(v.retry);
  EXPECT_EQ(v.retry_after, milliseconds(25000));
  EXPECT_EQ(v.retry_after_source, "RetryInfo.retryDelay");
}

std::string GeminiTooMany(const std::string& delay) {
  return R"({"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED",)"
         R"("details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":")" +
         delay + R"("}]}})";
}

constexpr const char* kGeminiOk =
    R"({"candidates":[{"content":{"parts":[{"text":"fine"}]},"finishReason":"STOP"}],)"
    R"("usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}})";

// Before, KForge retried after its own back-off (10 ms here; 0.9-4.3 s by default) where
// Gemini had asked for 25 s.
TEST(FaultsTest, GeminiRetryDelayIsHonoured) {
  TestServer ts;
  Arrivals arrivals;
  ts.server().Post(R"(/v1beta/models/([^/]+))", [&](const httplib::Request&,
                                                     httplib::Response& res) {
    if (arrivals.Add() == 0) {
      res.status = 429;
      res.set_content(GeminiTooMany("1.2s"), "application/json");
      return;
    }
    res.set_content(kGeminiOk, "application/json");
  });
  auto provider = NewGeminiProvider(FastConfig(ts.url() + "/v1beta"), NewCurlTransport());
  auto response = provider->Complete(Hello(), CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().message;
  EXPECT_EQ(response->attempts, 2);
  EXPECT_GE(arrivals.Gap(1).count(), 1200);
  EXPECT_LT(arrivals.Gap(1).count(), 2500);
}

TEST(FaultsTest, OpenAiRateLimitResetHeadersAreHonoured) {
  TestServer ts;
  Arrivals arrivals;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    if (arrivals.Add() == 0) {
      res.status = 429;
      res.set_header("x-ratelimit-remaining-requests", "0");
      res.set_header("x-ratelimit-reset-requests", "1.1s");
      res.set_header("x-ratelimit-remaining-tokens", "30000");
      res.set_header("x-ratelimit-reset-tokens", "250ms");
      res.set_content(R"({"error":{"message":"Rate limit reached for requests","type":"requests"}})",
                      "application/json");
      return;
    }
    res.set_content(kOkBody, "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(Hello(), CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().message;
  EXPECT_GE(arrivals.Gap(1).count(), 1100);
  EXPECT_LT(arrivals.Gap(1).count(), 2500);
}

// A stated wait beyond the cap fails the call at once, with the message of a long Retry-After
// (naming where the wait was stated), as a transient failure: the run pauses on it.
TEST(FaultsTest, AStatedWaitLongerThanTheCapFailsAtOnceNamingIt) {
  struct Case {
    std::string path, endpoint, body, source;
    std::vector<std::pair<std::string, std::string>> headers;
  };
  const std::vector<Case> cases = {
      {R"(/v1beta/models/([^/]+))", "/v1beta", GeminiTooMany("25s"), "RetryInfo.retryDelay", {}},
      {"/v1/chat/completions", "/v1", R"({"error":{"message":"slow down","type":"tokens"}})",
       "x-ratelimit-reset-tokens",
       {{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "1m2.5s"}}},
      {"/v1/chat/completions", "/v1", R"({"error":{"message":"slow down"}})", "Retry-After",
       {{"Retry-After", "30"}}},
  };
  for (const Case& c : cases) {
    TestServer ts;
    std::atomic<int> hits{0};
    ts.server().Post(c.path, [&](const httplib::Request&, httplib::Response& res) {
      ++hits;
      res.status = 429;
      for (const auto& [name, value] : c.headers) res.set_header(name, value);
      res.set_content(c.body, "application/json");
    });
    auto config = FastConfig(ts.url() + c.endpoint);
    config.retry.max_retry_after = milliseconds(5000);
    auto provider = c.endpoint == "/v1beta" ? NewGeminiProvider(config, NewCurlTransport())
                                            : NewOpenAiProvider(config, NewCurlTransport());
    const auto start = Clock::now();
    auto response = provider->Complete(Hello(), CallOptions{});
    ASSERT_FALSE(response.has_value()) << c.source;
    EXPECT_LT(ElapsedMs(start), 1000) << c.source;
    EXPECT_EQ(hits.load(), 1) << c.source;
    EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << c.source;
    EXPECT_NE(response.error().message.find("HTTP 429 with " + c.source + " of"),
              std::string::npos)
        << response.error().message;
    EXPECT_NE(response.error().message.find("longer than the 5 s KForge waits; try again later"),
              std::string::npos)
        << response.error().message;
  }
}

// A server that never answers: before, a call waited max_attempts x read_timeout (25 min by
// default). The whole call is bounded by call_timeout.
TEST(FaultsTest, AServerThatNeverAnswersIsBoundedByTheCallTimeout) {
  TestServer ts;
  std::atomic<bool> release{false};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 100 && !release; ++i) std::this_thread::sleep_for(milliseconds(50));
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url() + "/v1");
  config.read_timeout = milliseconds(3000);
  config.call_timeout = milliseconds(800);
  config.retry.max_attempts = 5;
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(Hello(), CallOptions{});
  const long elapsed = ElapsedMs(start);
  release = true;
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout) << response.error().message;
  EXPECT_NE(response.error().message.find("call timeout of 0.8 s"), std::string::npos)
      << response.error().message;
  EXPECT_GE(elapsed, 750);
  EXPECT_LT(elapsed, 1500);
}

// Sends `byte` every `every` for `chunks` times, then `tail`. The type is one cpp-httplib does
// not compress: a compressed trickle would reach the client only when the stream ends.
void Trickle(httplib::Response& res, char byte, milliseconds every, int chunks, std::string tail,
             const char* type = "application/octet-stream") {
  auto sent = std::make_shared<int>(0);
  res.set_chunked_content_provider(
      type, [=](size_t, httplib::DataSink& sink) {
        if (*sent < chunks) {
          std::this_thread::sleep_for(every);
          const std::string one(1, byte);
          ++*sent;
          return sink.write(one.data(), one.size());
        }
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
}

// The issue's "byte every 2 s" server, scaled: a space every 150 ms is no progress, so the idle
// timeout (read_timeout) ends the attempt; before, every byte restarted it and the call hung on.
TEST(FaultsTest, KeepAliveBytesAreNoProgressForTheIdleTimeout) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    Trickle(res, ' ', milliseconds(150), 20, kOkBody);  // 3 s of spaces, then a good answer
  });
  auto config = FastConfig(ts.url() + "/v1");
  config.read_timeout = milliseconds(500);
  config.retry.max_attempts = 1;
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(Hello(), CallOptions{});
  const long elapsed = ElapsedMs(start);
  ASSERT_FALSE(response.has_value()) << "a trickle of spaces kept the call alive";
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout);
  EXPECT_NE(response.error().message.find("no progress"), std::string::npos)
      << response.error().message;
  EXPECT_LT(elapsed, 1500);
}

// A stream that only sends keep-alive comments (": ping") makes no progress either.
TEST(FaultsTest, StreamKeepAliveCommentsAreNoProgress) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    auto sent = std::make_shared<int>(0);
    res.set_chunked_content_provider("text/event-stream", [sent](size_t, httplib::DataSink& sink) {
      if (*sent < 20) {
        std::this_thread::sleep_for(milliseconds(150));
        ++*sent;
        const std::string ping = ": ping\n\n";
        return sink.write(ping.data(), ping.size());
      }
      const std::string done = "data: [DONE]\n\n";
      sink.write(done.data(), done.size());
      sink.done();
      return true;
    });
  });
  auto config = FastConfig(ts.url() + "/v1");
  config.stream = true;
  config.read_timeout = milliseconds(500);
  config.retry.max_attempts = 1;
  auto provider = NewOpenAiCompatibleProvider(config, NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(Hello(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout) << response.error().message;
  EXPECT_LT(ElapsedMs(start), 1500);
}

// Real bytes, but too slowly: each is progress, and the call timeout ends the call.
TEST(FaultsTest, ATrickleOfRealBytesIsEndedByTheCallTimeout) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    Trickle(res, '{', milliseconds(150), 30, "");
  });
  auto config = FastConfig(ts.url() + "/v1");
  config.read_timeout = milliseconds(500);
  config.call_timeout = milliseconds(1000);
  config.retry.max_attempts = 3;
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(Hello(), CallOptions{});
  const long elapsed = ElapsedMs(start);
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout) << response.error().message;
  EXPECT_GE(elapsed, 950);
  EXPECT_LT(elapsed, 1800);
}

// An answer with no text that ended at the output limit or in a content filter was returned as a
// success with empty text (the loop then called it a malformed answer).
TEST(FaultsTest, EmptyAnswersCutByTheLimitOrAFilterAreFailuresThatSayWhy) {
  struct Case {
    std::string name, path, endpoint, body, reason;
  };
  const std::vector<Case> cases = {
      {"openai length", "/v1/chat/completions", "/v1",
       R"({"model":"m","choices":[{"message":{"content":""},"finish_reason":"length"}],)"
       R"("usage":{"prompt_tokens":3,"completion_tokens":4096}})",
       "finish reason `length`"},
      {"openai filter", "/v1/chat/completions", "/v1",
       R"({"model":"m","choices":[{"message":{"content":null},"finish_reason":"content_filter"}]})",
       "finish reason `content_filter`"},
      {"anthropic max_tokens", "/v1/messages", "",
       R"({"model":"m","content":[{"type":"thinking","thinking":"long"}],"stop_reason":"max_tokens",)"
       R"("usage":{"input_tokens":3,"output_tokens":4096}})",
       "finish reason `max_tokens`"},
      {"gemini safety", R"(/v1beta/models/([^/]+))", "/v1beta",
       R"({"candidates":[{"finishReason":"SAFETY","safetyRatings":[]}],)"
       R"("usageMetadata":{"promptTokenCount":3}})",
       "finish reason `SAFETY`"},
      {"gemini max tokens", R"(/v1beta/models/([^/]+))", "/v1beta",
       R"({"candidates":[{"content":{"parts":[{"text":"","thought":false}]},)"
       R"("finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":3,)"
       R"("thoughtsTokenCount":8192}})",
       "finish reason `MAX_TOKENS`"},
  };
  for (const Case& c : cases) {
    TestServer ts;
    ts.server().Post(c.path, [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(c.body, "application/json");
    });
    auto config = FastConfig(ts.url() + c.endpoint);
    std::unique_ptr<Provider> provider =
        c.endpoint == "/v1beta" ? NewGeminiProvider(config, NewCurlTransport())
        : c.endpoint.empty()    ? NewAnthropicProvider(config, NewCurlTransport())
                                : NewOpenAiProvider(config, NewCurlTransport());
    auto response = provider->Complete(Hello(), CallOptions{});
    ASSERT_FALSE(response.has_value()) << c.name << " was a success";
    EXPECT_EQ(response.error().code, ErrorCode::kInvalidArgument) << c.name;
    EXPECT_NE(response.error().message.find("the answer is empty"), std::string::npos)
        << response.error().message;
    EXPECT_NE(response.error().message.find(c.reason), std::string::npos)
        << response.error().message;
  }
}

}  // namespace
}  // namespace kforge::llm
