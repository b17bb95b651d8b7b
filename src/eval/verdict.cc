#include "kforge/eval/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <array>
#include <utility>

namespace kforge {
namespace {

nlohmann::json ParseOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

nlohmann::json TimingJson(const std::optional<TimingStats>& t) {
  if (!t) return nullptr;
  return {{"clock", t->clock},       {"median_s", t->median_s}, {"mean_s", t->mean_s},
          {"min_s", t->min_s},       {"p10_s", t->p10_s},       {"p90_s", t->p90_s},
          {"rel_std", t->rel_std},   {"samples", t->samples},   {"stopped_by", t->stopped_by}};
}

// The first line of a (possibly multi-line) error, for the one-line text summary.
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

bool IsBetter(const Verdict& challenger, const Verdict& incumbent) {
  const bool c = challenger.status == EvalStatus::kCorrect;
  const bool i = incumbent.status == EvalStatus::kCorrect;
  if (c != i) return c;
  if (!c || !challenger.timing || !incumbent.timing) return false;
  return challenger.timing->median_s < incumbent.timing->median_s;
}

std::string DegenerateFlags::Describe() const {
  std::vector<std::string_view> parts;
  if (all_zero) parts.emplace_back("the reference output is all zeros");
  if (constant && !all_zero) parts.emplace_back("the reference output is constant");
  if (constant_passes && !constant) parts.emplace_back("a constant tensor passes the tolerance");
  if (nondeterministic) parts.emplace_back("the reference does not match itself (nondeterministic)");
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string Verdict::ToJson() const {
  nlohmann::json j;
  j["verdict_version"] = 1;
  j["status"] = EvalStatusName(status);
  j["message"] = message;
  j["diagnostics"] = diagnostics;
  j["task"] = {{"name", task_name}, {"origin", task_origin}};
  j["target"] = target;
  j["candidate"] = {{"path", candidate}, {"kind", candidate_kind}, {"mode", mode}};
  j["precision"] = {{"policy", PrecisionPolicyName(policy)},
                    {"atol", tolerance.atol},
                    {"rtol", tolerance.rtol}};
  j["trials"] = nlohmann::json::array();
  for (const auto& t : trials) {
    j["trials"].push_back({{"index", t.index},
                           {"distribution", t.distribution},
                           {"ok", t.ok},
                           {"max_abs_error", t.max_abs_error},
                           {"max_rel_error", t.max_rel_error},
                           {"fraction_bad", t.fraction_bad},
                           {"inputs_unchanged", t.inputs_unchanged},
                           {"problem", t.problem}});
  }
  j["degenerate"] = {{"flagged", degenerate.any()},
                     {"all_zero", degenerate.all_zero},
                     {"constant", degenerate.constant},
                     {"constant_passes", degenerate.constant_passes},
                     {"nondeterministic", degenerate.nondeterministic}};
  j["guardrail_flags"] = guardrail_flags;
  j["seconds"] = {{"compile", compile_seconds},
                  {"reference", reference_seconds},
                  {"candidate", candidate_seconds},
                  {"total", total_seconds}};
  j["compile_cache_hit"] = compile_cache_hit;
  j["isolation"] = {{"sandbox", isolation}, {"observed", ParseOrNull(observed_isolation)}};
  j["environment"] = ParseOrNull(environment);
  if (timing || eager_baseline || !timing_error.empty() || !eager_baseline_error.empty()) {
    j["timing"] = {{"candidate", TimingJson(timing)},
                   {"candidate_error", timing_error},
                   {"eager_baseline", TimingJson(eager_baseline)},
                   {"eager_baseline_error", eager_baseline_error},
                   {"speedup_vs_eager", speedup_vs_eager ? nlohmann::json(*speedup_vs_eager)
                                                         : nlohmann::json(nullptr)}};
  } else {
    j["timing"] = nullptr;
  }
  return j.dump(2);
}

std::string Verdict::ToText() const {
  std::string out = fmt::format("{}  {}\n", EvalStatusName(status), message);
  out += fmt::format("  task      {} ({})\n", task_name, task_origin);
  out += fmt::format("  target    {}  candidate {} [{}{}]\n", target, candidate, candidate_kind,
                     mode == "kernelbench-compat" ? ", KernelBench compatibility mode" : "");
  out += fmt::format("  precision {} (atol {:g}, rtol {:g})\n", PrecisionPolicyName(policy),
                     tolerance.atol, tolerance.rtol);
  for (const auto& t : trials) {
    out += fmt::format("  trial {}   {:<7} {}  max abs err {:.2e}  max rel err {:.2e}{}\n",
                       t.index, t.distribution, t.ok ? "ok  " : "FAIL", t.max_abs_error,
                       t.max_rel_error, t.problem.empty() ? "" : "  " + t.problem);
  }
  if (degenerate.any()) {
    out += fmt::format("  DEGENERATE TASK: {} — a pass here proves little; reported apart\n",
                       degenerate.Describe());
  }
  for (const auto& flag : guardrail_flags) out += fmt::format("  guardrail flag: {}\n", flag);
  if (!diagnostics.empty()) {
    out += "  diagnostics:\n";
    std::size_t start = 0;
    while (start < diagnostics.size()) {
      std::size_t end = diagnostics.find('\n', start);
      if (end == std::string::npos) end = diagnostics.size();
      out += "    " + diagnostics.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  out += fmt::format("  time      compile {:.2f} s{}, reference {:.2f} s, candidate {:.2f} s, total {:.2f} s\n",
                     compile_seconds, compile_cache_hit ? " (cached)" : "", reference_seconds,
                     candidate_seconds, total_seconds);
  if (timing) {
    out += fmt::format("  timing    {}\n", timing->Describe());
  } else if (!timing_error.empty()) {
    out += fmt::format("  timing    not measured: {}\n", FirstLine(timing_error));
  }
  if (eager_baseline) {
    out += fmt::format("  eager     {}\n", eager_baseline->Describe());
  } else if (!eager_baseline_error.empty()) {
    out += fmt::format("  eager     not measured: {}\n", FirstLine(eager_baseline_error));
  }
  if (speedup_vs_eager) {
    out += fmt::format("  speedup   {:.3g}x vs PyTorch eager (median / median)\n",
                       *speedup_vs_eager);
  }
  out += fmt::format("  isolation {}\n", isolation);
  return out;
}

}  // namespace kforge
