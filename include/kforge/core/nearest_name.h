// The likely intended name of a misspelled one (a suite key, a task global, a subcommand), for
// error messages that say "did you mean ...".
#ifndef KFORGE_CORE_NEAREST_NAME_H_
#define KFORGE_CORE_NEAREST_NAME_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// Edit distance (insertions, deletions, substitutions and swaps of neighbours, each 1) between
// `a` and `b`, ignoring ASCII case.
int EditDistance(std::string_view a, std::string_view b);

// The name of `names` nearest to `word` when it is near enough to be a typo of it: at most
// max(1, size/3) edits away (`overides` → `overrides`, `evall` → `eval`); ties go to the first in
// `names`. nullopt when none is that near, or `word` is one of `names`.
std::optional<std::string> NearestName(std::string_view word,
                                       const std::vector<std::string>& names);

// " (did you mean 'x'?)" for NearestName's answer, else "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& names);

}  // namespace kforge

#endif  // KFORGE_CORE_NEAREST_NAME_H_
