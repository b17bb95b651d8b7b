// The agents with a scripted provider and a real run store: every call recorded, a finished call
// answered from the store on resume, a malformed answer returned as feedback, advice stored.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "../store/scratch_dir.h"
#include "kforge/agent/analysis_agent.h"
#include "kforge/agent/generation_agent.h"
#include "kforge/agent/llm_call_log.h"
#include "kforge/core/files.h"
#include "kforge/store/run_store.h"
#include "list_provider.h"

namespace kforge::agent {
namespace {

using testing::CppAnswer;
using testing::ListProvider;

Task ReluTask() {
  Task task;
  task.id = "relu";
  task.name = "19_ReLU";
  task.origin = "test";
  task.source =
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
      "    def forward(self, x):\n        return torch.relu(x)\n\n"
      "def get_inputs():\n    return [torch.randn(4, 8)]\n\n"
      "def get_init_inputs():\n    return []\n";
  return task;
}

std::string HonestSource() {
  auto text = ReadFile(std::filesystem::path(KFORGE_SOURCE_HOME) /
                       "tests/fixtures/candidates/relu/honest.cpp");
  EXPECT_TRUE(text.has_value());
  return text ? *text : std::string();
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::RunStore::Open(dir_.path());
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    store::RunRecord run;
    run.id = "run-1";
    run.kind = store::RunKind::kRun;
    ASSERT_TRUE(store_->AddRun(run));
    inputs_.task = ReluTask();
    inputs_.target = *Target::Parse("cpu/cpp");
  }

  store::ScratchDir dir_;
  std::unique_ptr<store::RunStore> store_;
  PromptRenderer renderer_{std::filesystem::path(KFORGE_SOURCE_HOME) / "templates"};
  GenerationPromptInputs inputs_;
};

TEST_F(AgentTest, GenerationRecordsTheCallAndParsesTheCandidate) {
  auto provider = std::make_shared<ListProvider>(std::vector{CppAnswer(HonestSource())});
  auto budget = std::make_shared<llm::Budget>(llm::BudgetLimits{});
  LlmCallLog log(*store_, "run-1", budget);
  GenerationAgent agent(renderer_, provider, log);

  auto answer = agent.Generate(inputs_, "sample-0");
  ASSERT_TRUE(answer) << answer.error().message;
  ASSERT_TRUE(answer->candidate) << answer->candidate.error().message;
  EXPECT_EQ(answer->candidate->file_name, "kernel.cpp");
  EXPECT_NE(answer->candidate->source.find("kforge_forward"), std::string::npos);
  EXPECT_FALSE(answer->reused);

  auto calls = store_->ListLlmCalls("run-1");
  ASSERT_TRUE(calls);
  ASSERT_EQ(calls->size(), 1u);
  const auto& call = calls->front();
  EXPECT_EQ(call.agent, "generation");
  EXPECT_EQ(call.model_id, "scripted");
  EXPECT_EQ(call.status, store::LlmCallStatus::kOk);
  EXPECT_EQ(call.input_tokens, 1000);
  EXPECT_EQ(call.output_tokens, 500);
  EXPECT_DOUBLE_EQ(call.cost_usd, 0.01);
  EXPECT_FALSE(call.request_fingerprint.empty());
  auto prompt = store_->GetArtifact(call.prompt_hash);
  ASSERT_TRUE(prompt);
  EXPECT_NE(prompt->find("19_ReLU"), std::string::npos);
  ASSERT_TRUE(call.response_hash);
  EXPECT_EQ(*store_->GetArtifact(*call.response_hash), CppAnswer(HonestSource()));
}

TEST_F(AgentTest, MalformedAnswerIsFeedbackNotAnError) {
  auto provider = std::make_shared<ListProvider>(
      std::vector<std::string>{"I would write a loop over the elements and clamp at zero."});
  LlmCallLog log(*store_, "run-1", nullptr);
  GenerationAgent agent(renderer_, provider, log);
  auto answer = agent.Generate(inputs_, "sample-0");
  ASSERT_TRUE(answer) << answer.error().message;
  ASSERT_FALSE(answer->candidate);
  EXPECT_EQ(answer->candidate.error().code, ErrorCode::kParse);
  EXPECT_FALSE(answer->candidate.error().message.empty());
}

TEST_F(AgentTest, FailedCallIsRecordedAndReturned) {
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>{});
  LlmCallLog log(*store_, "run-1", nullptr);
  GenerationAgent agent(renderer_, provider, log);
  auto answer = agent.Generate(inputs_, "sample-0");
  ASSERT_FALSE(answer);
  auto calls = store_->ListLlmCalls("run-1");
  ASSERT_TRUE(calls);
  ASSERT_EQ(calls->size(), 1u);
  EXPECT_EQ(calls->front().status, store::LlmCallStatus::kError);
  EXPECT_FALSE(calls->front().response_hash);
}

TEST_F(AgentTest, FinishedCallIsAnsweredFromTheStoreOnResume) {
  const std::vector<std::string> answers = {CppAnswer(HonestSource()), "second answer"};
  {
    auto provider = std::make_shared<ListProvider>(answers);
    LlmCallLog log(*store_, "run-1", nullptr);
    GenerationAgent agent(renderer_, provider, log);
    ASSERT_TRUE(agent.Generate(inputs_, "sample-0"));
    EXPECT_EQ(provider->calls(), 1);
  }
  // A fresh process: same request on the same stream is reused; a second identical request and
  // another stream are new calls.
  auto provider = std::make_shared<ListProvider>(std::vector<std::string>{"x", "y"});
  auto budget = std::make_shared<llm::Budget>(llm::BudgetLimits{});
  LlmCallLog log(*store_, "run-1", budget);
  GenerationAgent agent(renderer_, provider, log);
  auto first = agent.Generate(inputs_, "sample-0");
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->reused);
  EXPECT_EQ(first->text, answers[0]);
  EXPECT_EQ(provider->calls(), 0);
  EXPECT_EQ(budget->Spent().input_tokens, 1000);  // a resumed budget counts what was spent

  auto repeat = agent.Generate(inputs_, "sample-0");
  ASSERT_TRUE(repeat);
  EXPECT_FALSE(repeat->reused);
  auto other = agent.Generate(inputs_, "sample-1");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->reused);
  EXPECT_EQ(provider->calls(), 2);
  EXPECT_EQ(store_->ListLlmCalls("run-1")->size(), 3u);
}

TEST_F(AgentTest, AnalysisStoresRecommendationsOncePerCall) {
  const std::string advice =
      "The kernel is bound by memory.\n```json\n{\"recommendations\": [{\"bottleneck\": "
      "\"DRAM bandwidth\", \"evidence\": \"one load and one store per element\", \"changes\": "
      "[\"vectorise the loop\"], \"expected_gain\": \"1.2x\"}]}\n```\n";
  // The analysed candidate must exist in the store.
  store::TaskRecord task;
  task.run_id = "run-1";
  task.name = "19_ReLU";
  task.source_hash = *store_->PutArtifact("src");
  auto task_row = store_->AddTask(task);
  ASSERT_TRUE(task_row);
  store::CandidateRecord cand;
  cand.run_id = "run-1";
  cand.task_id = task_row->id;
  cand.target = "cpu/cpp";
  cand.source_hash = *store_->PutArtifact(HonestSource());
  auto cand_row = store_->AddCandidate(cand);
  ASSERT_TRUE(cand_row);

  AnalysisPromptInputs in;
  in.task = ReluTask();
  in.target = *Target::Parse("cpu/cpp");
  in.candidate_file_name = "kernel.cpp";
  in.candidate_source = HonestSource();
  for (int round = 0; round < 2; ++round) {
    auto provider = std::make_shared<ListProvider>(std::vector{advice}, "analyst");
    LlmCallLog log(*store_, "run-1", nullptr);
    AnalysisAgent agent(renderer_, provider, log);
    auto answer = agent.Analyse(in, cand_row->id, "sample-0");
    ASSERT_TRUE(answer) << answer.error().message;
    ASSERT_TRUE(answer->recommendations) << answer->recommendations.error().message;
    ASSERT_EQ(answer->recommendations->size(), 1u);
    EXPECT_EQ(answer->recommendations->front().bottleneck, "DRAM bandwidth");
    EXPECT_EQ(answer->reused, round == 1);
  }
  auto recs = store_->ListRecommendations("run-1");
  ASSERT_TRUE(recs);
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ(recs->front().candidate_id, cand_row->id);
  auto calls = store_->ListLlmCalls("run-1");
  ASSERT_EQ(calls->size(), 1u);
  EXPECT_EQ(calls->front().agent, "analysis");
  EXPECT_EQ(calls->front().model_id, "analyst");
}

}  // namespace
}  // namespace kforge::agent
