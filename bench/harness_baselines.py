#!/usr/bin/env python3
"""Baselines timed by the harness (runner/HARNESS.md) against the in-process timing of the
version-1 reference phase, on the same tasks, inputs and device (EVAL-PROTOCOL timing rule 6).

    python3 bench/harness_baselines.py [--device cuda:0] [--cap 5] [--out results.json]

For each task and variant (eager, compile, compile-max-autotune where torch has torch.compile):
- ``old``: runner/kforge_runner/timing.measure_on in this process, as reference_phase._timed does
  (cold clock on cuda, 10 samples minimum, stop on 0.5 % relative standard deviation or the cap);
- ``new``: a fresh ``python3 -m kforge_runner --harness`` driven as the parent drives it: two
  timing sets, 30 empty samples before load (their median ``seconds`` is subtracted), load the
  reference variant, a warm-up (at least 3 samples and 0.2 s, compile included), then samples
  rotating over the sets with the spin kept at 1.5x the longest enqueue time seen, until the 95 %
  order-statistic confidence interval of the median is narrower than 1 % of it (at least 10
  samples) or the cap; plus the N-call graph figure.
Prints one row per task and variant: both medians (us), new/old, samples, stop reason, the graph
figure per call. The cap is shorter than the product's 15 s so that the whole run fits a device
call; a row that hit it says so.
"""

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "runner")
sys.path.insert(0, RUNNER)
sys.path.insert(0, os.path.join(RUNNER, "tests"))

import torch  # noqa: E402

from harness_parent import FakeParent  # noqa: E402
from kforge_runner import input_guard, protocol, task_loader, timing  # noqa: E402

KERNELBENCH = os.environ.get("KFORGE_KERNELBENCH_DIR", "/work/shared/data/kernelbench")
TASKS = [  # (name, level, problem id, overrides)
    ("relu_decode", 1, 19, {"batch_size": 128, "dim": 2880}),
    ("relu_64MiB", 1, 19, {"batch_size": 4096, "dim": 4096}),
    ("softmax_64MiB", 1, 23, {"batch_size": 4096, "dim": 4096}),
    ("gemm_2048", 1, 2, {"M": 2048, "K": 2048, "N": 2048}),
]
VARIANTS = ("eager", "compile", "compile-max-autotune")
EMPTY_SAMPLES = 30


def task_source(level, problem_id):
    with open(os.path.join(KERNELBENCH, f"level{level}.jsonl"), encoding="utf-8") as f:
        for line in f:
            task = json.loads(line)
            if task["problem_id"] == problem_id:
                return task["code"]
    raise LookupError(problem_id)


def median_ci_narrow(samples, fraction=0.01):
    """The 95 % distribution-free confidence interval of the median (order statistics, normal
    approximation of the binomial) narrower than ``fraction`` of the median."""
    n = len(samples)
    if n < 10:
        return False
    ordered = sorted(samples)
    half = 1.96 * math.sqrt(n) / 2
    low, high = max(int(math.floor(n / 2 - half)), 0), min(int(math.ceil(n / 2 + half)), n - 1)
    med = statistics.median(ordered)
    return med > 0 and (ordered[high] - ordered[low]) < fraction * med


def old_timing(model, inputs, device, cap):
    """What reference_phase._timed measures, in this process."""
    spec = protocol.TimingSpec(min_samples=10, min_seconds=0.5, max_seconds=cap,
                               target_rel_std=0.005, warmup_seconds=0.2)
    originals = [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]

    def sample():
        handed = input_guard.clones(originals)
        with torch.no_grad():
            seconds, _ = timing.time_call(device, lambda: model(*handed))
        return seconds

    out = timing.measure_on(device, sample, spec, timing.clock_for(device))
    return out["median_s"], out["samples"], out["stopped_by"], out.get("graph_replay", {})


def new_timing(task_file, overrides, variant, sets, device, cap, folder):
    parent = FakeParent(arena_bytes=1 << 30, cwd=folder)
    try:
        assert parent.hello(device=device)["ok"]
        mode = "cold" if device.startswith("cuda") else "cpu"
        descs = [{"inputs": [parent.put(v) for v in s]} for s in sets[0]]
        outs = [[parent.output(o[0], o[1]) for o in sets[1]] for _ in sets[0]]
        parent.send("prepare_timing", sets=descs, outputs=outs, clock=mode)
        spin = 50e-6
        empty = [parent.send("sample", set=k % len(descs), spin_s=spin)["seconds"]
                 for k in range(EMPTY_SAMPLES)]
        floor = statistics.median(empty)
        loaded = parent.send("load", candidate={"kind": "reference", "task_file": task_file,
                                                "overrides": overrides, "variant": variant,
                                                "init_seed": 1})
        if not loaded["ok"]:
            return {"error": loaded["diagnostics"][:200]}
        started, warm = time.monotonic(), 0
        while warm < 3 or time.monotonic() - started < 0.2:
            reply = parent.send("sample", set=warm % len(descs), spin_s=spin, timeout=1200)
            if not reply["ok"]:
                return {"error": reply["diagnostics"][:200]}
            spin = min(max(spin, 1.5 * reply["enqueue_s"]), 20e-3)
            warm += 1
        samples, started, k = [], time.monotonic(), 0
        stopped = "cap"
        while time.monotonic() - started < cap:
            reply = parent.send("sample", set=k % len(descs), spin_s=spin)
            k += 1
            spin = min(max(spin, 1.5 * reply["enqueue_s"]), 20e-3)
            samples.append(max(reply["seconds"] - floor, 0.0))
            if median_ci_narrow(samples):
                stopped = "ci"
                break
        med = statistics.median(samples)
        calls = max(1, min(1000, int(2e-3 / max(med, 1e-7))))
        graph = parent.send("graph", set=0, calls=calls) if device.startswith("cuda") else {}
        return {"median_s": med, "samples": len(samples), "stopped_by": stopped,
                "empty_s": floor, "graph_s": graph.get("seconds_per_call"), "graph_calls": calls}
    finally:
        parent.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--cap", type=float, default=5.0)
    ap.add_argument("--tasks", default=",".join(t[0] for t in TASKS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out")
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, level, pid, overrides in TASKS:
            if name not in args.tasks.split(","):
                continue
            task_file = os.path.join(folder, f"{name}.py")
            with open(task_file, "w", encoding="utf-8") as f:
                f.write(task_source(level, pid))
            task = task_loader.load_task(protocol.TaskSpec(name, task_file, overrides))
            sets = []
            for seed in (11, 22):
                torch.manual_seed(seed)
                sets.append(task.get_inputs())
            model, _ = task_loader.construct(task.model_class, task, 1, device)
            with torch.no_grad():
                outputs = model(*[v.to(device) if isinstance(v, torch.Tensor) else v
                                  for v in sets[0]])
            outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            out_specs = [(str(o.dtype).replace("torch.", ""), list(o.shape)) for o in outputs]
            for variant in args.variants.split(","):
                if variant != "eager" and not hasattr(torch, "compile"):
                    continue
                forward = model if variant == "eager" else torch.compile(
                    model, **({"mode": "max-autotune"} if variant.endswith("autotune") else {}))
                try:
                    old = old_timing(forward, sets[0], device, args.cap)
                except Exception as e:  # pylint: disable=broad-except
                    old = (None, 0, f"error: {type(e).__name__}: {e}"[:120], {})
                new = new_timing(task_file, overrides, variant, (sets, out_specs), args.device,
                                 args.cap, folder)
                row = {"task": name, "variant": variant, "old_median_s": old[0],
                       "old_samples": old[1], "old_stopped_by": old[2],
                       "old_graph_s": old[3].get("median_s"), **{"new_" + k: v
                                                                 for k, v in new.items()}}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    print(f"\nBaselines: harness (parent-driven) vs in-process v1 timing, {args.device}, cap "
          f"{args.cap} s (us)")
    print(f"{'task':14} {'variant':21} {'old':>10} {'new':>10} {'new/old':>8} {'n_old':>6} "
          f"{'n_new':>6} {'stop':>5} {'graph/call':>11}")
    for r in rows:
        if "new_error" in r or r["old_median_s"] is None:
            print(f"{r['task']:14} {r['variant']:21} error: "
                  f"{r.get('new_error') or r['old_stopped_by']}")
            continue
        ratio = r["new_median_s"] / r["old_median_s"] if r["old_median_s"] else float("nan")
        graph = r.get("new_graph_s")
        print(f"{r['task']:14} {r['variant']:21} {r['old_median_s'] * 1e6:10.2f} "
              f"{r['new_median_s'] * 1e6:10.2f} {ratio:8.3f} {r['old_samples']:6d} "
              f"{r['new_samples']:6d} {r['new_stopped_by']:>5} "
              f"{graph * 1e6 if graph else float('nan'):11.2f}")


if __name__ == "__main__":
    main()
