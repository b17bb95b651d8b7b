#include "kforge/report/line_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace kforge::report {
namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Myers' greedy forward search over the middle part (common prefix and suffix removed), keeping
// each round's frontier to walk the path back. Returns false when more than `max_edits` are
// needed.
bool Myers(const std::vector<int>& a, const std::vector<int>& b, int max_edits,
           std::vector<DiffOp>& ops) {
  const int n = static_cast<int>(a.size());
  const int m = static_cast<int>(b.size());
  const int max_d = std::min(n + m, max_edits);
  const int offset = max_d + 1;
  std::vector<int> v(2 * static_cast<std::size_t>(max_d) + 3, 0);
  std::vector<std::vector<int>> trace;
  int found_d = -1;
  for (int d = 0; d <= max_d && found_d < 0; ++d) {
    trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
    for (int k = -d; k <= d; k += 2) {
      int x;
      if (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1])) {
        x = v[offset + k + 1];
      } else {
        x = v[offset + k - 1] + 1;
      }
      int y = x - k;
      while (x < n && y < m && a[x] == b[y]) {
        ++x;
        ++y;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
  }
  if (found_d < 0) return false;
  // Walk back: trace[d] holds v of the start of round d, indices -d-1 .. d+1.
  std::vector<DiffOp> reversed;
  int x = n, y = m;
  for (int d = found_d; d > 0; --d) {
    const std::vector<int>& prev = trace[d];
    auto at = [&](int k) { return prev[k + d + 1]; };
    const int k = x - y;
    int prev_k;
    if (k == -d || (k != d && at(k - 1) < at(k + 1))) {
      prev_k = k + 1;
    } else {
      prev_k = k - 1;
    }
    const int prev_x = at(prev_k);
    const int prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      reversed.push_back(DiffOp::kEqual);
      --x;
      --y;
    }
    if (x == prev_x) {
      reversed.push_back(DiffOp::kInsert);
      --y;
    } else {
      reversed.push_back(DiffOp::kDelete);
      --x;
    }
  }
  while (x > 0 && y > 0) {
    reversed.push_back(DiffOp::kEqual);
    --x;
    --y;
  }
  ops.assign(reversed.rbegin(), reversed.rend());
  return true;
}

}  // namespace

std::vector<DiffLine> DiffLines(std::string_view a_text, std::string_view b_text, int max_edits) {
  const auto a = SplitLines(a_text);
  const auto b = SplitLines(b_text);
  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  // Lines of the middle parts as small integers, so that comparisons are cheap.
  std::unordered_map<std::string_view, int> ids;
  auto intern = [&](std::size_t from, std::size_t to, const std::vector<std::string_view>& lines) {
    std::vector<int> out;
    out.reserve(to - from);
    for (std::size_t i = from; i < to; ++i) {
      out.push_back(ids.emplace(lines[i], static_cast<int>(ids.size())).first->second);
    }
    return out;
  };
  const auto am = intern(prefix, a.size() - suffix, a);
  const auto bm = intern(prefix, b.size() - suffix, b);
  std::vector<DiffOp> ops;
  if (!Myers(am, bm, max_edits, ops)) {
    ops.assign(am.size(), DiffOp::kDelete);
    ops.insert(ops.end(), bm.size(), DiffOp::kInsert);
  }
  std::vector<DiffLine> out;
  out.reserve(prefix + ops.size() + suffix);
  for (std::size_t i = 0; i < prefix; ++i) out.push_back({DiffOp::kEqual, a[i]});
  std::size_t ai = prefix, bi = prefix;
  for (DiffOp op : ops) {
    switch (op) {
      case DiffOp::kEqual: out.push_back({op, a[ai++]}); ++bi; break;
      case DiffOp::kDelete: out.push_back({op, a[ai++]}); break;
      case DiffOp::kInsert: out.push_back({op, b[bi++]}); break;
    }
  }
  for (std::size_t i = a.size() - suffix; i < a.size(); ++i) out.push_back({DiffOp::kEqual, a[i]});
  return out;
}

std::string UnifiedDiff(std::string_view a, std::string_view b, std::string_view a_name,
                        std::string_view b_name, int context) {
  const auto lines = DiffLines(a, b);
  const std::size_t n = lines.size();
  std::string out;
  std::size_t i = 0;
  // Line numbers (1-based) in a and b of lines[i].
  std::vector<int> a_line(n + 1), b_line(n + 1);
  {
    int al = 1, bl = 1;
    for (std::size_t k = 0; k < n; ++k) {
      a_line[k] = al;
      b_line[k] = bl;
      if (lines[k].op != DiffOp::kInsert) ++al;
      if (lines[k].op != DiffOp::kDelete) ++bl;
    }
    a_line[n] = al;
    b_line[n] = bl;
  }
  const std::size_t ctx = static_cast<std::size_t>(std::max(context, 0));
  while (i < n) {
    while (i < n && lines[i].op == DiffOp::kEqual) ++i;
    if (i == n) break;
    // A hunk: from ctx lines before this change to ctx lines after the last change that is
    // within 2·ctx equal lines of the previous one.
    const std::size_t start = i >= ctx ? i - ctx : 0;
    std::size_t end = i;
    while (end < n) {
      std::size_t next = end;
      while (next < n && lines[next].op != DiffOp::kEqual) ++next;
      std::size_t equal_run = next;
      while (equal_run < n && lines[equal_run].op == DiffOp::kEqual) ++equal_run;
      if (equal_run == n || equal_run - next > 2 * ctx) {
        end = std::min(n, next + ctx);
        break;
      }
      end = equal_run;
    }
    if (out.empty()) out = fmt::format("--- {}\n+++ {}\n", a_name, b_name);
    int a_count = 0, b_count = 0;
    for (std::size_t k = start; k < end; ++k) {
      if (lines[k].op != DiffOp::kInsert) ++a_count;
      if (lines[k].op != DiffOp::kDelete) ++b_count;
    }
    // A range of zero lines names the line before it, as diff -u does.
    const int a_start = a_count == 0 ? a_line[start] - 1 : a_line[start];
    const int b_start = b_count == 0 ? b_line[start] - 1 : b_line[start];
    out += fmt::format("@@ -{},{} +{},{} @@\n", a_start, a_count, b_start, b_count);
    for (std::size_t k = start; k < end; ++k) {
      const char mark = lines[k].op == DiffOp::kEqual ? ' ' : lines[k].op == DiffOp::kDelete ? '-' : '+';
      out += mark;
      out.append(lines[k].text);
      out += '\n';
    }
    i = end;
  }
  return out;
}

}  // namespace kforge::report
