#include "kforge/agent/analysis_agent.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace kforge::agent {

AnalysisAgent::AnalysisAgent(const PromptRenderer& renderer,
                             std::shared_ptr<llm::Provider> provider, LlmCallLog& log)
    : renderer_(renderer), provider_(std::move(provider)), log_(log) {}

Result<AnalysisAnswer> AnalysisAgent::Analyse(const AnalysisPromptInputs& inputs,
                                              const std::string& candidate_id,
                                              const std::string& stream,
                                              const llm::CallOptions& options) {
  auto prompt = renderer_.RenderAnalysis(inputs);
  if (!prompt) return std::unexpected(prompt.error());
  llm::Request request;
  request.messages = {llm::Message::System(prompt->system), llm::Message::User(prompt->user)};

  auto logged = log_.Call(kAnalysisAgentName, *provider_, request, stream, options);
  if (!logged) return std::unexpected(logged.error());

  AnalysisAnswer answer{
      .llm_call_id = logged->llm_call_id,
      .reused = logged->reused,
      .usage = logged->response.usage,
      .cost_usd = logged->response.cost_usd,
      .recommendations = ParseRecommendations(logged->response.text),
  };
  if (!answer.recommendations) {
    spdlog::info("analyse: answer of call {} gave no usable advice: {}", answer.llm_call_id,
                 answer.recommendations.error().message);
    return answer;
  }

  // Store the advice once per call: a resumed run finds the row already there.
  if (answer.reused) {
    auto existing = log_.store().ListRecommendations(log_.run_id());
    if (!existing) return std::unexpected(existing.error());
    if (std::ranges::any_of(*existing, [&](const store::RecommendationRecord& r) {
          return r.llm_call_id == answer.llm_call_id;
        })) {
      return answer;
    }
  }
  store::RecommendationRecord record;
  record.run_id = log_.run_id();
  record.candidate_id = candidate_id;
  record.llm_call_id = answer.llm_call_id;
  record.recommendation_json = RecommendationsToJson(*answer.recommendations);
  if (auto added = log_.store().AddRecommendation(record); !added) {
    return std::unexpected(added.error());
  }
  spdlog::info("analyse: {} recommendation(s) for candidate {}", answer.recommendations->size(),
               candidate_id);
  return answer;
}

}  // namespace kforge::agent
