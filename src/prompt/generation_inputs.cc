#include "kforge/prompt/generation_inputs.h"

namespace kforge {

std::string_view GenerationPassName(GenerationPass pass) {
  switch (pass) {
    case GenerationPass::kFunctional:
      return "functional";
    case GenerationPass::kOptimization:
      return "optimization";
  }
  return "?";
}

}  // namespace kforge
