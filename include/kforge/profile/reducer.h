// The reducer: a Profile (any tool) to a deterministic summary of at most kSummaryTokenBound
// tokens for the analysis agent — speed of light against the device's peaks, the dominant
// bottleneck with its evidence, occupancy and its limiter, top stall reasons, launch-overhead
// share, per-kernel breakdown and the tool's own hints.
//
// Tokens are estimated conservatively as ceil(bytes / 3) (English text and numbers run at about 4
// bytes per token with common tokenizers; 3 leaves room for kernel names and symbols). The bound
// is enforced by dropping whole sections, lowest priority first, then cutting the last lines.
#ifndef KFORGE_PROFILE_REDUCER_H_
#define KFORGE_PROFILE_REDUCER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/profile/profile.h"
#include "kforge/prompt/device_facts.h"

namespace kforge::profile {

inline constexpr int kSummaryTokenBound = 1000;

// ceil(bytes / 3).
int EstimateTokens(std::string_view text);

enum class Bottleneck {
  kUnknown,           // the evidence names none (tracing tools without counters, mixed signals)
  kMemoryBound,       // DRAM/memory throughput near peak, compute well below
  kComputeBound,      // SM throughput near peak
  kLatencyBound,      // neither near peak: latency or too little parallelism
  kLaunchBound,       // many short kernels, gaps between them, or host work dominating a call
  kUncoalesced,       // global accesses touch many more sectors than they use
  kBankConflicts,     // shared-memory accesses serialised by bank conflicts
  kRegisterPressure,  // occupancy limited by registers per thread
};

// "memory-bound", "compute-bound", "latency-bound", "launch-bound", "uncoalesced memory access",
// "shared-memory bank conflicts", "register pressure (low occupancy)", "unknown".
std::string BottleneckName(Bottleneck b);

// Where the device's peaks come from, and the peaks themselves (DeviceFacts' fields
// memory_bandwidth_gbs and fp32_tflops; 0 = unknown).
struct PeakFacts {
  std::optional<DeviceFacts> facts;
  std::string source;  // "calibration", "device facts", "datasheet (NVIDIA H200 SXM)", ...
};

// Datasheet peaks of a few accelerators by the name a tool or the driver reports (substring
// match, case-insensitive: "H200", "H100", "A100"); nullopt for others.
PeakFacts DatasheetPeaks(std::string_view device_name);

struct ProfileSummary {
  Bottleneck bottleneck = Bottleneck::kUnknown;
  std::vector<std::string> evidence;  // the lines that support `bottleneck`
  std::string text;                   // the summary the analysis agent reads
  int estimated_tokens = 0;           // EstimateTokens(text), <= token_bound
  std::vector<std::string> dropped_sections;  // sections left out to meet the bound
};

// Deterministic: the same profile and peaks give the same text.
ProfileSummary Summarize(const Profile& profile, const PeakFacts& peaks,
                         int token_bound = kSummaryTokenBound);

}  // namespace kforge::profile

#endif  // KFORGE_PROFILE_REDUCER_H_
