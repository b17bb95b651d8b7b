#include "kforge/prompt/measured_text.h"

#include <vector>

namespace kforge {
namespace {

// The lines of `text`, each without its '\n'; a final line without '\n' counts too.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// These strings are the templates' own (templates/analysis/user.mustache,
// templates/generation/user.mustache); measured_text_test renders both and fails when a
// template change moves a measurement out of reach of this mask.
constexpr std::string_view kAnalysisTiming = "## Timing";
constexpr std::string_view kAnalysisEnd = "Give at most ";
constexpr std::string_view kTimingLine = "Timing: ";
constexpr std::string_view kDevice = "## Device";

}  // namespace

std::string MaskMeasuredText(std::string_view prompt) {
  const std::vector<std::string_view> lines = Lines(prompt);
  std::string out;
  out.reserve(prompt.size());
  auto emit = [&out](std::string_view line) {
    out += line;
    out += '\n';
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line == kAnalysisTiming) {
      // The analysis prompt's measured tail: timing, profile summary (which has "##" headings
      // of its own) and device facts, up to the closing request.
      std::size_t end = i + 1;
      while (end < lines.size() && !lines[end].starts_with(kAnalysisEnd)) ++end;
      emit(line);
      emit("#");
      i = end - 1;
    } else if (line == kDevice) {
      // Device facts: "- label: value" lines (blank lines between them and the heading).
      std::size_t end = i + 1;
      while (end < lines.size() && (lines[end].empty() || lines[end].starts_with("- "))) ++end;
      emit(line);
      emit("#");
      if (end > i + 1 && lines[end - 1].empty()) emit("");
      i = end - 1;
    } else if (line.starts_with(kTimingLine)) {
      emit(std::string(kTimingLine) + "#");
    } else {
      emit(line);
    }
  }
  // Keep a missing final newline missing.
  if (!prompt.empty() && prompt.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

}  // namespace kforge
