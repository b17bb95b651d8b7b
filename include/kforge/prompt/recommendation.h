// Recommendation: one piece of the analysis agent's advice, and the parser of its JSON answer.
//
// The analysis prompt asks for
//   {"recommendations": [{"bottleneck": "...", "evidence": "...",
//                          "changes": ["...", ...], "expected_gain": "..."}]}
// ParseRecommendations accepts that object with prose or a code fence around it, a bare list of
// recommendation objects, or one recommendation object; `evidence` may be a list of strings and
// `changes` a single string. Each recommendation needs a non-empty bottleneck and at least one
// change; anything less is a kParse error written as feedback to the model.
#ifndef KFORGE_PROMPT_RECOMMENDATION_H_
#define KFORGE_PROMPT_RECOMMENDATION_H_

#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"

namespace kforge {

struct Recommendation {
  std::string bottleneck;            // what limits the kernel: "DRAM bandwidth", "occupancy"
  std::string evidence;              // the profile figures or code facts that show it
  std::vector<std::string> changes;  // concrete code-level changes, in the order to make them
  std::string expected_gain;         // e.g. "about 1.5x on the main kernel", with its reason

  bool operator==(const Recommendation&) const = default;
};

// Extracts and validates the recommendations of an analysis answer.
Result<std::vector<Recommendation>> ParseRecommendations(std::string_view answer);

// The canonical JSON document of `recommendations` (the format above, keys in that order), as
// stored in the run store's recommendations table. ParseRecommendations reads it back unchanged.
std::string RecommendationsToJson(const std::vector<Recommendation>& recommendations);

}  // namespace kforge

#endif  // KFORGE_PROMPT_RECOMMENDATION_H_
