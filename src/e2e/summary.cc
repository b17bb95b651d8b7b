#include "kforge/e2e/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "kforge/eval/timing.h"

namespace kforge::e2e {
namespace {

std::string Percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

void ProfileSection(const Profile& p, std::string& out) {
  out += fmt::format("Model: {} (policy {})\n", p.implementation, p.policy);
  // Rows in rank order, with the figure the rank is taken from (time per decode step summed over
  // the batch sizes) beside the share at the task's batch size.
  std::string batches;
  for (int b : p.batch_sizes) batches += fmt::format("{}{}", batches.empty() ? "" : ", ", b);
  out += fmt::format(
      "\nWhere a decode step's time goes (instrumented pass; ranked by time per step summed over "
      "batch sizes {}):\n",
      batches.empty() ? "-" : batches);
  const std::string share_title = fmt::format("share@{}", p.task_batch_size);
  out += fmt::format("  {:>4}  {:<24} {:>9} {:>10} {:>9}  {}\n", "rank", "site", "instances",
                     "time/step", share_title, "task");
  std::vector<const Site*> ranked;
  for (const Site& s : p.sites) ranked.push_back(&s);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Site* a, const Site* b) { return a->rank < b->rank; });
  for (const Site* s : ranked) {
    auto share = s->share.find(p.task_batch_size);
    std::string task = s->selected      ? s->task_file.filename().string()
                       : s->extractable ? "-"
                                        : "not extractable: " + s->reason;
    out += fmt::format("  {:>4}  {:<24} {:>9} {:>10} {:>9}  {}\n", s->rank, s->name,
                       s->instances.size(), FormatSeconds(s->total_seconds),
                       share == s->share.end() ? "-" : Percent(share->second), task);
  }
}

void SynthesisSection(const E2eOutcome& o, std::string& out) {
  out += "\nKernels:\n";
  if (o.sites.empty()) out += "  (no site was chosen)\n";
  for (const SiteOutcome& s : o.sites) {
    std::string state =
        !s.correct ? "no correct kernel (" + s.stop_reason + ")"
        : !s.kernel.empty()
            ? fmt::format(
                  "correct, {} in the task; put in",
                  s.task_speedup ? fmt::format("{:.2f}x vs eager", *s.task_speedup) : "untimed")
            : "correct, not put in: " + s.not_integrated;
    out += fmt::format("  {:<24} {}\n", s.site, state);
  }
}

void MeasurementSection(const Measurement& m, std::string& out) {
  out += fmt::format("\nConfigurations (torch {}):\n", m.torch_version);
  for (const Configuration& c : m.configurations) {
    out += fmt::format("  {:<16} {}\n", c.name,
                       !c.available    ? "unavailable: " + c.why
                       : c.why.empty() ? std::string("measured")
                                       : "measured; " + c.why);
  }
  if (m.dynamo_recompile_limit) {
    out += fmt::format("  torch.compile: dynamic shapes, dynamo recompile limit {}\n",
                       *m.dynamo_recompile_limit);
  }
  out += fmt::format(
      "\nOutput equivalence against eager (logits within atol = rtol = {:g}; greedy tokens):\n",
      m.tolerance);
  for (const Equivalence& e : m.equivalence) {
    const std::string tokens =
        e.same_greedy_tokens ? "same tokens"
        : e.tokens_agree ? fmt::format("same tokens but {} near tie(s)", e.near_tie_disagreements)
                         : fmt::format("TOKENS DIFFER ({} token(s), {} of them near ties)",
                                       e.token_disagreements, e.near_tie_disagreements);
    out +=
        fmt::format("  batch {:>4}  {:<16} {} steps{}  {}  {}  max abs err {:.2e}\n", e.batch_size,
                    e.configuration, e.steps, e.teacher_forced ? "" : " (free-running)",
                    e.within_tolerance ? "logits match" : "LOGITS DIFFER", tokens, e.max_abs_error);
  }
  out += "\nDecode throughput (median step; tokens/s = batch / median):\n";
  std::map<int, std::map<std::string, const StepTiming*>> by_batch;
  for (const StepTiming& t : m.timing) by_batch[t.batch_size][t.configuration] = &t;
  out += fmt::format("  {:>5}", "batch");
  for (const Configuration& c : m.configurations) out += fmt::format("  {:>22}", c.name);
  out += "\n";
  for (const auto& [batch, row] : by_batch) {
    out += fmt::format("  {:>5}", batch);
    for (const Configuration& c : m.configurations) {
      auto it = row.find(c.name);
      out += it == row.end()
                 ? fmt::format("  {:>22}", "-")
                 : fmt::format(
                       "  {:>22}",
                       fmt::format("{}{:.0f} tok/s {}", it->second->recompile_limit_hit ? "*" : "",
                                   it->second->tokens_per_s, FormatSeconds(it->second->median_s)));
    }
    auto eager = row.find("eager");
    auto patched = row.find("eager+kforge");
    if (eager != row.end() && patched != row.end()) {
      out += fmt::format("  eager+kforge/eager {:.3f}x",
                         eager->second->median_s / patched->second->median_s);
    }
    out += "\n";
  }
  for (const StepTiming& t : m.timing) {
    if (!t.recompile_limit_hit) continue;
    out +=
        "  * torch._dynamo hit its recompile limit: frames past it ran eagerly, so this "
        "figure is partly eager\n";
    break;
  }
  out +=
      "\nPer-kernel, in the model's own calls (original forward vs kernel; synchronised around "
      "each call, medians; back to back: calls issued in a row, host side included):\n";
  for (const KernelTiming& k : m.kernels) {
    out += fmt::format("  {:<24} batch {:>4}  {} -> {}  {:.2f}x", k.site, k.batch_size,
                       FormatSeconds(k.original_median_s), FormatSeconds(k.kforge_median_s),
                       k.speedup);
    if (k.original_back_to_back_s > 0 && k.kforge_back_to_back_s > 0) {
      out +=
          fmt::format("   back to back {} -> {}  {:.2f}x", FormatSeconds(k.original_back_to_back_s),
                      FormatSeconds(k.kforge_back_to_back_s),
                      k.original_back_to_back_s / k.kforge_back_to_back_s);
    }
    out += "\n";
  }
  for (const Coverage& c : m.coverage) {
    if (c.unrouted_calls > 0) {
      out += fmt::format(
          "  {}: {} eager call(s) did not match the kernel's signature and ran the "
          "original forward\n",
          c.site, c.unrouted_calls);
    }
  }
}

}  // namespace

std::string SummaryText(const E2eOutcome& outcome) {
  std::string out;
  ProfileSection(outcome.profile, out);
  SynthesisSection(outcome, out);
  if (outcome.measurement) {
    MeasurementSection(*outcome.measurement, out);
  } else {
    out += fmt::format("\nNot measured: {}\n", outcome.not_measured);
  }
  return out;
}

}  // namespace kforge::e2e
