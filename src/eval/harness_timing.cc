#include "harness_timing.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <map>
#include <random>

#include "kforge/eval/median_interval.h"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted[0];
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto low = static_cast<std::size_t>(std::floor(pos));
  const std::size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (pos - static_cast<double>(low));
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Statistics of the kept samples, in the verdict's shape.
TimingStats StatsOf(const std::vector<double>& samples, const std::string& clock) {
  TimingStats s;
  s.clock = clock;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  s.median_s = Percentile(sorted, 0.5);
  s.mean_s = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  s.min_s = sorted.front();
  s.p10_s = Percentile(sorted, 0.1);
  s.p90_s = Percentile(sorted, 0.9);
  double var = 0;
  for (double x : sorted) var += (x - s.mean_s) * (x - s.mean_s);
  var = sorted.size() > 1 ? var / (n - 1) : 0;
  s.rel_std = s.mean_s > 0 ? std::sqrt(var) / s.mean_s : 0;
  s.samples = static_cast<int>(sorted.size());
  if (auto ci = MedianConfidenceInterval(samples)) {
    s.median_ci_low_s = ci->low;
    s.median_ci_high_s = ci->high;
  }
  return s;
}

// The draws of one timing run: the order of the sets and which samples are checked. Seeded by
// the parent's secret seed; the child sees neither.
class Draws {
 public:
  Draws(std::uint64_t seed, std::size_t sets) : rng_(seed), sets_(sets) {}
  // The next set: each round is a fresh permutation of all sets, so that no rhythm of calls
  // tells which set comes next and every set is timed as often as the others.
  int NextSet() {
    if (order_.empty()) {
      order_.resize(sets_);
      std::iota(order_.begin(), order_.end(), 0);
      std::shuffle(order_.begin(), order_.end(), rng_);
    }
    const int k = order_.back();
    order_.pop_back();
    return k;
  }
  bool Check(double probability) {
    return std::uniform_real_distribution<double>(0, 1)(rng_) < probability;
  }

 private:
  std::mt19937_64 rng_;
  std::size_t sets_;
  std::vector<int> order_;
};

}  // namespace

double ProtocolCost::median_parent_s() const { return Median(parent_s); }

double ProtocolCost::spread_s() const {
  const double m = Median(parent_s);
  std::vector<double> dev;
  for (double x : parent_s) dev.push_back(std::fabs(x - m));
  return Median(dev);
}

std::string ClockCheck::Describe() const {
  if (!ok) {
    return fmt::format(
        "the parent's clock saw {} per call (the protocol's own cost taken off, the least of {} "
        "batches) where the candidate's process claimed {}; at most {} more is allowed",
        FormatSeconds(parent_call_s), samples, FormatSeconds(claimed_s),
        FormatSeconds(allowance_s));
  }
  return fmt::format(
      "with the device synchronised the calls took {} each, where the timing events saw {}; at "
      "most {} more is allowed: work ran where the events did not see it (another stream, after "
      "the end event)",
      FormatSeconds(synchronised_s), FormatSeconds(headline_s), FormatSeconds(events_allowance_s));
}

HarnessResult<std::vector<ProtocolCost>> MeasureProtocolCost(HarnessSession& session, int sets,
                                                             const std::vector<std::string>& modes,
                                                             int count) {
  std::vector<ProtocolCost> out;
  for (const auto& mode : modes) {
    ProtocolCost c;
    c.mode = mode;
    for (int i = 0; i < count; ++i) {
      auto r = session.Sample({.set = i % std::max(sets, 1), .mode = mode, .spin_s = 0, .repeat = 1});
      if (!r) return std::unexpected(r.error());
      c.parent_s.push_back(r->parent_seconds);
      c.child_s.push_back(r->seconds);
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<OutputJudgement> JudgeFrozenOutput(const TensorFile& expected, const TensorFile* truth,
                                          const HostTensor& candidate, PrecisionPolicy policy) {
  auto reference = MapTensorFile(expected);
  if (!reference) return std::unexpected(reference.error());
  std::optional<MappedTensor> mapped_truth;
  if (truth != nullptr) {
    auto mapped = MapTensorFile(*truth);
    if (!mapped) return std::unexpected(mapped.error());
    mapped_truth = std::move(*mapped);
  }
  const TensorView view{candidate.spec.dtype, candidate.spec.shape, candidate.data};
  const TensorView truth_view = mapped_truth ? mapped_truth->view() : TensorView{};
  return JudgeOutput(view, reference->view(), mapped_truth ? &truth_view : nullptr, policy,
                     expected.name.empty() ? "output" : expected.name);
}

HarnessTimingOutcome TimeThroughHarness(HarnessSession& session, const std::vector<TimedSet>& sets,
                                        const std::vector<ProtocolCost>& cost,
                                        const HarnessTimingRequest& request) {
  HarnessTimingOutcome out;
  if (sets.empty()) {
    out.error = "no timing sets";
    return out;
  }
  Draws draws(request.seed, sets.size());
  // Compares one sample's outputs (frozen copies) with its set's reference; "" when right.
  auto check = [&](int k) -> std::optional<std::string> {
    const auto start = Clock::now();
    const TimedSet& set = sets[static_cast<std::size_t>(k)];
    auto copies = session.FreezeAndCopy(set.outputs);
    if (!copies) {
      out.problem = copies.error();
      return std::nullopt;
    }
    std::string problem;
    for (std::size_t m = 0; m < set.expected.size() && problem.empty(); ++m) {
      const TensorFile* truth = m < set.truth.size() && set.truth[m] ? &*set.truth[m] : nullptr;
      auto cmp = JudgeFrozenOutput(set.expected[m], truth, (*copies)[m], request.policy);
      if (!cmp) {
        problem = "cannot compare: " + cmp.error().message;
      } else if (!cmp->ok) {
        problem = cmp->problem;
      }
    }
    ++out.checked_samples;
    out.check_seconds += Seconds(Clock::now() - start);
    return problem;
  };
  // Takes one sample; false when the run must stop (a failure, a wrong checked sample).
  struct Taken {
    double child_s = 0;
    double parent_s = 0;
    int sm_mhz = 0;
    int set = 0;
  };
  // The clock's own cost per mode (the median child figure of the empty samples), taken off
  // every raw figure the child reports.
  std::map<std::string, double> clock_cost;
  for (const auto& c : cost) clock_cost[c.mode] = Median(c.child_s);
  double spin_s = 0;  // cold: grown past 1.5x the longest enqueue time reported (50 us to 20 ms)
  double probability = 1;  // of checking an unforced sample; lowered once costs are known
  double sample_cost_s = 0;
  std::vector<int> checked_per_set(sets.size(), 0);
  auto take = [&](const std::string& mode, bool force_check, Taken* t, int repeat = 1) -> bool {
    const int k = draws.NextSet();
    const double spin = mode == "cold" ? std::max(spin_s, 50e-6) : 0;
    auto r = session.Sample({.set = k, .mode = mode, .spin_s = spin, .repeat = repeat});
    ++out.timed_samples;
    if (!r) {
      if (r.error().kind == HarnessProblem::Kind::kFailure) {
        out.error = fmt::format("the call failed while timed ({}): {}", r.error().status,
                                r.error().diagnostics);
      }
      out.problem = r.error();
      return false;
    }
    for (const auto& f : r->findings) {
      if (std::find(out.findings.begin(), out.findings.end(), f) == out.findings.end()) {
        out.findings.push_back(f);
      }
    }
    if (mode == "cold" && r->enqueue_s * 1.5 > spin_s) spin_s = std::min(20e-3, r->enqueue_s * 1.5);
    const double own_cost = clock_cost.contains(mode) ? clock_cost[mode] / repeat : 0;
    *t = Taken{std::max(0.0, r->seconds - own_cost), r->parent_seconds, r->sm_mhz, k};
    sample_cost_s = sample_cost_s == 0 ? r->parent_seconds : 0.9 * sample_cost_s + 0.1 * r->parent_seconds;
    if (force_check || draws.Check(probability)) {
      const double before = out.check_seconds;
      auto problem = check(k);
      if (!problem) return false;
      ++checked_per_set[static_cast<std::size_t>(k)];
      if (!problem->empty()) {
        out.timed_mismatch = fmt::format("a timed sample on timing set {} ({} mode): {}", k, mode,
                                         *problem);
        return false;
      }
      // Check every sample while that costs at most a tenth of sampling; beyond, a random share
      // that keeps the checks near that tenth (never under one in ten).
      const double check_cost = out.check_seconds - before;
      if (check_cost > 0 && sample_cost_s > 0) {
        probability = std::clamp(0.1 * sample_cost_s / check_cost, 0.1, 1.0);
      }
    }
    return true;
  };

  // Warm-up: every set once (each checked: the first call on inputs the trials never showed),
  // then until warmup_seconds have passed.
  const auto warm_start = Clock::now();
  Taken t;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (!take(request.headline_mode, true, &t)) return out;
  }
  while (Seconds(Clock::now() - warm_start) < request.options.warmup_seconds) {
    if (!take(request.headline_mode, false, &t)) return out;
  }

  // The headline: until the median is known or the cap.
  std::vector<double> kept;
  std::vector<int> clocks;
  int discarded = 0;
  const auto start = Clock::now();
  std::string stopped_by;
  const double threshold = request.max_sm_mhz > 0 ? 0.75 * request.max_sm_mhz : 0;
  while (stopped_by.empty()) {
    if (!take(request.headline_mode, false, &t)) return out;
    const bool timeout = Seconds(Clock::now() - start) >= request.options.max_seconds;
    if (threshold > 0 && t.sm_mhz > 0 && t.sm_mhz < threshold && !(timeout && kept.empty())) {
      ++discarded;
    } else {
      kept.push_back(t.child_s);
      if (t.sm_mhz > 0) clocks.push_back(t.sm_mhz);
    }
    if (MedianKnown(kept, request.options.min_samples, request.options.target_median_ci)) {
      stopped_by = "ci";
    } else if (timeout && !kept.empty()) {
      stopped_by = "timeout";
    }
  }
  // At least three checked samples per set, whatever the random draws gave: more samples of the
  // same kind, indistinguishable to the child from the ones before.
  for (std::size_t guard = 0; guard < 20 * sets.size(); ++guard) {
    const bool enough = std::all_of(checked_per_set.begin(), checked_per_set.end(),
                                    [](int n) { return n >= 3; });
    if (enough) break;
    if (!take(request.headline_mode, true, &t)) return out;
  }
  out.check_probability = probability;
  TimingStats stats = StatsOf(kept, request.headline_mode == "cold" ? "events-cold" : "perf_counter");
  stats.stopped_by = stopped_by;
  stats.discarded = discarded;
  if (!clocks.empty()) {
    std::sort(clocks.begin(), clocks.end());
    stats.sm_clock_mhz = clocks[clocks.size() / 2];
  }
  stats.checked_samples = out.checked_samples;

  // The parent's clock check: batches of calls back to back in one sample each, long enough
  // (about 20 ms, 1 to 20000 calls) that the protocol's jitter is small per call: on a loaded
  // host the harness may wait milliseconds to be scheduled after each command, outside its own
  // clock (2 ms batches read twice the claim beside two busy cores). The least of the batches'
  // times counts: such waits come and go, an altered clock or hidden work is in every batch. The
  // parent's time per call, less the empty samples' cost, is compared with what the child claimed: the
  // headline median (a GPU's cold events: work on other streams or after the end event, or an
  // altered event clock, shows here) or, where the check runs in the headline's own mode (a CPU's
  // host clock), the larger of the headline and the child's own figure for the batches (a
  // preempted batch is slow by both clocks; an altered clock is slow only by the parent's).
  const int repeat = static_cast<int>(
      std::clamp(std::ceil(20e-3 / std::max(stats.median_s, 1e-7)), 1.0, 20000.0));
  std::vector<double> check_parent, check_claims;
  for (int i = 0; i < 5; ++i) {
    if (!take(request.check_mode, false, &t, repeat)) return out;
    check_parent.push_back(t.parent_s);
    check_claims.push_back(t.child_s);
  }
  if (request.check_mode != request.headline_mode) stats.host_sync_median_s = Median(check_claims);
  const ProtocolCost* empty = nullptr;
  for (const auto& c : cost) {
    if (c.mode == request.check_mode) empty = &c;
  }
  if (empty != nullptr && !empty->parent_s.empty()) {
    ClockCheck& cc = out.clock_check;
    cc.done = true;
    cc.samples = static_cast<int>(check_parent.size());
    const double least = *std::min_element(check_parent.begin(), check_parent.end());
    cc.parent_call_s = std::max(0.0, (least - empty->median_parent_s()) / repeat);
    // The claim for the same calls: the child's own figure for the batches (on a CPU, the larger
    // of it and the headline, which is the same clock).
    cc.claimed_s = request.check_mode == request.headline_mode
                       ? std::max(stats.median_s, Median(check_claims))
                       : Median(check_claims);
    cc.allowance_s = kClockCheckFactor * cc.claimed_s +
                     (kClockCheckSlackS + 3 * empty->spread_s()) / repeat;
    cc.ok = cc.parent_call_s <= cc.claimed_s + cc.allowance_s;
    stats.parent_median_s = cc.parent_call_s;
    if (request.check_mode != request.headline_mode) {
      cc.events_checked = true;
      cc.synchronised_s = Median(check_claims);
      cc.headline_s = stats.median_s;
      cc.events_allowance_s = (kEventsCheckFactor - 1) * stats.median_s + kEventsCheckSlackS;
      cc.events_ok = cc.synchronised_s <= cc.headline_s + cc.events_allowance_s;
    }
  }

  if (request.side_figures) {
    std::vector<double> warm;
    for (int i = 0; i < 10; ++i) {
      if (!take("warm", false, &t)) return out;
      warm.push_back(t.child_s);
    }
    stats.warm_median_s = Median(warm);
    // N back-to-back calls in one graph, N sized to about 2 ms of work (10 to 1000 calls), so
    // that the graph's own launch is spread thin: a side figure without launch gaps.
    const int calls = static_cast<int>(
        std::clamp(2e-3 / std::max(stats.median_s, 1e-7), 10.0, 1000.0));
    auto graph = session.Graph(0, calls);
    if (graph) {
      stats.graph_replay_median_s = graph->seconds_per_call;
      stats.graph_calls = calls;
    } else if (graph.error().kind == HarnessProblem::Kind::kFailure) {
      stats.graph_replay_error = graph.error().diagnostics.substr(0, 300);
    } else {
      out.problem = graph.error();
      return out;
    }
  }
  stats.checked_samples = out.checked_samples;
  stats.check_seconds = out.check_seconds;
  out.stats = std::move(stats);
  return out;
}

}  // namespace kforge
