#include "kforge/agent/generation_agent.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace kforge::agent {

GenerationAgent::GenerationAgent(const PromptRenderer& renderer,
                                 std::shared_ptr<llm::Provider> provider, LlmCallLog& log)
    : renderer_(renderer), provider_(std::move(provider)), log_(log) {}

Result<GenerationAnswer> GenerationAgent::Generate(const GenerationPromptInputs& inputs,
                                                   const std::string& stream,
                                                   const llm::CallOptions& options) {
  auto prompt = renderer_.RenderGeneration(inputs);
  if (!prompt) return std::unexpected(prompt.error());
  llm::Request request;
  request.messages = {llm::Message::System(prompt->system), llm::Message::User(prompt->user)};

  auto logged = log_.Call(kGenerationAgentName, *provider_, request, stream, options);
  if (!logged) return std::unexpected(logged.error());

  GenerationAnswer answer{
      .llm_call_id = logged->llm_call_id,
      .reused = logged->reused,
      .usage = logged->response.usage,
      .cost_usd = logged->response.cost_usd,
      .text = logged->response.text,
      .candidate = ParseCandidateAnswer(logged->response.text, inputs.target.model),
  };
  if (!answer.candidate) {
    spdlog::info("generate: answer of call {} is malformed: {}", answer.llm_call_id,
                 answer.candidate.error().message);
  }
  return answer;
}

}  // namespace kforge::agent
