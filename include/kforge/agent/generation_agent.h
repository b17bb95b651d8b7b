// GenerationAgent: asks a model for one candidate kernel and extracts its file from the answer.
//
// One Generate() is one pass step: the prompt is rendered from GenerationPromptInputs (functional:
// the previous candidate with its verdict's message and diagnostics; optimization: the best
// correct candidate and the analysis agent's recommendations; translation: a working
// implementation for another target), sent through the LlmCallLog (recorded, resumable), and the
// answer parsed with ParseCandidateAnswer. A malformed answer is not an error of Generate(): it is
// GenerationAnswer::candidate's kParse error, whose message is feedback for the next prompt.
//
// Ownership: the agent borrows the renderer and the log (both must outlive it) and shares the
// provider. Thread-safety: Generate() may be called from several threads at once.
#ifndef KFORGE_AGENT_GENERATION_AGENT_H_
#define KFORGE_AGENT_GENERATION_AGENT_H_

#include <memory>
#include <string>

#include "kforge/agent/llm_call_log.h"
#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/provider.h"
#include "kforge/llm/response.h"
#include "kforge/prompt/candidate_answer.h"
#include "kforge/prompt/generation_inputs.h"
#include "kforge/prompt/prompt_renderer.h"

namespace kforge::agent {

inline constexpr char kGenerationAgentName[] = "generation";

struct GenerationAnswer {
  std::string llm_call_id;  // the recorded call
  bool reused = false;      // answered from the store (resume)
  llm::Usage usage;
  double cost_usd = 0.0;
  std::string text;  // the model's whole answer
  // The candidate file, or a kParse error whose message is feedback for the model.
  Result<ParsedCandidate> candidate;
};

class GenerationAgent {
 public:
  GenerationAgent(const PromptRenderer& renderer, std::shared_ptr<llm::Provider> provider,
                  LlmCallLog& log);

  // Errors: a template that does not render, a failed or refused call (budget: kResourceExhausted),
  // a store failure. `stream` names the conversation (see LlmCallLog), e.g. "sample-0".
  Result<GenerationAnswer> Generate(const GenerationPromptInputs& inputs, const std::string& stream,
                                    const llm::CallOptions& options = {});

  llm::ProviderInfo provider_info() const { return provider_->Info(); }

 private:
  const PromptRenderer& renderer_;
  std::shared_ptr<llm::Provider> provider_;
  LlmCallLog& log_;
};

}  // namespace kforge::agent

#endif  // KFORGE_AGENT_GENERATION_AGENT_H_
