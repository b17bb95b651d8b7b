// Parsers over fixtures written from each tool's documented export schema.
#include <gtest/gtest.h>

#include "kforge/profile/parsers.h"
#include "test_files.h"

namespace kforge::profile {
namespace {

TEST(NcuRawCsv, ReadsMetricsWithUnitsAndThousandsSeparators) {
  auto p = ParseNcuRawCsv(Slurp(kFixtures / "ncu" / "memory_bound.raw.csv"));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 1u);
  const KernelRecord& k = p->kernels[0];
  EXPECT_EQ(k.name, "copy_scale(float const*, float*, long)");
  EXPECT_EQ(p->device, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(k.duration_ns, 290.4e3);  // usecond -> ns
  EXPECT_DOUBLE_EQ(k.metrics.at("dram__bytes.sum"), 1342.18e6);  // Mbyte -> byte
  EXPECT_DOUBLE_EQ(k.metrics.at("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 8388608);
  EXPECT_DOUBLE_EQ(k.metrics.at("dram__throughput.avg.pct_of_peak_sustained_elapsed"), 91.2);
  EXPECT_EQ(k.block, "(256, 1, 1)");
}

TEST(NcuRawCsv, KeepsEveryLaunch) {
  auto p = ParseNcuRawCsv(Slurp(kFixtures / "ncu" / "launch_bound.raw.csv"));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->kernels.size(), 64u);
  EXPECT_NEAR(TotalKernelNs(*p), 64 * 1.86e3, 1e-6);
}

TEST(NcuRawCsv, RejectsOtherDocuments) {
  EXPECT_FALSE(ParseNcuRawCsv("a,b,c\n1,2,3\n"));
  EXPECT_FALSE(ParseNcuRawCsv(""));
  auto header_only = ParseNcuRawCsv("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n");
  ASSERT_FALSE(header_only);
  EXPECT_NE(header_only.error().message.find("no kernel rows"), std::string::npos);
}

TEST(NcuDetailsCsv, ReadsRulesWithEstimatedSpeedups) {
  auto p = ParseNcuRawCsv(Slurp(kFixtures / "ncu" / "uncoalesced.raw.csv"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(AddNcuDetailsCsv(Slurp(kFixtures / "ncu" / "uncoalesced.details.csv"), &*p));
  // Three OPT rules; the INF rule without a speedup is left out.
  ASSERT_EQ(p->hints.size(), 3u);
  EXPECT_EQ(p->hints[1].rule, "UncoalescedGlobalAccess");
  ASSERT_TRUE(p->hints[1].estimated_speedup_pct);
  EXPECT_DOUBLE_EQ(*p->hints[1].estimated_speedup_pct, 84.03);
  EXPECT_DOUBLE_EQ(p->kernels[0].metrics.at("details.Duration"), 2210.9e3);
}

TEST(TorchTrace, AssignsKernelsToCallsByCorrelation) {
  auto p = ParseTorchChromeTrace(Slurp(kFixtures / "torch" / "cuda_three_kernels.json"));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->device, "NVIDIA H200");
  EXPECT_EQ(p->calls, 2);
  EXPECT_EQ(p->kernels.size(), 6u);  // the upload copy outside the calls is not counted
  ASSERT_EQ(p->call_span_ns.size(), 2u);
  // 40 + 12 + 4 + 12 + 3.5 us: span 71.5 us, of which 24 us gaps.
  EXPECT_NEAR(p->call_span_ns[0], 71.5e3, 1e-6);
  EXPECT_NEAR(p->call_gap_ns[0], 24e3, 1e-6);
  EXPECT_NEAR(p->call_wall_ns[0], 120e3, 1e-6);
}

TEST(TorchTrace, CpuTraceUsesTopLevelOperators) {
  const char* trace = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "kforge_call", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 12, "dur": 45},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 70, "dur": 10}]})";
  auto p = ParseTorchChromeTrace(trace);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_EQ(p->kernels[0].name, "aten::linear");
  EXPECT_EQ(p->kernels[1].name, "aten::relu");
  EXPECT_NEAR(p->call_gap_ns[0], 10e3, 1e-6);
}

TEST(TorchTrace, TraceWithoutCategoriesFromCpuOnlyBuilds) {
  // torch without Kineto writes "pid": "CPU functions" and no "cat".
  const char* trace = R"({"traceEvents": [
    {"name": "kforge_call", "ph": "X", "ts": 900, "dur": 4000, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::addmm", "ph": "X", "ts": 1000, "dur": 3000, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::relu", "ph": "X", "ts": 4100, "dur": 500, "tid": 1, "pid": "CPU functions", "args": {}}]})";
  auto p = ParseTorchChromeTrace(trace);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->calls, 1);
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_NEAR(p->call_wall_ns[0], 4e6, 1e-6);
}

TEST(TorchTrace, RejectsNonTraces) {
  EXPECT_FALSE(ParseTorchChromeTrace("not json"));
  EXPECT_FALSE(ParseTorchChromeTrace(R"({"foo": 1})"));
}

TEST(OpenClEvents, ReadsCallsAndQueueDelays) {
  auto p = ParseOpenClEvents(Slurp(kFixtures / "other" / "opencl_events.json"));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->calls, 2);
  ASSERT_EQ(p->kernels.size(), 4u);
  EXPECT_DOUBLE_EQ(p->kernels[0].duration_ns, 50000);
  EXPECT_DOUBLE_EQ(p->kernels[1].metrics.at("opencl.queued_to_start_ns"), 89000);
  EXPECT_DOUBLE_EQ(p->call_span_ns[0], 140000);
  EXPECT_DOUBLE_EQ(p->call_gap_ns[0], 30000);
  EXPECT_FALSE(ParseOpenClEvents(R"({"calls": [{"kernels": [{"name": "k"}]}]})"));
}

TEST(NsysKernelSum, ReadsTotalsAndInstances) {
  auto p = ParseNsysKernelSumCsv(Slurp(kFixtures / "other" / "nsys_cuda_gpu_kern_sum.csv"));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 3u);
  EXPECT_EQ(p->kernels[0].launches, 64);
  EXPECT_DOUBLE_EQ(p->kernels[2].duration_ns, 342720);
  EXPECT_EQ(p->kernels[0].name, "void gemm_tiled<128, 128, 8>(float const*, float const*, float*, int, int, int)");
}

TEST(RocprofKernelTrace, ReadsDispatchesAndResources) {
  auto p = ParseRocprofKernelTraceCsv(Slurp(kFixtures / "other" / "rocprofv3_kernel_trace.csv"));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(p->kernels[0].duration_ns, 48000);
  EXPECT_DOUBLE_EQ(p->kernels[0].metrics.at("rocprof.vgpr_count"), 40);
  EXPECT_EQ(p->kernels[0].block, "(256, 1, 1)");
  EXPECT_DOUBLE_EQ(p->call_gap_ns[0], 13000);
}

TEST(UnitraceSummary, ReadsTheDeviceTable) {
  auto p = ParseUnitraceDeviceSummary(Slurp(kFixtures / "other" / "unitrace_device_summary.txt"));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 3u);
  EXPECT_EQ(p->kernels[0].name, "gemm_kernel[SIMD32 {8; 64; 1} {256; 16; 1}]");
  EXPECT_EQ(p->kernels[0].launches, 20);
  EXPECT_DOUBLE_EQ(p->kernels[1].duration_ns, 640160);
  EXPECT_FALSE(ParseUnitraceDeviceSummary("nothing here\n"));
}

TEST(XctraceXml, ResolvesReferencedValues) {
  auto p = ParseXctraceXml(Slurp(kFixtures / "other" / "xctrace_metal_gpu_intervals.xml"));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 3u);
  EXPECT_EQ(p->kernels[2].name, "matmul_tiled");     // ref="4"
  EXPECT_DOUBLE_EQ(p->kernels[2].duration_ns, 410000);  // ref="2"
  EXPECT_EQ(p->kernels[1].name, "bias_gelu");
  EXPECT_FALSE(ParseXctraceXml("<foo/>"));
}

TEST(ToolNames, RoundTrip) {
  for (Tool t : {Tool::kNcu, Tool::kTorch, Tool::kOpenCl, Tool::kNsys, Tool::kRocprof,
                 Tool::kUnitrace, Tool::kXctrace, Tool::kImage}) {
    EXPECT_EQ(ParseToolName(ToolName(t)), t);
  }
  EXPECT_FALSE(ParseToolName("vtune"));
}

}  // namespace
}  // namespace kforge::profile
