#include "kforge/profile/reducer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace kforge::profile {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Times for people: "812 ns", "41.3 us", "2.10 ms".
std::string Time(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string Pct(double v) { return fmt::format("{:.0f}%", v); }

// Kernel names from templates are long: the first `max` bytes, with an ellipsis.
std::string Short(std::string_view name, std::size_t max = 70) {
  if (name.size() <= max) return std::string(name);
  return std::string(name.substr(0, max - 3)) + "...";
}

std::optional<double> Metric(const KernelRecord& k, std::string_view name) {
  auto it = k.metrics.find(std::string(name));
  if (it == k.metrics.end()) return std::nullopt;
  return it->second;
}

std::optional<double> FirstMetric(const KernelRecord& k, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (auto v = Metric(k, n)) return v;
  }
  return std::nullopt;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct KernelGroup {
  std::string name;
  int launches = 0;
  double total_ns = 0;
  const KernelRecord* longest = nullptr;  // its counters stand for the group
};

struct Section {
  std::string title;
  int priority = 0;  // 0 always kept; higher is dropped first
  std::vector<std::string> lines;
};

// Stall reasons from one metric family, largest first: (reason, value).
std::vector<std::pair<std::string, double>> StallReasons(const KernelRecord& k) {
  // Families by preference: ncu's WarpStateStats ratios, then latency, then PC sampling counts.
  static const std::vector<std::pair<std::string, std::string>> kFamilies = {
      {"smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"},
      {"smsp__average_warp_latency_issue_stalled_", ""},
      {"smsp__pcsamp_warps_issue_stalled_", ""},
  };
  for (const auto& [prefix, suffix] : kFamilies) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [name, value] : k.metrics) {
      if (name.rfind(prefix, 0) != 0) continue;
      std::string reason = name.substr(prefix.size());
      if (!suffix.empty()) {
        const std::size_t s = reason.find(suffix);
        if (s == std::string::npos) continue;
        reason = reason.substr(0, s);
      } else {
        reason = reason.substr(0, reason.find('.'));
      }
      if (reason.ends_with("_not_issued") || reason == "selected" || value <= 0) continue;
      out.emplace_back(reason, value);
    }
    if (!out.empty()) {
      std::stable_sort(out.begin(), out.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      return out;
    }
  }
  return {};
}

}  // namespace

int EstimateTokens(std::string_view text) { return static_cast<int>((text.size() + 2) / 3); }

std::string BottleneckName(Bottleneck b) {
  switch (b) {
    case Bottleneck::kUnknown: return "unknown";
    case Bottleneck::kMemoryBound: return "memory-bound";
    case Bottleneck::kComputeBound: return "compute-bound";
    case Bottleneck::kLatencyBound: return "latency-bound";
    case Bottleneck::kLaunchBound: return "launch-bound";
    case Bottleneck::kUncoalesced: return "uncoalesced memory access";
    case Bottleneck::kBankConflicts: return "shared-memory bank conflicts";
    case Bottleneck::kRegisterPressure: return "register pressure (low occupancy)";
  }
  return "unknown";
}

PeakFacts DatasheetPeaks(std::string_view device_name) {
  const std::string name = Lower(device_name);
  struct Row {
    const char* key;
    const char* label;
    double gbs;
    double tflops;
    int sms;
  };
  // Vendor datasheet values (SXM parts): HBM bandwidth and non-tensor FP32 rate.
  static const Row kRows[] = {
      {"h200", "NVIDIA H200 SXM", 4800, 67, 132},
      {"h100", "NVIDIA H100 SXM", 3350, 67, 132},
      {"a100", "NVIDIA A100 SXM 80GB", 2039, 19.5, 108},
  };
  for (const Row& r : kRows) {
    if (name.find(r.key) != std::string::npos) {
      DeviceFacts f;
      f.name = r.label;
      f.memory_bandwidth_gbs = r.gbs;
      f.fp32_tflops = r.tflops;
      f.compute_units = r.sms;
      return PeakFacts{f, fmt::format("datasheet ({})", r.label)};
    }
  }
  return PeakFacts{std::nullopt, ""};
}

ProfileSummary Summarize(const Profile& p, const PeakFacts& peaks, int token_bound) {
  ProfileSummary out;
  const int calls = std::max(p.calls, 1);
  // Kernels grouped by name, largest total first (ties by name: deterministic).
  std::map<std::string, KernelGroup> by_name;
  int launches = 0;
  for (const auto& k : p.kernels) {
    KernelGroup& g = by_name[k.name];
    g.name = k.name;
    g.launches += k.launches;
    g.total_ns += k.duration_ns;
    launches += k.launches;
    if (g.longest == nullptr || k.duration_ns > g.longest->duration_ns) g.longest = &k;
  }
  std::vector<KernelGroup> groups;
  for (auto& [name, g] : by_name) groups.push_back(g);
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
  const double total_ns = TotalKernelNs(p);
  const double per_call_ns = total_ns / calls;
  const double launches_per_call = static_cast<double>(launches) / calls;
  const double mean_launch_ns = launches > 0 ? total_ns / launches : 0;
  const KernelRecord* top = groups.empty() ? nullptr : groups.front().longest;

  std::vector<Section> sections;
  Section head{"Profile", 0, {}};
  head.lines.push_back(fmt::format("tool: {}{}; {} call{} profiled", ToolName(p.tool),
                                   p.device.empty() ? "" : "; device: " + p.device, calls,
                                   calls == 1 ? "" : "s"));
  head.lines.push_back(fmt::format("per call: {:.3g} kernel launches ({} distinct), kernel time {}",
                                   launches_per_call, groups.size(), Time(per_call_ns)));
  // Launch gaps (tracing tools).
  std::optional<double> gap_share;
  if (!p.call_span_ns.empty()) {
    double span = 0;
    double gap = 0;
    for (double s : p.call_span_ns) span += s;
    for (double g : p.call_gap_ns) gap += g;
    if (span > 0) gap_share = gap / span;
  }
  std::optional<double> host_share;  // time of the annotated call no kernel ran
  if (!p.call_wall_ns.empty()) {
    const double wall = Median(p.call_wall_ns);
    head.lines.push_back(fmt::format("call wall time (host, median): {}", Time(wall)));
    if (wall > 0 && per_call_ns > 0) host_share = std::clamp(1.0 - per_call_ns / wall, 0.0, 1.0);
  }

  // Counters of the dominant kernel (ncu).
  auto m = [&](std::initializer_list<const char*> names) -> std::optional<double> {
    return top ? FirstMetric(*top, names) : std::nullopt;
  };
  const auto dram_pct = m({"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"});
  const auto mem_pct = m({"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"});
  const auto sm_pct = m({"sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  const auto achieved_occ = m({"sm__warps_active.avg.pct_of_peak_sustained_active"});
  const auto theory_occ = m({"sm__maximum_warps_per_active_cycle_pct"});
  const auto regs = m({"launch__registers_per_thread"});
  const auto smem_static = m({"launch__shared_mem_per_block_static"});
  const auto smem_dynamic = m({"launch__shared_mem_per_block_dynamic"});
  const auto l1_hit = m({"l1tex__t_sector_hit_rate.pct"});
  const auto l2_hit = m({"lts__t_sector_hit_rate.pct"});
  const auto insts = m({"smsp__inst_executed.sum"});
  const auto conflicts = m({"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"});
  std::optional<double> shared_wavefronts = m({"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"});
  std::optional<double> sectors_per_request;
  for (const char* op : {"ld", "st"}) {
    auto sectors = m({fmt::format("l1tex__t_sectors_pipe_lsu_mem_global_op_{}.sum", op).c_str()});
    auto requests = m({fmt::format("l1tex__t_requests_pipe_lsu_mem_global_op_{}.sum", op).c_str()});
    if (sectors && requests && *requests > 0) {
      sectors_per_request = std::max(sectors_per_request.value_or(0), *sectors / *requests);
    }
  }
  const auto dram_bytes = m({"dram__bytes.sum"});
  std::optional<double> flops;
  {
    auto ffma = m({"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"});
    auto fadd = m({"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"});
    auto fmul = m({"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"});
    if (ffma || fadd || fmul) flops = 2 * ffma.value_or(0) + fadd.value_or(0) + fmul.value_or(0);
  }
  // Occupancy limiters: the smallest block-per-SM limit is the binding one (on a tie the
  // hardware's warp and block limits come first: a resource is named only when it binds alone).
  std::vector<std::pair<std::string, double>> limits;
  for (const auto& [key, label] : std::vector<std::pair<const char*, const char*>>{
           {"launch__occupancy_limit_warps", "warps per SM"},
           {"launch__occupancy_limit_blocks", "blocks per SM"},
           {"launch__occupancy_limit_shared_mem", "shared memory"},
           {"launch__occupancy_limit_registers", "registers"}}) {
    if (auto v = m({key})) limits.emplace_back(label, *v);
  }
  std::stable_sort(limits.begin(), limits.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string limiter = limits.empty() ? "" : limits.front().first;

  // Speed of light.
  Section sol{"Speed of light (dominant kernel)", 1, {}};
  if (dram_pct || sm_pct || mem_pct) {
    sol.lines.push_back(fmt::format(
        "ncu: DRAM throughput {} of peak, memory (any level) {}, SM throughput {}",
        dram_pct ? Pct(*dram_pct) : "n/a", mem_pct ? Pct(*mem_pct) : "n/a",
        sm_pct ? Pct(*sm_pct) : "n/a"));
  }
  const DeviceFacts* facts = peaks.facts ? &*peaks.facts : nullptr;
  if (top && top->duration_ns > 0 && dram_bytes) {
    const double gbs = *dram_bytes / top->duration_ns;  // bytes/ns = GB/s
    if (facts && facts->memory_bandwidth_gbs > 0) {
      sol.lines.push_back(fmt::format("DRAM: {:.0f} GB/s = {:.0f}% of {:.0f} GB/s ({})", gbs,
                                      100 * gbs / facts->memory_bandwidth_gbs,
                                      facts->memory_bandwidth_gbs, peaks.source));
    } else {
      sol.lines.push_back(fmt::format("DRAM: {:.0f} GB/s (device peak unknown)", gbs));
    }
  }
  if (top && top->duration_ns > 0 && flops && *flops > 0) {
    const double tflops = *flops / top->duration_ns / 1e3;
    if (facts && facts->fp32_tflops > 0) {
      sol.lines.push_back(fmt::format("FP32: {:.2f} TFLOP/s = {:.0f}% of {:.1f} TFLOP/s ({})",
                                      tflops, 100 * tflops / facts->fp32_tflops,
                                      facts->fp32_tflops, peaks.source));
    } else {
      sol.lines.push_back(fmt::format("FP32: {:.2f} TFLOP/s (device peak unknown)", tflops));
    }
  }
  if (sol.lines.empty()) {
    sol.lines.push_back(fmt::format("not available: {} reports no throughput counters{}",
                                    ToolName(p.tool),
                                    p.tool == Tool::kNcu ? "" : " (profile with ncu or the vendor's counter tool for this)"));
  }

  // Bottleneck.
  std::vector<std::string>& ev = out.evidence;
  const bool many_small = launches_per_call >= 8 && mean_launch_ns < 10e3;
  const double gap_or_host = std::max(gap_share.value_or(0), host_share.value_or(0));
  bool hint_uncoalesced = false;
  bool hint_bank = false;
  for (const auto& h : p.hints) {
    const std::string text = Lower(h.rule + " " + h.message);
    const bool big = h.estimated_speedup_pct.value_or(0) >= 10;
    if (big && text.find("uncoalesced") != std::string::npos && text.find("global") != std::string::npos) hint_uncoalesced = true;
    if (big && (text.find("bank conflict") != std::string::npos || text.find("sharedmemoryconflicts") != std::string::npos)) hint_bank = true;
  }
  const double conflict_ratio =
      conflicts && shared_wavefronts && *shared_wavefronts > 0 ? *conflicts / *shared_wavefronts : 0;
  const double throughput = std::max({dram_pct.value_or(0), mem_pct.value_or(0)});
  if ((many_small && (p.tool == Tool::kNcu || gap_or_host >= 0.3)) ||
      (launches_per_call >= 2 && gap_or_host >= 0.5)) {
    out.bottleneck = Bottleneck::kLaunchBound;
    ev.push_back(fmt::format("{:.3g} launches per call, mean {} each", launches_per_call,
                             Time(mean_launch_ns)));
    if (gap_share) ev.push_back(fmt::format("{:.0f}% of the kernels' span is gaps between them", 100 * *gap_share));
    if (host_share) ev.push_back(fmt::format("{:.0f}% of the call's wall time runs no kernel", 100 * *host_share));
  } else if ((sectors_per_request && *sectors_per_request > 16) || hint_uncoalesced) {
    out.bottleneck = Bottleneck::kUncoalesced;
    if (sectors_per_request) {
      ev.push_back(fmt::format("{:.1f} L1 sectors per global request (a warp reading consecutive "
                               "32-bit words needs 4; 128-bit words 16)", *sectors_per_request));
    }
    if (hint_uncoalesced) ev.push_back("ncu's rules report uncoalesced global accesses");
    if (dram_pct) ev.push_back(fmt::format("DRAM throughput {} of peak, mostly wasted sectors", Pct(*dram_pct)));
  } else if ((conflict_ratio >= 0.25 && shared_wavefronts.value_or(0) >= 1000) || hint_bank) {
    out.bottleneck = Bottleneck::kBankConflicts;
    if (conflicts) {
      ev.push_back(fmt::format("{:.0f} shared-memory bank conflicts over {:.0f} shared wavefronts "
                               "({:.0f}%)", *conflicts, shared_wavefronts.value_or(0), 100 * conflict_ratio));
    }
    if (hint_bank) ev.push_back("ncu's rules report shared-memory bank conflicts");
  } else if (regs && limiter == "registers" && achieved_occ && *achieved_occ < 40 && *regs >= 96) {
    out.bottleneck = Bottleneck::kRegisterPressure;
    ev.push_back(fmt::format("{:.0f} registers per thread limit occupancy: achieved {}{}",
                             *regs, Pct(*achieved_occ),
                             theory_occ ? ", theoretical " + Pct(*theory_occ) : ""));
  } else if (throughput >= 60 && throughput >= sm_pct.value_or(0)) {
    out.bottleneck = Bottleneck::kMemoryBound;
    ev.push_back(fmt::format("memory throughput {} of peak vs SM {}", Pct(throughput),
                             sm_pct ? Pct(*sm_pct) : "n/a"));
  } else if (sm_pct && *sm_pct >= 60) {
    out.bottleneck = Bottleneck::kComputeBound;
    ev.push_back(fmt::format("SM throughput {} of peak vs memory {}", Pct(*sm_pct), Pct(throughput)));
  } else if (sm_pct || dram_pct) {
    out.bottleneck = Bottleneck::kLatencyBound;
    ev.push_back(fmt::format("neither near peak: SM {}, memory {}", sm_pct ? Pct(*sm_pct) : "n/a",
                             Pct(throughput)));
    if (achieved_occ) ev.push_back(fmt::format("achieved occupancy {}", Pct(*achieved_occ)));
  } else if (!groups.empty() && total_ns > 0) {
    ev.push_back(fmt::format("no hardware counters; the largest kernel {} takes {:.0f}% of kernel time",
                             Short(groups.front().name, 60), 100 * groups.front().total_ns / total_ns));
  }
  Section bott{"Bottleneck", 0, {}};
  bott.lines.push_back("dominant bottleneck: " + BottleneckName(out.bottleneck));
  for (const auto& e : ev) bott.lines.push_back("- " + e);

  Section launch{"Launch overhead", 1, {}};
  if (gap_share) {
    launch.lines.push_back(fmt::format("gaps between kernels: {:.0f}% of the span from first kernel start "
                                       "to last kernel end", 100 * *gap_share));
  }
  if (host_share) launch.lines.push_back(fmt::format("call time with no kernel running: {:.0f}%", 100 * *host_share));
  launch.lines.push_back(fmt::format("mean kernel duration {}", Time(mean_launch_ns)));

  Section occ{"Occupancy", 2, {}};
  if (achieved_occ || theory_occ) {
    occ.lines.push_back(fmt::format("achieved {} of the SM's warps, theoretical {}",
                                    achieved_occ ? Pct(*achieved_occ) : "n/a",
                                    theory_occ ? Pct(*theory_occ) : "n/a"));
  }
  if (!limits.empty()) {
    std::string l = "blocks per SM allowed by:";
    for (const auto& [label, v] : limits) l += fmt::format(" {} {:.0f};", label, v);
    occ.lines.push_back(l + " limiter: " + limiter);
  }
  if (regs || smem_static || smem_dynamic) {
    occ.lines.push_back(fmt::format("registers/thread {}, shared memory/block {:.0f} B static + {:.0f} B dynamic",
                                    regs ? fmt::format("{:.0f}", *regs) : "n/a", smem_static.value_or(0),
                                    smem_dynamic.value_or(0)));
  }
  if (top && !top->block.empty()) occ.lines.push_back(fmt::format("grid {} block {}", top->grid, top->block));
  for (const auto& [metric, label] : std::vector<std::pair<const char*, const char*>>{
           {"rocprof.vgpr_count", "VGPRs"}, {"rocprof.lds_bytes", "LDS bytes"},
           {"rocprof.scratch_bytes", "scratch bytes"}}) {
    if (auto v = m({metric})) occ.lines.push_back(fmt::format("{}: {:.0f}", label, *v));
  }

  Section stalls{"Top warp stall reasons (dominant kernel)", 3, {}};
  if (top) {
    auto reasons = StallReasons(*top);
    double sum = 0;
    for (const auto& r : reasons) sum += r.second;
    for (std::size_t i = 0; i < reasons.size() && i < 4; ++i) {
      stalls.lines.push_back(fmt::format("{}: {:.0f}%", reasons[i].first, 100 * reasons[i].second / sum));
    }
  }

  Section mem{"Memory access", 3, {}};
  if (l1_hit || l2_hit) {
    mem.lines.push_back(fmt::format("hit rates: L1 {}, L2 {}", l1_hit ? Pct(*l1_hit) : "n/a",
                                    l2_hit ? Pct(*l2_hit) : "n/a"));
  }
  if (sectors_per_request) mem.lines.push_back(fmt::format("global: {:.1f} sectors per request", *sectors_per_request));
  if (conflicts) mem.lines.push_back(fmt::format("shared: {:.0f} bank conflicts, {:.0f} wavefronts", *conflicts, shared_wavefronts.value_or(0)));
  if (insts) mem.lines.push_back(fmt::format("instructions issued (warp level): {:.4g}", *insts));

  Section kernels{"Kernels by share of time", 2, {}};
  for (std::size_t i = 0; i < groups.size() && i < 6; ++i) {
    const auto& g = groups[i];
    kernels.lines.push_back(fmt::format("{:.0f}% {} x{} ({} total/call)", total_ns > 0 ? 100 * g.total_ns / total_ns : 0,
                                        Short(g.name), g.launches, Time(g.total_ns / calls)));
  }
  if (groups.size() > 6) kernels.lines.push_back(fmt::format("... {} more kernels", groups.size() - 6));

  Section hints{"Tool hints", 4, {}};
  {
    std::vector<const ToolHint*> sorted;
    for (const auto& h : p.hints) sorted.push_back(&h);
    std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
      return a->estimated_speedup_pct.value_or(-1) > b->estimated_speedup_pct.value_or(-1);
    });
    for (std::size_t i = 0; i < sorted.size() && i < 4; ++i) {
      const ToolHint& h = *sorted[i];
      hints.lines.push_back(fmt::format("{}{}: {}", h.rule,
                                        h.estimated_speedup_pct ? fmt::format(" (est. speedup {:.0f}%)", *h.estimated_speedup_pct) : "",
                                        Short(h.message, 240)));
    }
  }

  Section notes{"Notes", 5, {}};
  for (std::size_t i = 0; i < p.notes.size() && i < 4; ++i) notes.lines.push_back(Short(p.notes[i], 160));
  if (p.tool == Tool::kImage) {
    notes.lines.push_back(fmt::format("{} screenshot(s) attached as images", p.image_paths.size()));
  }

  for (Section* s : {&head, &bott, &sol, &occ, &launch, &stalls, &mem, &kernels, &hints, &notes}) {
    if (!s->lines.empty()) sections.push_back(std::move(*s));
  }
  auto render = [&](const std::vector<Section>& ss) {
    std::string text;
    for (const auto& s : ss) {
      text += "## " + s.title + "\n";
      for (const auto& l : s.lines) text += l + "\n";
    }
    return text;
  };
  std::string text = render(sections);
  while (EstimateTokens(text) > token_bound) {
    // Drop the lowest-priority section (the last one among equals).
    auto victim = sections.end();
    for (auto it = sections.begin(); it != sections.end(); ++it) {
      if (it->priority > 0 && (victim == sections.end() || it->priority >= victim->priority)) victim = it;
    }
    if (victim == sections.end()) break;
    out.dropped_sections.push_back(victim->title);
    sections.erase(victim);
    text = render(sections);
  }
  if (EstimateTokens(text) > token_bound) {
    text.resize(static_cast<std::size_t>(token_bound) * 3 - 4);
    text += "...\n";
  }
  out.text = std::move(text);
  out.estimated_tokens = EstimateTokens(out.text);
  return out;
}

}  // namespace kforge::profile
