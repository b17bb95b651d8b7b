// Keys never printed: every error text that leaves the LLM layer is redacted, whatever its path
// (HTTP error bodies, a stream's error event, a transport failure, the retry log line), for every
// provider; and an answer that echoes the key does not carry it on. The key is shaped like no
// known credential, so only its registration (which every HTTP provider does) can catch it.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kforge/llm/anthropic.h"
#include "kforge/llm/gemini.h"
#include "kforge/llm/openai.h"
#include "kforge/llm/provider_factory.h"
#include "kforge/llm/redact.h"
#include "kforge/llm/registry.h"
#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using testing::FastConfig;
using testing::TestServer;

constexpr char kKey[] = "kfq7-Distinct-Key-Value-5521";

bool Leaks(const std::string& text) { return text.find(kKey) != std::string::npos; }

Request Hello() {
  Request r;
  r.messages = {Message::User("hi")};
  return r;
}

struct Wire {
  std::string name;
  std::string path;      // route on the server
  std::string endpoint;  // appended to the server URL
  std::function<std::unique_ptr<Provider>(HttpProviderConfig)> make;
  std::function<std::string(const std::string& text)> ok_body;
};

std::vector<Wire> Wires() {
  return {
      {"openai", "/v1/chat/completions", "/v1",
       [](HttpProviderConfig c) { return NewOpenAiProvider(std::move(c), NewCurlTransport()); },
       [](const std::string& text) {
         return json{{"model", "m"},
                     {"choices", {{{"message", {{"content", text}}}, {"finish_reason", "stop"}}}},
                     {"usage", {{"prompt_tokens", 1}, {"completion_tokens", 1}}}}
             .dump();
       }},
      {"anthropic", "/v1/messages", "",
       [](HttpProviderConfig c) { return NewAnthropicProvider(std::move(c), NewCurlTransport()); },
       [](const std::string& text) {
         return json{{"model", "m"},
                     {"content", {{{"type", "text"}, {"text", text}}}},
                     {"stop_reason", "end_turn"},
                     {"usage", {{"input_tokens", 1}, {"output_tokens", 1}}}}
             .dump();
       }},
      {"gemini", R"(/v1beta/models/([^/]+))", "/v1beta",
       [](HttpProviderConfig c) { return NewGeminiProvider(std::move(c), NewCurlTransport()); },
       [](const std::string& text) {
         return json{{"candidates",
                      {{{"content", {{"parts", {{{"text", text}}}}}}, {"finishReason", "STOP"}}}},
                     {"usageMetadata", {{"promptTokenCount", 1}, {"candidatesTokenCount", 1}}}}
             .dump();
       }},
  };
}

// The failure mode of the issue: an error event of a stream that quotes the key was printed in
// clear by `kforge run` and `kforge bench`.
TEST(KeyRedactionTest, AStreamErrorEventQuotingTheKeyIsRedacted) {
  TestServer ts;
  ts.server().Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("data: " +
                        json{{"error", {{"message", std::string("upstream failure for key ") +
                                                        kKey}}}}
                            .dump() +
                        "\n\n",
                    "text/event-stream");
  });
  auto config = FastConfig(ts.url() + "/v1", kKey);
  config.stream = true;
  auto provider = NewOpenAiCompatibleProvider(config, NewCurlTransport());
  auto response = provider->Complete(Hello(), CallOptions{});
  ASSERT_FALSE(response.has_value());
  EXPECT_FALSE(Leaks(response.error().message)) << response.error().message;
  EXPECT_NE(response.error().message.find("upstream failure for key [REDACTED]"),
            std::string::npos)
      << response.error().message;
}

TEST(KeyRedactionTest, ErrorBodiesOfEveryProviderAreRedacted) {
  for (const Wire& wire : Wires()) {
    for (int status : {400, 401, 403, 404, 422, 500, 529}) {
      TestServer ts;
      ts.server().Post(wire.path, [status](const httplib::Request&, httplib::Response& res) {
        res.status = status;
        res.set_content(json{{"error", {{"message", std::string("bad key ") + kKey}}}}.dump(),
                        "application/json");
      });
      auto config = FastConfig(ts.url() + wire.endpoint, kKey);
      config.retry.max_attempts = 2;
      auto response = wire.make(config)->Complete(Hello(), CallOptions{});
      ASSERT_FALSE(response.has_value()) << wire.name << " " << status;
      EXPECT_FALSE(Leaks(response.error().message))
          << wire.name << " " << status << ": " << response.error().message;
    }
    // A body that is not the API's JSON (a proxy's page), and a 2xx body of the wrong shape.
    for (int status : {502, 200}) {
      TestServer ts;
      ts.server().Post(wire.path, [status](const httplib::Request&, httplib::Response& res) {
        res.status = status;
        res.set_content(std::string("<html>gateway saw key ") + kKey + "</html>", "text/html");
      });
      auto config = FastConfig(ts.url() + wire.endpoint, kKey);
      config.retry.max_attempts = 1;
      auto response = wire.make(config)->Complete(Hello(), CallOptions{});
      ASSERT_FALSE(response.has_value()) << wire.name;
      EXPECT_FALSE(Leaks(response.error().message)) << wire.name << ": " << response.error().message;
    }
  }
}

TEST(KeyRedactionTest, AnAnswerEchoingTheKeyIsCleanedForEveryProvider) {
  for (const Wire& wire : Wires()) {
    TestServer ts;
    ts.server().Post(wire.path, [&wire](const httplib::Request&, httplib::Response& res) {
      res.set_content(wire.ok_body(std::string("```cpp\n// made with ") + kKey + "\n```"),
                      "application/json");
    });
    auto response =
        wire.make(FastConfig(ts.url() + wire.endpoint, kKey))->Complete(Hello(), CallOptions{});
    ASSERT_TRUE(response.has_value()) << wire.name << ": " << response.error().message;
    EXPECT_FALSE(Leaks(response->text)) << wire.name << ": " << response->text;
    EXPECT_NE(response->text.find("// made with [REDACTED]"), std::string::npos) << wire.name;
    EXPECT_FALSE(Leaks(response->raw_body)) << wire.name;
  }
}

// A transport that fails with whatever it was given: the registry-built provider's outer layer
// redacts it (and the retry log line does too).
class EchoingTransport : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request, const CallOptions&) override {
    std::string key;
    for (const auto& [name, value] : request.headers) {
      if (name == "Authorization") key = value;
    }
    return Unavailable("proxy refused " + key);
  }
};

TEST(KeyRedactionTest, EveryErrorOfARegistryBuiltProviderAndItsRetryLogLinesAreRedacted) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.AddToml(R"([[models]]
id = "m"
provider = "openai"
endpoint = "http://127.0.0.1:9/v1"
api_key_env = "M_KEY"
max_attempts = 2
)",
                               "test.toml"));
  ProviderFactoryOptions options;
  options.transport = std::make_shared<EchoingTransport>();
  options.get_env = [](const std::string&) { return std::optional<std::string>(kKey); };
  auto provider = NewProviderForModel(*registry.Find("m"), options);
  ASSERT_TRUE(provider) << provider.error().message;

  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  auto response = (*provider)->Complete(Hello(), CallOptions{});
  spdlog::set_default_logger(previous);
  ASSERT_FALSE(response.has_value());
  EXPECT_FALSE(Leaks(response.error().message)) << response.error().message;
  EXPECT_NE(log.str().find("retrying"), std::string::npos) << log.str();
  EXPECT_FALSE(Leaks(log.str())) << log.str();
}

}  // namespace
}  // namespace kforge::llm
