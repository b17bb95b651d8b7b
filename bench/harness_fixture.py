#!/usr/bin/env python3
"""Module (and OpenCL) candidate fixtures through the harness (runner/HARNESS.md) on a device,
with this script as the parent: it runs the reference itself, then drives one harness per
candidate through hello, empty samples, load, trial calls, the address probe, timed samples
(rotating over two sets, every timed output compared) and the N-call graph.

    python3 bench/harness_fixture.py --task relu [--device cuda:0] CANDIDATE.py ...

Tasks are those of examples/suites/ci-cpu.toml (or --suite). A row per candidate: what loaded,
trials right (of 3), the address probe, timed outputs right (of --samples), findings, the first
problem or failure, the cold median and the graph figure per call. It judges like the strict
policy's tolerance (atol = rtol = 1e-4) or --tolerance; the real judge is the C++ parent.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "runner", "tests"))

import torch  # noqa: E402

from harness_parent import FakeParent  # noqa: E402
from kforge_runner import protocol, task_loader  # noqa: E402

KERNELBENCH = os.environ.get("KFORGE_KERNELBENCH_DIR",
                             "/work/shared/data/kernelbench")


def task_of(suite_file, task_id, folder):
    with open(suite_file, "rb") as f:
        suite = tomllib.load(f)
    entry = next(t for t in suite["task"] if t["id"] == task_id)
    level, pid = entry["source"].removeprefix("kernelbench:level").split("#")
    with open(os.path.join(KERNELBENCH, f"level{level}.jsonl"), encoding="utf-8") as f:
        code = next(json.loads(l)["code"] for l in f if json.loads(l)["problem_id"] == int(pid))
    path = os.path.join(folder, f"{task_id}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(code)
    return path, entry.get("overrides", {})


def close(a, b, tol):
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        torch.isclose(a.double(), b.double(), rtol=tol, atol=tol).all())


def needs_sandbox(candidate):
    """Fault fixtures that exhaust the machine or write outside their folder ("FAULT on
    purpose": fork bombs, unbounded memory, writes beside the scratch folder) run only under the
    real judge's sandbox and limits, never under this driver."""
    with open(candidate, encoding="utf-8", errors="replace") as f:
        return "FAULT on purpose" in f.read(400)


def run_one(candidate, task_file, overrides, device, samples, tol, folder):
    spec = protocol.TaskSpec("task", task_file, overrides)
    task = task_loader.load_task(spec)
    model, _ = task_loader.construct(task.model_class, task, 1, torch.device(device))
    draws = []
    for seed in range(5):
        torch.manual_seed(100 + seed)
        inputs = task.get_inputs()
        with torch.no_grad():
            out = model(*[v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs])
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        draws.append((inputs, [o.detach().cpu() for o in outs]))
    kind = "opencl" if candidate.endswith(".cl.py") else "module"
    row = {"candidate": os.path.relpath(candidate, ROOT), "findings": set(), "problem": ""}
    parent = FakeParent(arena_bytes=1 << 30, cwd=folder,
                        env_extra={"POCL_CACHE_DIR": os.path.join(folder, "pocl")})
    try:
        hello = parent.hello(device=device if kind == "module" else "cpu",
                             **({"opencl_platform": "Portable"} if kind == "opencl" else {}))
        assert hello["ok"], hello
        timing = draws[3:5]
        sets = [{"inputs": [parent.put(v) for v in ins]} for ins, _ in timing]
        outs = [[parent.output(str(o.dtype)[6:], list(o.shape)) for o in want]
                for _, want in timing]
        mode = "opencl-events" if kind == "opencl" else ("cold" if device != "cpu" else "cpu")
        parent.send("prepare_timing", sets=sets, outputs=outs, clock=mode)
        empty = [parent.send("sample", set=k % 2, spin_s=1e-4)["seconds"] for k in range(20)]
        state = []
        for key, value in model.state_dict().items():
            desc = parent.put(value.cpu())
            desc["key"] = key
            state.append(desc)
        candidate_spec = {"kind": kind, "source_file": candidate}
        if kind == "module":
            candidate_spec.update(task_file=task_file, overrides=overrides, init_seed=1)
        loaded = parent.send("load", candidate=candidate_spec, state=state, timeout=600)
        row["load"] = "ok" if loaded["ok"] else loaded["status"]
        if not loaded["ok"]:
            row["problem"] = loaded["diagnostics"].splitlines()[0][:100]
            return row

        def call(inputs, reuse=False):
            ins = [parent.put(v) for v in inputs]
            want_specs = [(str(o.dtype)[6:], list(o.shape)) for o in draws[0][1]]
            o = [parent.output(d, s) for d, s in want_specs]
            after = [parent.empty_like(v) for v in inputs]
            reply = parent.send("call", inputs=ins, outputs=o, reuse=reuse, timeout=600,
                                inputs_after=[a["region"] for a in after])
            row["findings"].update(reply.get("findings", []))
            if not reply["ok"]:
                row["problem"] = row["problem"] or reply["diagnostics"].splitlines()[0][:100]
                return None
            if reply["problems"]:
                row["problem"] = row["problem"] or reply["problems"][0][:100]
            unchanged = all(torch.equal(parent.get(a), v if isinstance(v, torch.Tensor) else
                                        torch.tensor(float(v), dtype=torch.float64))
                            for a, v in zip(after, inputs))
            if not unchanged:
                row["problem"] = row["problem"] or "modified its inputs"
            return [parent.get(x) for x in o], unchanged

        right = 0
        for ins, want in draws[:3]:
            got = call(ins)
            right += bool(got and got[1] and all(close(g, w, tol) for g, w in zip(got[0], want)))
        row["trials"] = f"{right}/3"
        got = call(draws[1][0], reuse=True)
        row["probe"] = "ok" if got and all(close(g, w, tol) for g, w in zip(got[0], draws[1][1])) \
            else "wrong"
        good, times = 0, []
        for k in range(samples):
            reply = parent.send("sample", set=k % 2, spin_s=2e-4, timeout=600)
            row["findings"].update(reply.get("findings", []))
            if not reply["ok"]:
                row["problem"] = row["problem"] or reply["diagnostics"].splitlines()[0][:100]
                break
            times.append(reply["seconds"] - statistics.median(empty))
            good += all(close(parent.get(x), w, tol) for x, w in zip(outs[k % 2], timing[k % 2][1]))
        row["timed"] = f"{good}/{samples}"
        # The first samples warm up (compilation); the median is over the second half.
        row["cold_us"] = statistics.median(times[len(times) // 2:]) * 1e6 if times else None
        if device != "cpu" and kind == "module":
            graph = parent.send("graph", set=0, calls=50)
            row["graph_us"] = graph["seconds_per_call"] * 1e6 if graph["ok"] else None
        return row
    finally:
        parent.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--task", required=True)
    ap.add_argument("--suite", default=os.path.join(ROOT, "examples", "suites", "ci-cpu.toml"))
    ap.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        task_file, overrides = task_of(args.suite, args.task, folder)
        for candidate in args.candidates:
            if needs_sandbox(candidate):
                print(f"skipped {candidate}: a fault fixture that needs the sandbox's limits",
                      flush=True)
                continue
            try:
                row = run_one(os.path.abspath(candidate), task_file, overrides, args.device,
                              args.samples, args.tolerance, folder)
            except Exception as e:  # pylint: disable=broad-except
                row = {"candidate": candidate, "load": "bench error",
                       "problem": f"{type(e).__name__}: {e}"[:100], "findings": set()}
            row["findings"] = sorted(f.split("]")[0] + "]" for f in row["findings"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\nFixtures through the harness: task {args.task}, {args.device}")
    print(f"{'candidate':52} {'load':14} {'trials':6} {'probe':5} {'timed':7} {'cold us':>9} "
          f"{'graph us':>9}  findings / first problem")
    for r in rows:
        cold = f"{r['cold_us']:9.2f}" if r.get("cold_us") is not None else f"{'-':>9}"
        graph = f"{r['graph_us']:9.2f}" if r.get("graph_us") is not None else f"{'-':>9}"
        print(f"{r['candidate'][-52:]:52} {r.get('load', ''):14} {r.get('trials', '-'):6} "
              f"{r.get('probe', '-'):5} {r.get('timed', '-'):7} {cold} {graph}  "
              f"{' '.join(r['findings'])} {r.get('problem', '')}")


if __name__ == "__main__":
    main()
