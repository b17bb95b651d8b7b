// OpenAI Chat Completions and OpenAI-compatible providers against local wire-format servers:
// success and usage, streaming, error bodies, retries, timeouts, truncation, cancellation.
#include "kforge/llm/openai.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "kforge/llm/redact.h"
#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FastConfig;
using testing::TestServer;
using Clock = std::chrono::steady_clock;

constexpr const char* kOkBody =
    R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-2025-01-01",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},)"
    R"("finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,)"
    R"("total_tokens":15}})";

Request SimpleRequest() {
  Request r;
  r.messages = {Message::System("be brief"), Message::User("hi")};
  r.temperature = 0.2;
  r.max_tokens = 50;
  r.stop = {"END"};
  return r;
}

long ElapsedMs(Clock::time_point start) {
  return static_cast<long>(
      std::chrono::duration_cast<milliseconds>(Clock::now() - start).count());
}

// Records what arrived and counts requests.
struct Seen {
  std::mutex mu;
  std::string body;
  std::string authorization;
  std::string path;
  std::atomic<int> hits{0};
};

TEST(OpenAiProviderTest, SuccessParsesTextUsageAndSendsTheWireFormat) {
  TestServer ts;
  Seen seen;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(seen.mu);
    seen.body = req.body;
    seen.authorization = req.get_header_value("Authorization");
    ++seen.hits;
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url() + "/v1");
  config.pricing = Pricing{2.0, 8.0};
  auto provider = NewOpenAiProvider(config, NewCurlTransport());

  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->text, "Hello there");
  EXPECT_EQ(response->finish_reason, "stop");
  EXPECT_EQ(response->model, "gpt-test-2025-01-01");
  EXPECT_EQ(response->usage.input_tokens, 12);
  EXPECT_EQ(response->usage.output_tokens, 3);
  EXPECT_FALSE(response->usage.estimated);
  EXPECT_DOUBLE_EQ(response->cost_usd, (12 * 2.0 + 3 * 8.0) / 1e6);
  EXPECT_EQ(response->raw_body, kOkBody);
  EXPECT_EQ(response->attempts, 1);

  const json sent = json::parse(seen.body);
  EXPECT_EQ(seen.authorization, "Bearer sk-test-0123456789abcdefghij");
  EXPECT_EQ(sent["model"], "wire-model");
  EXPECT_EQ(sent["messages"][0]["role"], "system");
  EXPECT_EQ(sent["messages"][0]["content"], "be brief");
  EXPECT_EQ(sent["messages"][1]["role"], "user");
  EXPECT_EQ(sent["messages"][1]["content"], "hi");
  EXPECT_EQ(sent["max_completion_tokens"], 50);
  EXPECT_DOUBLE_EQ(sent["temperature"].get<double>(), 0.2);
  EXPECT_EQ(sent["stop"], json::array({"END"}));
  EXPECT_FALSE(sent.contains("stream"));
}

TEST(OpenAiProviderTest, ImagesAreSentAsDataUrlsAndRefusedForNonVisionModels) {
  TestServer ts;
  Seen seen;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(seen.mu);
    seen.body = req.body;
    ++seen.hits;
    res.set_content(kOkBody, "application/json");
  });
  Request request;
  Message user = Message::User("what does this profile show?");
  user.parts.push_back(ContentPart::ImageBase64("image/png", "iVBORw0KGgo="));
  request.messages = {user};

  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  ASSERT_TRUE(provider->Complete(request, CallOptions{}).has_value());
  const json sent = json::parse(seen.body);
  EXPECT_EQ(sent["messages"][0]["content"][0]["type"], "text");
  EXPECT_EQ(sent["messages"][0]["content"][1]["type"], "image_url");
  EXPECT_EQ(sent["messages"][0]["content"][1]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo=");

  auto config = FastConfig(ts.url() + "/v1");
  config.vision = false;
  auto blind = NewOpenAiProvider(config, NewCurlTransport());
  auto refused = blind->Complete(request, CallOptions{});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("vision"), std::string::npos);
  EXPECT_EQ(seen.hits.load(), 1);
}

TEST(OpenAiCompatibleProviderTest, NoKeyMeansNoAuthorizationAndMaxTokens) {
  TestServer ts;
  Seen seen;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(seen.mu);
    seen.body = req.body;
    seen.authorization = req.has_header("Authorization") ? "present" : "";
    res.set_content(
        R"({"model":"qwen","choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]})",
        "application/json");
  });
  auto provider =
      NewOpenAiCompatibleProvider(FastConfig(ts.url() + "/v1", /*api_key=*/""), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->text, "ok");
  EXPECT_TRUE(response->usage.estimated);  // this server reports no usage
  EXPECT_GT(response->usage.input_tokens, 0);
  EXPECT_EQ(seen.authorization, "");
  const json sent = json::parse(seen.body);
  EXPECT_EQ(sent["max_tokens"], 50);
  EXPECT_FALSE(sent.contains("max_completion_tokens"));
}

std::string SseEvent(const json& chunk) { return "data: " + chunk.dump() + "\n\n"; }

std::string StreamBody(bool with_done) {
  std::string body;
  body += SseEvent({{"model", "vllm-model"},
                    {"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}}}}}}});
  for (const char* piece : {"Hel", "lo ", "world"}) {
    body += SseEvent(
        {{"model", "vllm-model"}, {"choices", {{{"index", 0}, {"delta", {{"content", piece}}}}}}});
  }
  body += SseEvent({{"model", "vllm-model"},
                    {"choices", {{{"index", 0}, {"delta", json::object()}, {"finish_reason", "stop"}}}}});
  body += SseEvent({{"model", "vllm-model"},
                    {"choices", json::array()},
                    {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3}}}});
  if (with_done) body += "data: [DONE]\n\n";
  return body;
}

void ServeStream(TestServer& ts, bool with_done, Seen* seen) {
  ts.server().Post("/v1/chat/completions", [=](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(seen->mu);
      seen->body = req.body;
    }
    auto body = std::make_shared<std::string>(StreamBody(with_done));
    res.set_chunked_content_provider(
        "text/event-stream", [body](size_t offset, httplib::DataSink& sink) {
          // One event per chunk, with a pause, as a real server streams tokens.
          const std::size_t end = body->find("\n\n", offset);
          const std::size_t stop = end == std::string::npos ? body->size() : end + 2;
          std::this_thread::sleep_for(milliseconds(5));
          sink.write(body->data() + offset, stop - offset);
          if (stop >= body->size()) sink.done();
          return true;
        });
  });
}

TEST(OpenAiCompatibleProviderTest, StreamsServerSentEvents) {
  TestServer ts;
  Seen seen;
  ServeStream(ts, /*with_done=*/true, &seen);
  auto config = FastConfig(ts.url() + "/v1", "");
  config.stream = true;
  auto provider = NewOpenAiCompatibleProvider(config, NewCurlTransport());

  std::vector<std::string> pieces;
  CallOptions options;
  options.on_text = [&](std::string_view text) { pieces.emplace_back(text); };
  auto response = provider->Complete(SimpleRequest(), options);
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->text, "Hello world");
  EXPECT_EQ(response->finish_reason, "stop");
  EXPECT_EQ(response->model, "vllm-model");
  EXPECT_EQ(response->usage.input_tokens, 7);
  EXPECT_EQ(response->usage.output_tokens, 3);
  EXPECT_FALSE(response->usage.estimated);
  EXPECT_EQ(response->raw_body, StreamBody(true));
  EXPECT_EQ(pieces, (std::vector<std::string>{"Hel", "lo ", "world"}));
  const json sent = json::parse(seen.body);
  EXPECT_EQ(sent["stream"], true);
  EXPECT_EQ(sent["stream_options"]["include_usage"], true);
}

TEST(OpenAiCompatibleProviderTest, StreamWithoutDoneIsReportedTruncated) {
  TestServer ts;
  Seen seen;
  ServeStream(ts, /*with_done=*/false, &seen);
  auto config = FastConfig(ts.url() + "/v1", "");
  config.stream = true;
  auto provider = NewOpenAiCompatibleProvider(config, NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kParse);
  EXPECT_NE(response.error().message.find("truncated"), std::string::npos)
      << response.error().message;
}

TEST(OpenAiProviderTest, TruncatedJsonBodyIsDetected) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_content(R"({"id":"x","choices":[{"message":{"content":"Hel)", "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kParse);
  EXPECT_NE(response.error().message.find("truncated"), std::string::npos)
      << response.error().message;
  EXPECT_NE(response.error().message.find("test-model"), std::string::npos);
  EXPECT_EQ(hits.load(), 1);
}

TEST(OpenAiProviderTest, WellFormedJsonOfTheWrongShapeIsMalformed) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"choices":[]})", "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kParse);
  EXPECT_NE(response.error().message.find("choices[0]"), std::string::npos);
}

TEST(OpenAiProviderTest, ConnectionClosedMidBodyIsRetriedThenReportedTruncated) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_content_provider(
        1000, "application/json", [](size_t offset, size_t, httplib::DataSink& sink) {
          if (offset > 0) return false;  // drop the connection after 20 of 1000 bytes
          sink.write(kOkBody, 20);
          return true;
        });
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(response.error().message.find("truncated"), std::string::npos)
      << response.error().message;
  EXPECT_EQ(hits.load(), 4);  // FastConfig allows 4 attempts
}

TEST(OpenAiProviderTest, BadRequestIsNotRetriedAndQuotesTheApiMessage) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 400;
    res.set_content(R"({"error":{"message":"Invalid value for 'temperature': must be <= 2.",)"
                    R"("type":"invalid_request_error","param":"temperature","code":null}})",
                    "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kInvalidArgument);
  const std::string& m = response.error().message;
  EXPECT_NE(m.find("400"), std::string::npos) << m;
  EXPECT_NE(m.find("Invalid value for 'temperature'"), std::string::npos) << m;
  EXPECT_NE(m.find("not retried"), std::string::npos) << m;
  EXPECT_EQ(hits.load(), 1);
}

TEST(OpenAiProviderTest, BadKeyIsNotRetriedNamesTheVariableAndNeverShowsTheKey) {
  TestServer ts;
  std::atomic<int> hits{0};
  const std::string key = "sk-proj-ZYXWVU9876543210abcdefgh";
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    ++hits;
    // The real API echoes (part of) the key; this server echoes all of it, and the header too.
    res.status = 401;
    res.set_content(json{{"error",
                          {{"message", "Incorrect API key provided: " + key + " (sent as " +
                                           req.get_header_value("Authorization") + ")"},
                           {"type", "invalid_request_error"},
                           {"code", "invalid_api_key"}}}}
                        .dump(),
                    "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1", key), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kPermissionDenied);
  const std::string& m = response.error().message;
  EXPECT_NE(m.find("401"), std::string::npos) << m;
  EXPECT_NE(m.find("TEST_API_KEY"), std::string::npos) << m;
  EXPECT_NE(m.find("refused"), std::string::npos) << m;
  EXPECT_EQ(m.find(key), std::string::npos) << m;
  EXPECT_EQ(m.find("ZYXWVU98765"), std::string::npos) << m;
  EXPECT_EQ(hits.load(), 1);
}

TEST(OpenAiProviderTest, RegisteredKeyOfAnyShapeIsRedactedFromErrors) {
  TestServer ts;
  const std::string key = "gateway-token-Q1W2E3R4T5Y6";  // no well-known prefix
  RegisterSecret(key);
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 403;
    res.set_content("forbidden for token " + key, "text/plain");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1", key), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(response.error().message.find(key), std::string::npos) << response.error().message;
  EXPECT_NE(response.error().message.find(std::string(kRedacted)), std::string::npos);
}

TEST(OpenAiProviderTest, TooManyRequestsHonoursRetryAfter) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    if (hits++ == 0) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(R"({"error":{"message":"Rate limit reached","type":"requests"}})",
                      "application/json");
      return;
    }
    res.set_content(kOkBody, "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  const long elapsed = ElapsedMs(start);
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->attempts, 2);
  EXPECT_GE(elapsed, 1000);  // the backoff alone would have been ~10 ms
  EXPECT_LT(elapsed, 2500);
}

TEST(OpenAiProviderTest, ExhaustedQuotaIsNotRetried) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 429;
    res.set_content(R"({"error":{"message":"You exceeded your current quota",)"
                    R"("type":"insufficient_quota","code":"insufficient_quota"}})",
                    "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(response.error().message.find("quota"), std::string::npos);
  EXPECT_EQ(hits.load(), 1);
}

TEST(OpenAiProviderTest, ServerErrorsAreRetried) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    const int n = hits++;
    if (n == 0) {
      res.status = 500;
      res.set_content(R"({"error":{"message":"internal"}})", "application/json");
    } else if (n == 1) {
      res.status = 503;
      res.set_content("upstream unavailable", "text/plain");
    } else {
      res.set_content(kOkBody, "application/json");
    }
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->attempts, 3);
  EXPECT_EQ(hits.load(), 3);
}

TEST(OpenAiProviderTest, PersistentServerErrorsGiveUpAfterMaxAttempts) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 503;
    res.set_content(R"({"error":{"message":"The server is overloaded"}})", "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(response.error().message.find("after 4 attempts"), std::string::npos)
      << response.error().message;
  EXPECT_EQ(hits.load(), 4);
}

TEST(OpenAiProviderTest, SlowResponsePastTheReadTimeoutFails) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(milliseconds(1200));
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url() + "/v1");
  config.read_timeout = milliseconds(300);
  config.retry.max_attempts = 1;
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  const long elapsed = ElapsedMs(start);
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout);
  EXPECT_NE(response.error().message.find("read timeout"), std::string::npos)
      << response.error().message;
  EXPECT_GE(elapsed, 300);
  EXPECT_LT(elapsed, 1000);
}

// Nothing listens there: backing off for seconds (11 s with the default policy) only delays the
// message. The failure is still kUnavailable (a run pauses on it and can be resumed).
TEST(OpenAiProviderTest, ConnectionRefusedIsReportedAtOnceWithoutRetrying) {
  auto config = FastConfig("http://127.0.0.1:1/v1");
  config.retry.initial_backoff = milliseconds(1000);
  config.retry.max_backoff = milliseconds(1000);
  auto provider = NewOpenAiProvider(config, NewCurlTransport());
  const auto start = Clock::now();
  auto response = provider->Complete(SimpleRequest(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_LT(ElapsedMs(start), 900);
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(response.error().message.find("cannot connect to http://127.0.0.1:1/v1"),
            std::string::npos)
      << response.error().message;
  EXPECT_NE(response.error().message.find("not retried: is the server running"),
            std::string::npos)
      << response.error().message;
}

TEST(OpenAiProviderTest, CancellationEndsAnInFlightCall) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(milliseconds(1200));
    res.set_content(kOkBody, "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  CallOptions options;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    options.cancel.Cancel();
  });
  const auto start = Clock::now();
  auto response = provider->Complete(SimpleRequest(), options);
  const long elapsed = ElapsedMs(start);
  canceller.join();
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kCancelled);
  EXPECT_LT(elapsed, 600);
}

TEST(OpenAiProviderTest, CancellationEndsTheWaitBeforeARetry) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 429;
    res.set_header("Retry-After", "30");
    res.set_content("slow down", "text/plain");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  CallOptions options;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(150));
    options.cancel.Cancel();
  });
  const auto start = Clock::now();
  auto response = provider->Complete(SimpleRequest(), options);
  canceller.join();
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kCancelled);
  EXPECT_LT(ElapsedMs(start), 1000);
}

TEST(OpenAiProviderTest, DeadlineLimitsTheWholeCall) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(milliseconds(1200));
    res.set_content(kOkBody, "application/json");
  });
  auto provider = NewOpenAiProvider(FastConfig(ts.url() + "/v1"), NewCurlTransport());
  CallOptions options;
  options.deadline = Clock::now() + milliseconds(200);
  const auto start = Clock::now();
  auto response = provider->Complete(SimpleRequest(), options);
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout);
  EXPECT_LT(ElapsedMs(start), 700);
}

}  // namespace
}  // namespace kforge::llm
