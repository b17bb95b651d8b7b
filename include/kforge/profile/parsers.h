// Parsers of profiler exports: pure functions from the text a tool wrote to a Profile.
//
// Each follows the tool's documented export schema; columns are found by header name, so extra
// or reordered columns are fine. A document that is not the expected kind is a kParse error naming
// what is missing; a kernel row with an unreadable value keeps its other values and adds a note.
#ifndef KFORGE_PROFILE_PARSERS_H_
#define KFORGE_PROFILE_PARSERS_H_

#include <string_view>

#include "kforge/core/error.h"
#include "kforge/profile/profile.h"

namespace kforge::profile {

// Nsight Compute `ncu --csv --page raw [--print-units base]`: a header row ("ID", ..., "Kernel
// Name", ..., metric names), a units row, then one row per profiled launch. Launches of the same
// kernel name stay separate records. Units are converted (nsecond/usecond/msecond/second,
// byte/Kbyte/Mbyte/Gbyte, "%"); thousands separators are accepted.
Result<Profile> ParseNcuRawCsv(std::string_view csv);

// Nsight Compute `ncu --csv --page details --print-details all`: rows of "Section Name", "Metric
// Name", "Metric Value", and rule rows ("Rule Name", "Rule Description", "Estimated Speedup").
// Adds the rules to `profile->hints`; metrics found here that the raw page lacked are added to the
// kernel with the same ID.
Status AddNcuDetailsCsv(std::string_view csv, Profile* profile);

// torch.profiler's chrome trace (export_chrome_trace). GPU kernels are events of category
// "kernel"; without any (a CPU device) the top-level "cpu_op" events are the records. Calls are the
// "user_annotation" ranges named `call_annotation` (the runner's "kforge_call"); kernels belong to
// the call whose range holds their launch (correlation ids) or their own start.
Result<Profile> ParseTorchChromeTrace(std::string_view json,
                                      std::string_view call_annotation = "kforge_call");

// The runner's OpenCL event records (runner/PROTOCOL.md, "Phase profile"): {"device": ..., "calls":
// [{"wall_ns": .., "kernels": [{"name", "queued", "submit", "start", "end"}]}]}, times in ns.
Result<Profile> ParseOpenClEvents(std::string_view json);

// Nsight Systems `nsys stats --report cuda_gpu_kern_sum --format csv` (columns "Time (%)", "Total
// Time (ns)", "Instances", ..., "Name").
Result<Profile> ParseNsysKernelSumCsv(std::string_view csv);

// AMD rocprofv3 `--kernel-trace --output-format csv` (kernel_trace.csv: "Kernel_Name",
// "Start_Timestamp", "End_Timestamp", grid and workgroup sizes, "VGPR_Count", "LDS_Block_Size"...).
Result<Profile> ParseRocprofKernelTraceCsv(std::string_view csv);

// Intel unitrace `-d` (device timing summary): the table whose header is "Kernel, Calls, Time
// (ns), Time (%), Average (ns), Min (ns), Max (ns)" (spaces around commas allowed).
Result<Profile> ParseUnitraceDeviceSummary(std::string_view text);

// Apple `xctrace export --xpath '...metal-gpu-intervals...'` XML: <row> elements whose children
// carry start-time, duration and a label/name. Values referenced by ref="id" are resolved.
Result<Profile> ParseXctraceXml(std::string_view xml);

}  // namespace kforge::profile

#endif  // KFORGE_PROFILE_PARSERS_H_
