"""KForge's cold timing of native CUDA kernels against Nsight Compute, and its repeatability.

Runs on a CUDA machine with the runner package on PYTHONPATH (bench/h200_timing_agreement.sh).
For each kernel (the relu and tiled-matmul fixtures at sizes from about 5 us to 10 ms):

  measure  - the runner's own protocol (timing.measure_on, clock events-cold) five times on the
             same inputs: the five medians, their spread, and the warm "plain event loop" figure;
  ncu      - with --ncu, only a few plain calls, for `ncu --metrics gpu__time_duration.sum` to
             time each launch (the script that drives it sums the per-launch durations per call).

Prints one JSON object per kernel. Not part of the product: a measurement of it.
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys

import torch

from kforge_runner import native, protocol, timing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABI = os.path.join(ROOT, "runner", "kforge_runner", "abi")
# name -> (source, make inputs, output shape)
KERNELS = {
    "relu_64x4096": ("relu/honest.cu", lambda: [torch.randn(64, 4096)], (64, 4096)),
    "relu_1024x4096": ("relu/honest.cu", lambda: [torch.randn(1024, 4096)], (1024, 4096)),
    "relu_8192x8192": ("relu/honest.cu", lambda: [torch.randn(8192, 8192)], (8192, 8192)),
    "relu_32768x16384": ("relu/honest.cu", lambda: [torch.randn(32768, 16384)], (32768, 16384)),
    "matmul_1024": ("matmul/honest.cu", lambda: [torch.randn(1024, 1024), torch.randn(1024, 1024)],
                    (1024, 1024)),
    "matmul_3072": ("matmul/honest.cu", lambda: [torch.randn(3072, 3072), torch.randn(3072, 3072)],
                    (3072, 3072)),
}


def build(source: str, workdir: str) -> str:
    so = os.path.join(workdir, os.path.basename(os.path.dirname(source)) + ".so")
    if not os.path.exists(so):
        subprocess.run(["nvcc", "-O3", "-arch=sm_90a", "-shared", "-Xcompiler", "-fPIC", "-I", ABI,
                        os.path.join(ROOT, "tests/fixtures/candidates", source), "-o", so],
                       check=True)
    return so


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--ncu", action="store_true", help="only 5 plain calls per kernel")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-seconds", type=float, default=4.0)
    parser.add_argument("--workdir", default="/tmp/kforge-agreement")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    device = torch.device("cuda:0")
    spec = protocol.TimingSpec(max_seconds=args.max_seconds)
    for name in args.kernels.split(","):
        source, make_inputs, out_shape = KERNELS[name]
        candidate = native.NativeCandidate(build(source, args.workdir), device, [])
        torch.manual_seed(0)
        inputs = [t.to(device) for t in make_inputs()]
        expected = [protocol.OutputSpec(dtype="float32", shape=list(out_shape))]
        clock, sampler = candidate.sampler(inputs, expected)
        if args.ncu:
            torch.cuda.synchronize()
            for _ in range(5):
                sampler()  # cold mode: flush, spin, the call; ncu times each kernel on its own
            print(json.dumps({"kernel": name, "ncu_calls": 5}), flush=True)
            continue
        runs = [timing.measure_on(device, sampler, spec, clock) for _ in range(args.repeats)]
        medians = [r["median_s"] for r in runs]
        mid = statistics.median(medians)
        print(json.dumps({
            "kernel": name,
            "medians_s": medians,
            "median_of_medians_s": mid,
            "spread": (max(medians) - min(medians)) / mid,
            "rel_std_of_samples": [round(r["rel_std"], 4) for r in runs],
            "samples": [r["samples"] for r in runs],
            "stopped_by": [r["stopped_by"] for r in runs],
            "warm_plain_events_s": statistics.median(r["warm"]["median_s"] for r in runs),
            "graph_replay_s": runs[0].get("graph_replay", {}).get("median_s"),
            "sm_clock_mhz": runs[0].get("sm_clock_mhz"),
            "discarded": sum(r.get("discarded", 0) for r in runs),
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
