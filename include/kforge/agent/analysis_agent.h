// AnalysisAgent: reads a correct candidate, its numbers (a compact profile summary when one
// exists, else the verdict's timings) and the device facts, and returns structured
// recommendations (bottleneck, evidence, changes, expected gain) for the next optimization pass.
//
// It may use another model than the generation agent (`--analysis-model`). Every call goes
// through the LlmCallLog; the parsed recommendations are stored as one recommendations row about
// the analysed candidate (once per call: a resumed run does not add it again). An answer that
// does not parse is AnalysisAnswer::recommendations' kParse error, not an error of Analyse().
//
// Ownership: borrows the renderer and the log; shares the provider. Thread-safe.
#ifndef KFORGE_AGENT_ANALYSIS_AGENT_H_
#define KFORGE_AGENT_ANALYSIS_AGENT_H_

#include <memory>
#include <string>
#include <vector>

#include "kforge/agent/llm_call_log.h"
#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/provider.h"
#include "kforge/llm/response.h"
#include "kforge/prompt/analysis_inputs.h"
#include "kforge/prompt/prompt_renderer.h"
#include "kforge/prompt/recommendation.h"

namespace kforge::agent {

inline constexpr char kAnalysisAgentName[] = "analysis";

struct AnalysisAnswer {
  std::string llm_call_id;
  bool reused = false;
  llm::Usage usage;
  double cost_usd = 0.0;
  // The advice, or a kParse error describing what the answer lacked.
  Result<std::vector<Recommendation>> recommendations;
};

class AnalysisAgent {
 public:
  AnalysisAgent(const PromptRenderer& renderer, std::shared_ptr<llm::Provider> provider,
                LlmCallLog& log);

  // `candidate_id` is the stored candidate the advice is about. Errors: a template that does not
  // render, a failed or refused call, a store failure.
  Result<AnalysisAnswer> Analyse(const AnalysisPromptInputs& inputs,
                                 const std::string& candidate_id, const std::string& stream,
                                 const llm::CallOptions& options = {});

 private:
  const PromptRenderer& renderer_;
  std::shared_ptr<llm::Provider> provider_;
  LlmCallLog& log_;
};

}  // namespace kforge::agent

#endif  // KFORGE_AGENT_ANALYSIS_AGENT_H_
