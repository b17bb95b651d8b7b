// Gemini generateContent provider against a local server speaking its wire format.
#include "kforge/llm/gemini.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

#include "kforge/llm/redact.h"
#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using testing::FastConfig;
using testing::TestServer;

constexpr const char* kOkBody =
    R"({"candidates":[{"content":{"parts":[{"text":"thinking...","thought":true},)"
    R"({"text":"Use shared memory."}],"role":"model"},"finishReason":"STOP","index":0}],)"
    R"("usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":5,)"
    R"("thoughtsTokenCount":40,"totalTokenCount":75},"modelVersion":"gemini-test-001"})";

TEST(GeminiProviderTest, SuccessParsesTextUsageAndKeepsTheKeyOutOfTheUrl) {
  TestServer ts;
  std::mutex mu;
  std::string body;
  std::string key;
  std::string target;
  ts.server().Post(R"(/v1beta/models/([^/]+))", [&](const httplib::Request& req,
                                                    httplib::Response& res) {
    std::lock_guard lock(mu);
    body = req.body;
    key = req.get_header_value("x-goog-api-key");
    target = req.target;
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url() + "/v1beta");
  auto provider = NewGeminiProvider(config, NewCurlTransport());

  Request request;
  Message user = Message::User("what is slow here?");
  user.parts.push_back(ContentPart::ImageBase64("image/jpeg", "/9j/4AAQ"));
  request.messages = {Message::System("you are a profiler expert"), user,
                      Message::Assistant("the loads"), Message::User("and?")};
  request.temperature = 0.5;
  request.max_tokens = 100;
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->text, "Use shared memory.");
  EXPECT_EQ(response->finish_reason, "STOP");
  EXPECT_EQ(response->model, "gemini-test-001");
  EXPECT_EQ(response->usage.input_tokens, 30);
  EXPECT_EQ(response->usage.output_tokens, 45);

  EXPECT_EQ(target, "/v1beta/models/wire-model:generateContent");
  EXPECT_EQ(target.find("key="), std::string::npos);
  EXPECT_EQ(key, "sk-test-0123456789abcdefghij");
  const json sent = json::parse(body);
  EXPECT_EQ(sent["systemInstruction"]["parts"][0]["text"], "you are a profiler expert");
  ASSERT_EQ(sent["contents"].size(), 3u);
  EXPECT_EQ(sent["contents"][0]["role"], "user");
  EXPECT_EQ(sent["contents"][0]["parts"][1]["inlineData"]["mimeType"], "image/jpeg");
  EXPECT_EQ(sent["contents"][1]["role"], "model");
  EXPECT_EQ(sent["generationConfig"]["maxOutputTokens"], 100);
  EXPECT_DOUBLE_EQ(sent["generationConfig"]["temperature"].get<double>(), 0.5);
}

TEST(GeminiProviderTest, InvalidKeyAnswerIsAPermissionErrorWithoutTheKey) {
  TestServer ts;
  std::atomic<int> hits{0};
  const std::string key = "AIzaSyA-fake-fake-fake-fake-fake-fake12";
  ts.server().Post(R"(/v1beta/models/([^/]+))", [&](const httplib::Request&,
                                                    httplib::Response& res) {
    ++hits;
    res.status = 400;
    res.set_content(json{{"error",
                          {{"code", 400},
                           {"message", "API key not valid. Please pass a valid API key. (" + key +
                                           ")"},
                           {"status", "INVALID_ARGUMENT"},
                           {"details", {{{"reason", "API_KEY_INVALID"}}}}}}}
                        .dump(),
                    "application/json");
  });
  auto provider = NewGeminiProvider(FastConfig(ts.url() + "/v1beta", key), NewCurlTransport());
  Request request;
  request.messages = {Message::User("hi")};
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(response.error().message.find(key), std::string::npos) << response.error().message;
  EXPECT_NE(response.error().message.find("TEST_API_KEY"), std::string::npos);
  EXPECT_EQ(hits.load(), 1);
}

TEST(GeminiProviderTest, KeyInAnEndpointQueryIsRedactedFromErrors) {
  // A user pasted the documented `?key=` URL form into `endpoint`; nothing listens on port 1.
  const std::string key = "AIzaSyB-endpoint-secret-0123456789abcd";
  auto config = FastConfig("http://127.0.0.1:1/v1beta?key=" + key, "");
  config.retry.max_attempts = 1;
  auto provider = NewGeminiProvider(config, NewCurlTransport());
  Request request;
  request.messages = {Message::User("hi")};
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().message.find(key), std::string::npos) << response.error().message;
  EXPECT_EQ(provider->Info().endpoint.find(key), std::string::npos);
}

TEST(GeminiProviderTest, ImageUrlsAreRefusedWithAClearMessage) {
  auto provider = NewGeminiProvider(FastConfig("http://127.0.0.1:1/v1beta"), NewCurlTransport());
  Request request;
  Message user = Message::User("look");
  user.parts.push_back(ContentPart::ImageUrl("https://example.com/a.png"));
  request.messages = {user};
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(response.error().message.find("inline data"), std::string::npos);
}

}  // namespace
}  // namespace kforge::llm
