#include "kforge/prompt/device_facts.h"

#include <fmt/format.h>

namespace kforge {
namespace {

// Up to three significant decimals, without trailing zeros: 4800, 1.5, 0.125.
std::string Number(double value) {
  std::string text = fmt::format("{:.3f}", value);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::vector<DeviceFactLine> DescribeDeviceFacts(const DeviceFacts& facts) {
  std::vector<DeviceFactLine> lines;
  auto add = [&lines](std::string label, std::string value) {
    lines.push_back({std::move(label), std::move(value)});
  };
  if (!facts.name.empty()) add("device", facts.name);
  if (!facts.architecture.empty()) add("architecture", facts.architecture);
  if (facts.compute_units > 0) {
    const std::string unit =
        facts.compute_unit_name.empty() ? "compute unit" : facts.compute_unit_name;
    add(fmt::format("{} count", unit), fmt::format("{}", facts.compute_units));
  }
  if (facts.warp_size > 0) add("warp size", fmt::format("{} threads", facts.warp_size));
  if (facts.memory_gib > 0) add("device memory", fmt::format("{} GiB", Number(facts.memory_gib)));
  if (facts.memory_bandwidth_gbs > 0) {
    add("memory bandwidth", fmt::format("{} GB/s", Number(facts.memory_bandwidth_gbs)));
  }
  if (facts.l2_cache_mib > 0) add("L2 cache", fmt::format("{} MiB", Number(facts.l2_cache_mib)));
  if (facts.l1_cache_kib > 0) {
    add("L1 / shared memory per unit", fmt::format("{} KiB", Number(facts.l1_cache_kib)));
  }
  if (facts.shared_memory_per_block_kib > 0) {
    add("shared memory per block (max)",
        fmt::format("{} KiB", Number(facts.shared_memory_per_block_kib)));
  }
  if (facts.registers_per_unit > 0) {
    add("32-bit registers per unit", fmt::format("{}", facts.registers_per_unit));
  }
  if (facts.fp32_tflops > 0) add("peak fp32", fmt::format("{} TFLOP/s", Number(facts.fp32_tflops)));
  if (facts.tensor_tflops > 0) {
    add("peak 16-bit matrix (dense)", fmt::format("{} TFLOP/s", Number(facts.tensor_tflops)));
  }
  for (const std::string& note : facts.notes) add("note", note);
  return lines;
}

}  // namespace kforge
