#!/usr/bin/env python3
"""Cost per sample of the Python harness (runner/HARNESS.md): the round trip of one ``sample``
command as the parent sees it (channel, JSON, dispatch, the set's inputs restored, outputs
poisoned, checked and copied into the arena) against the figure the harness reports for the call.

    python3 bench/harness_round_trip.py [--device cpu|cuda] [--samples 400] [--runs 5]

Measured for the empty call (before ``load``: what every sample costs besides the call), a module
ReLU (``ModelNew``) and, where PoCL is present, an OpenCL ReLU, at three sizes. Per row: median
over runs of the per-run median, in microseconds: ``parent`` (the parent's clock around the
command), ``child`` (the reply's ``seconds``), ``overhead`` (parent - child). The channel's own
cost is the empty row at 1 element; ``checks`` is overhead at a size minus that (what restoring,
poisoning, checking and copying that much data adds); ``cpu`` is the harness process's own CPU
time per sample (user + system), which contention on a shared machine does not inflate the way
it inflates wall times. Prints the table last.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runner", "tests"))
from harness_parent import FakeParent  # noqa: E402

import torch  # noqa: E402

TASK = """\
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
rows, cols = 1, 1
def get_inputs():
    return [torch.randn(rows, cols)]
def get_init_inputs():
    return []
"""
MODEL_NEW = TASK.replace("class Model(", "class ModelNew(")
RELU_CL = """\
SOURCE = r'''
__kernel void relu(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  y[i] = fmax(x[i], 0.0f);
}
'''
def launch(cl, queue, program, inputs, outputs):
    program.relu(queue, (inputs[0].numel,), None, inputs[0].buf, outputs[0].buf)
"""
SIZES = [(1, 1), (16, 1024), (256, 4096)]  # 4 B, 64 KiB, 4 MiB of float32


def _one_run(kind, device, shape, samples, folder):
    """(parent medians, child medians) in seconds for one harness process."""
    parent = FakeParent(arena_bytes=64 << 20, cwd=folder,
                        env_extra={"POCL_CACHE_DIR": os.path.join(folder, "pocl")})
    try:
        fields = {"opencl_platform": "Portable"} if kind.startswith("opencl") else {}
        hello = parent.hello(device=device, **fields)
        if not hello["ok"]:
            return None
        xs = [torch.randn(*shape), torch.randn(*shape)]
        outs = [[parent.output("float32", list(shape))] for _ in xs]
        clock = "opencl-events" if kind.startswith("opencl") else (
            "cold" if device.startswith("cuda") else "cpu")
        parent.send("prepare_timing", sets=[{"inputs": [parent.put(x)]} for x in xs],
                    outputs=outs, clock=clock)
        if kind == "module":
            task = os.path.join(folder, "task.py")
            new = os.path.join(folder, "model_new.py")
            open(task, "w").write(TASK)
            open(new, "w").write(MODEL_NEW)
            r = parent.send("load", candidate={"kind": "module", "source_file": new,
                                               "task_file": task, "overrides": {
                                                   "rows": shape[0], "cols": shape[1]}})
            assert r["ok"], r
        elif kind == "opencl":
            src = os.path.join(folder, "relu.cl.py")
            open(src, "w").write(RELU_CL)
            r = parent.send("load", candidate={"kind": "opencl", "source_file": src})
            assert r["ok"], r
        for k in range(20):  # warm-up
            parent.send("sample", set=k % 2, spin_s=1e-4)
        wall, child = [], []
        cpu_before = _cpu_seconds(parent.proc.pid)
        for k in range(samples):
            start = time.perf_counter_ns()
            reply = parent.send("sample", set=k % 2, spin_s=1e-4)
            wall.append((time.perf_counter_ns() - start) / 1e9)
            assert reply["ok"], reply
            child.append(reply["seconds"])
        cpu = (_cpu_seconds(parent.proc.pid) - cpu_before) / samples
        return statistics.median(wall), statistics.median(child), cpu
    finally:
        parent.close()


def _cpu_seconds(pid):
    """User + system CPU seconds of a process (and its threads) so far: what the harness itself
    spends, whatever the machine's contention does to the wall clock."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    try:
        import pyopencl  # noqa: F401
        kinds = ["empty", "module", "empty-opencl", "opencl"]
    except ImportError:
        kinds = ["empty", "module"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for kind in kinds:
            for shape in SIZES:
                runs = [_one_run(kind, args.device, shape, args.samples, folder)
                        for _ in range(args.runs)]
                runs = [r for r in runs if r is not None]
                if not runs:
                    continue
                parent = statistics.median(r[0] for r in runs)
                child = statistics.median(r[1] for r in runs)
                cpu = statistics.median(r[2] for r in runs)
                rows.append((kind, shape, parent, child, parent - child, cpu))
                print(f"{kind} {shape}: {[round(r[0] * 1e6, 1) for r in runs]} us", flush=True)
    floor = {k: o for k, s, _, _, o, _ in rows if s == (1, 1)}
    print(f"\nHarness round trip per sample, device {args.device}, {args.samples} samples x "
          f"{args.runs} runs (median of per-run medians, us; cpu: the harness process's own "
          f"CPU time per sample, mean over a run)")
    print(f"{'served':14} {'elements':>9} {'parent':>9} {'child':>9} {'overhead':>9} "
          f"{'checks':>9} {'cpu':>9}")
    for kind, shape, parent, child, overhead, cpu in rows:
        base = floor.get(kind.replace("opencl", "empty-opencl") if kind == "opencl" else
                         ("empty" if kind == "module" else kind), overhead)
        print(f"{kind:14} {shape[0] * shape[1]:>9} {parent * 1e6:9.1f} {child * 1e6:9.1f} "
              f"{overhead * 1e6:9.1f} {(overhead - base) * 1e6:9.1f} {cpu * 1e6:9.1f}")


if __name__ == "__main__":
    main()
