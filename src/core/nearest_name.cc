#include "kforge/core/nearest_name.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace kforge {
namespace {

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring).
int EditDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> NearestName(std::string_view word,
                                       const std::vector<std::string>& names) {
  if (std::ranges::find(names, word) != names.end()) return std::nullopt;
  const int limit = std::max<int>(1, static_cast<int>(word.size()) / 3);
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const auto& name : names) {
    const int distance = EditDistance(word, name);
    if (distance < best_distance) {
      best_distance = distance;
      best = name;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& names) {
  auto nearest = NearestName(word, names);
  return nearest ? fmt::format(" (did you mean '{}'?)", *nearest) : std::string();
}

}  // namespace kforge
