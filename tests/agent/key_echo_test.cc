// A model that echoes the API key inside a successful answer: the key must not reach the run
// store, the candidate file, the next prompt or the cassette. The provider is built from a
// registry entry (as `kforge run` builds it) against a local OpenAI-compatible server.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../llm/test_server.h"
#include "../store/scratch_dir.h"
#include "kforge/agent/generation_agent.h"
#include "kforge/agent/llm_call_log.h"
#include "kforge/core/files.h"
#include "kforge/llm/cassette.h"
#include "kforge/llm/provider_factory.h"
#include "kforge/llm/redact.h"
#include "kforge/llm/registry.h"
#include "kforge/store/run_store.h"

namespace kforge::agent {
namespace {

namespace fs = std::filesystem;

// Shaped like no known key, so only its registration can catch it.
constexpr char kKey[] = "kfq7-Echoed-Secret-Value-93xZ";

std::string Everything(const fs::path& dir) {
  std::string all;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    auto text = ReadFile(entry.path());
    if (text) all += *text;
  }
  return all;
}

TEST(KeyEchoTest, AKeyEchoedInAnAnswerReachesNoStoreCandidatePromptOrCassette) {
  llm::testing::TestServer server;
  server.server().Post("/v1/chat/completions", [](const httplib::Request& req,
                                                  httplib::Response& res) {
    // The model quotes the key it was called with inside its kernel.
    std::string key = req.get_header_value("Authorization").substr(7);
    nlohmann::json body = {
        {"model", "echo"},
        {"choices",
         {{{"message",
            {{"content",
              "```cpp\n#include \"kforge_kernel.h\"\n// called with " + key +
                  "\nextern \"C\" int kforge_forward(void) { return 0; }\n```\n"}}},
           {"finish_reason", "stop"}}}},
        {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 10}}}};
    res.set_content(body.dump(), "application/json");
  });
  auto registry = llm::ModelRegistry();
  ASSERT_TRUE(registry.AddToml(R"([[models]]
id = "echo"
provider = "openai_compatible"
endpoint = ")" + server.url() + R"(/v1"
api_key_env = "ECHO_KEY"
)",
                               "test.toml"));
  llm::ProviderFactoryOptions options;
  options.get_env = [](const std::string&) { return std::optional<std::string>(kKey); };
  auto provider = llm::NewProviderForModel(*registry.Find("echo"), options);
  ASSERT_TRUE(provider) << provider.error().message;

  store::ScratchDir dir;
  auto store = store::RunStore::Open(dir.path() / "run");
  ASSERT_TRUE(store);
  store::RunRecord run;
  run.id = "run-1";
  run.kind = store::RunKind::kRun;
  ASSERT_TRUE((*store)->AddRun(run));
  auto writer = llm::CassetteWriter::Create(dir.path() / "calls.cassette.jsonl");
  ASSERT_TRUE(writer);
  std::shared_ptr<llm::Provider> recorded = llm::NewRecordingProvider(*provider, *writer);

  LlmCallLog log(**store, "run-1", nullptr);
  PromptRenderer renderer(fs::path(KFORGE_SOURCE_HOME) / "templates");
  GenerationAgent agent(renderer, recorded, log);
  GenerationPromptInputs inputs;
  inputs.task.id = "t";
  inputs.task.name = "t";
  inputs.task.source =
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
      "def get_inputs():\n    return [torch.rand(4)]\ndef get_init_inputs():\n    return []\n";
  inputs.target = *Target::Parse("cpu/cpp");
  auto first = agent.Generate(inputs, "sample-0");
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(first->candidate) << first->candidate.error().message;
  EXPECT_EQ(first->candidate->source.find(kKey), std::string::npos) << first->candidate->source;
  EXPECT_NE(first->candidate->source.find(llm::kRedacted), std::string::npos);
  ASSERT_TRUE(WriteFile(dir.path() / "run" / "kernel.cpp", first->candidate->source));

  // The next prompt carries the previous candidate back to the model (and into the cassette).
  inputs.previous = PreviousCandidate{.file_name = first->candidate->file_name,
                                      .source = first->candidate->source,
                                      .status = "mismatch",
                                      .diagnostics = "output 0 differs",
                                      .timing = ""};
  auto second = agent.Generate(inputs, "sample-0");
  ASSERT_TRUE(second) << second.error().message;

  const std::string stored = Everything(dir.path());
  EXPECT_EQ(stored.find(kKey), std::string::npos)
      << "the key reached the store, a candidate file or the cassette";
}

}  // namespace
}  // namespace kforge::agent
