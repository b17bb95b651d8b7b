// PromptRenderer: renders the generation and analysis prompts from the mustache templates under
// a templates folder (KforgeHome()/templates by default; layout in templates/README.md).
//
// Templates are read on every call, so edits to the data files take effect without a rebuild. A
// missing or malformed template is an Error naming its path. Values are inserted verbatim (no
// HTML escaping): prompts carry code.
//
// Thread-safety: const methods only; safe from any thread.
#ifndef KFORGE_PROMPT_PROMPT_RENDERER_H_
#define KFORGE_PROMPT_PROMPT_RENDERER_H_

#include <filesystem>
#include <string>

#include "kforge/core/error.h"
#include "kforge/prompt/analysis_inputs.h"
#include "kforge/prompt/generation_inputs.h"

namespace kforge {

// A rendered prompt: the system message and the user message of one LLM call.
struct RenderedPrompt {
  std::string system;
  std::string user;
};

class PromptRenderer {
 public:
  // Templates from `templates_dir`.
  explicit PromptRenderer(std::filesystem::path templates_dir);
  // Templates from KforgeHome()/templates.
  PromptRenderer();

  Result<RenderedPrompt> RenderGeneration(const GenerationPromptInputs& inputs) const;
  Result<RenderedPrompt> RenderAnalysis(const AnalysisPromptInputs& inputs) const;

  const std::filesystem::path& templates_dir() const { return templates_dir_; }

 private:
  std::filesystem::path templates_dir_;
};

}  // namespace kforge

#endif  // KFORGE_PROMPT_PROMPT_RENDERER_H_
