// DeviceFacts: hardware facts of the device a kernel is written for, as the prompts state them.
// Every field is optional: zero (or empty) means unknown, and an unknown fact is left out of the
// prompt rather than guessed.
#ifndef KFORGE_PROMPT_DEVICE_FACTS_H_
#define KFORGE_PROMPT_DEVICE_FACTS_H_

#include <string>
#include <vector>

namespace kforge {

struct DeviceFacts {
  std::string name;                        // "NVIDIA H200"
  std::string architecture;                // "sm_90 (Hopper)", "gfx942", "x86-64 AVX-512"
  int compute_units = 0;                   // SMs (NVIDIA), CUs (AMD), Xe cores (Intel), cores (CPU)
  std::string compute_unit_name = "SM";    // the vendor's word for one compute unit
  int warp_size = 0;                       // threads per warp / wavefront / SIMD group
  double memory_gib = 0;                   // device memory
  double memory_bandwidth_gbs = 0;         // peak or measured DRAM bandwidth, GB/s
  double l2_cache_mib = 0;                 // last-level cache
  double l1_cache_kib = 0;                 // L1 / shared memory per compute unit
  double shared_memory_per_block_kib = 0;  // largest shared memory one block may use
  int registers_per_unit = 0;              // 32-bit registers per compute unit
  double fp32_tflops = 0;                  // peak fp32 (non-tensor) rate
  double tensor_tflops = 0;                // peak dense 16-bit matrix rate (bf16/fp16 tensor cores)
  std::vector<std::string> notes;  // further facts, one line each ("measured copy: 4.1 TB/s")
};

// One fact as the prompts print it.
struct DeviceFactLine {
  std::string label;  // "memory bandwidth"
  std::string value;  // "4800 GB/s"
};

// The known facts of `facts`, in a fixed order, with units; unknown fields are left out, notes
// come last.
std::vector<DeviceFactLine> DescribeDeviceFacts(const DeviceFacts& facts);

}  // namespace kforge

#endif  // KFORGE_PROMPT_DEVICE_FACTS_H_
