// A line diff (Myers' O(ND) shortest edit script) printed as a unified diff, for the candidate
// history of a report: what changed from one candidate to the next.
#ifndef KFORGE_REPORT_LINE_DIFF_H_
#define KFORGE_REPORT_LINE_DIFF_H_

#include <string>
#include <string_view>
#include <vector>

namespace kforge::report {

enum class DiffOp { kEqual, kDelete, kInsert };

struct DiffLine {
  DiffOp op = DiffOp::kEqual;
  std::string_view text;  // the line without its newline; points into the inputs
};

// The lines of `a` and `b` aligned by a shortest edit script: every line of `a` appears once as
// kEqual or kDelete, every line of `b` once as kEqual or kInsert, in order. When the two texts
// differ in more than `max_edits` lines, the script is "delete all of a, insert all of b" (the
// search is O((N+M)·D) time and O(D²) memory).
std::vector<DiffLine> DiffLines(std::string_view a, std::string_view b, int max_edits = 4000);

// A unified diff (`--- a_name`, `+++ b_name`, `@@ -l,n +l,n @@` hunks with `context` lines around
// each change); empty when the texts have the same lines.
std::string UnifiedDiff(std::string_view a, std::string_view b, std::string_view a_name,
                        std::string_view b_name, int context = 3);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_LINE_DIFF_H_
