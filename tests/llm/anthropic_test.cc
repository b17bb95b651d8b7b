// Anthropic Messages provider against a local server speaking its wire format.
#include "kforge/llm/anthropic.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using testing::FastConfig;
using testing::TestServer;

constexpr const char* kOkBody =
    R"({"id":"msg_01","type":"message","role":"assistant","model":"claude-test-20250101",)"
    R"("content":[{"type":"thinking","thinking":"hmm","signature":"x"},)"
    R"({"type":"text","text":"Hello"},{"type":"text","text":" world"}],)"
    R"("stop_reason":"end_turn","stop_sequence":null,)"
    R"("usage":{"input_tokens":20,"cache_creation_input_tokens":5,)"
    R"("cache_read_input_tokens":100,"output_tokens":4}})";

TEST(AnthropicProviderTest, SuccessParsesTextUsageAndSendsTheWireFormat) {
  TestServer ts;
  std::mutex mu;
  std::string body;
  std::string key;
  std::string version;
  ts.server().Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    body = req.body;
    key = req.get_header_value("x-api-key");
    version = req.get_header_value("anthropic-version");
    res.set_content(kOkBody, "application/json");
  });
  auto config = FastConfig(ts.url());
  config.pricing = Pricing{3.0, 15.0};
  auto provider = NewAnthropicProvider(config, NewCurlTransport());

  Request request;
  Message user = Message::User("describe");
  user.parts.push_back(ContentPart::ImageBase64("image/png", "iVBORw0KGgo="));
  request.messages = {Message::System("rule one"), Message::System("rule two"), user,
                      Message::Assistant("ok"), Message::User("go on")};
  request.stop = {"</code>"};
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->text, "Hello world");
  EXPECT_EQ(response->finish_reason, "end_turn");
  EXPECT_EQ(response->model, "claude-test-20250101");
  EXPECT_EQ(response->usage.input_tokens, 125);
  EXPECT_EQ(response->usage.output_tokens, 4);
  EXPECT_DOUBLE_EQ(response->cost_usd, (125 * 3.0 + 4 * 15.0) / 1e6);
  EXPECT_EQ(response->raw_body, kOkBody);

  EXPECT_EQ(key, "sk-test-0123456789abcdefghij");
  EXPECT_EQ(version, "2023-06-01");
  const json sent = json::parse(body);
  EXPECT_EQ(sent["model"], "wire-model");
  EXPECT_EQ(sent["max_tokens"], 4096);
  EXPECT_EQ(sent["system"], "rule one\n\nrule two");
  ASSERT_EQ(sent["messages"].size(), 3u);
  EXPECT_EQ(sent["messages"][0]["role"], "user");
  EXPECT_EQ(sent["messages"][0]["content"][0]["text"], "describe");
  EXPECT_EQ(sent["messages"][0]["content"][1]["source"]["type"], "base64");
  EXPECT_EQ(sent["messages"][0]["content"][1]["source"]["media_type"], "image/png");
  EXPECT_EQ(sent["messages"][1]["role"], "assistant");
  EXPECT_EQ(sent["stop_sequences"], json::array({"</code>"}));
  EXPECT_FALSE(sent.contains("temperature"));
}

TEST(AnthropicProviderTest, OverloadedIsRetried) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    if (hits++ < 2) {
      res.status = 529;
      res.set_content(
          R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
          "application/json");
      return;
    }
    res.set_content(kOkBody, "application/json");
  });
  auto provider = NewAnthropicProvider(FastConfig(ts.url()), NewCurlTransport());
  Request request;
  request.messages = {Message::User("hi")};
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_TRUE(response.has_value()) << response.error().ToString();
  EXPECT_EQ(response->attempts, 3);
}

TEST(AnthropicProviderTest, AuthenticationErrorIsClearAndNotRetried) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 401;
    res.set_content(R"({"type":"error","error":{"type":"authentication_error",)"
                    R"("message":"invalid x-api-key"}})",
                    "application/json");
  });
  auto provider = NewAnthropicProvider(FastConfig(ts.url()), NewCurlTransport());
  Request request;
  request.messages = {Message::User("hi")};
  auto response = provider->Complete(request, CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(response.error().message.find("authentication_error: invalid x-api-key"),
            std::string::npos)
      << response.error().message;
  EXPECT_EQ(hits.load(), 1);
}

}  // namespace
}  // namespace kforge::llm
