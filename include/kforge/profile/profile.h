// Profile: what one profiler said about one call of a kernel (or a candidate's forward), as typed
// values. Every parser (kforge/profile/parsers.h) produces one; the reducer
// (kforge/profile/reducer.h) turns one into a compact summary for the analysis agent.
//
// Units are fixed here so that parsers convert once: times in nanoseconds, sizes in bytes,
// percentages in 0..100. A metric a tool did not report is absent (std::nullopt), never 0.
#ifndef KFORGE_PROFILE_PROFILE_H_
#define KFORGE_PROFILE_PROFILE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge::profile {

// The profilers KForge reads.
enum class Tool {
  kNcu,       // Nsight Compute, `--csv --page raw` (+ `--page details` for rules)
  kTorch,     // torch.profiler chrome trace (export_chrome_trace)
  kOpenCl,    // OpenCL event profiling records written by the runner
  kNsys,      // Nsight Systems `nsys stats --report cuda_gpu_kern_sum` or its SQLite export
  kRocprof,   // AMD rocprofv3 kernel-trace CSV
  kUnitrace,  // Intel unitrace device timing summary
  kXctrace,   // Apple `xctrace export` XML
  kImage,     // a screenshot of a GUI-only tool
};

std::string ToolName(Tool tool);                      // "ncu", "torch", ...
std::optional<Tool> ParseToolName(std::string_view);  // inverse of ToolName

// One kernel (or, on CPUs, one top-level operator). With a tool that aggregates (nsys stats,
// unitrace), one record stands for `launches` launches and `duration_ns` is their total.
struct KernelRecord {
  std::string name;
  int launches = 1;
  double duration_ns = 0;  // summed over `launches`
  std::optional<double> start_ns;  // on the tool's clock; only tools that trace single launches
  std::optional<double> end_ns;
  std::string grid;   // "(4096, 1, 1)" when known
  std::string block;  // "(256, 1, 1)" when known
  // Hardware counters by the tool's own metric name (ncu: "dram__throughput.avg.pct_of_peak..."),
  // converted to the units above. Empty for tracing tools.
  std::map<std::string, double> metrics;
};

// A hint of the tool's own (ncu rules): which rule, what it says, the gain it estimates.
struct ToolHint {
  std::string kernel;
  std::string rule;
  std::string message;
  std::optional<double> estimated_speedup_pct;  // ncu's "Estimated Speedup" (local or global)
};

// A profile of `calls` calls of the same forward.
struct Profile {
  Tool tool = Tool::kNcu;
  std::string device;              // what the tool named, when it did
  int calls = 1;                   // how many calls the records cover (per-call shares divide)
  std::vector<KernelRecord> kernels;
  // Wall time of each call from its first kernel's start to its last kernel's end (tracing tools),
  // and the time inside that span that no kernel ran (launch gaps, host work).
  std::vector<double> call_span_ns;
  std::vector<double> call_gap_ns;
  std::vector<double> call_wall_ns;  // the call's host-side wall time, when annotated
  std::vector<ToolHint> hints;
  std::vector<std::string> notes;        // what the parser could not read, once each
  std::vector<std::string> image_paths;  // kImage: screenshots for a vision-capable model
};

// Sum of duration_ns over all records.
double TotalKernelNs(const Profile& p);

}  // namespace kforge::profile

#endif  // KFORGE_PROFILE_PROFILE_H_
