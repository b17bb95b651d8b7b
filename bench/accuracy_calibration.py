"""Calibration of the precision contract (docs/verdict.md "Precision") on KernelBench tasks.

For each task of the chosen levels, shrunk until its inputs hold at most --max-elements elements
(every int global >= 16 halved in turn, init sizes included, so the model shrinks too), this
draws the trials of the task's own distributions and the shortcut ones as the reference phase
does (kforge_runner.trial_inputs), computes the fp32 reference and the float64 truth, and then the
error ratio the judge computes (eval/accuracy.h: max|c - t| / max(max|r - t|, 4 eps S)) for
emulated candidates:

  fp64-rounded   the truth rounded to the output dtype: the best any kernel can do
  fp32-1thread   the reference recomputed on one thread (another blocking and summation order)
  fp32-perturbed the model on inputs and parameters moved by 1 fp32 ulp at random: what an fp32
                 kernel that rounds once more per input costs
  tf32-inputs    inputs and parameters rounded to 10 mantissa bits, computed in float64: the
                 least error a TF32 kernel has
  fp16-inputs    the same at fp16's 10 bits and range
  bf16-inputs    the same at bf16's 7 bits
  bf16-compute   the whole model run in bfloat16

and prints, per task, the largest ratio over the trials for each, then the distribution of those
maxima over all tasks (the table docs/verdict.md quotes). Ratios above 64 fail strict.

    PYTHONPATH=runner python3 bench/accuracy_calibration.py --levels 1 2 --max-elements 262144
"""

import argparse
import copy
import json
import math
import os
import sys
import time
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runner"))
from kforge_runner import trial_inputs  # noqa: E402

FACTOR = 64.0
FLOOR_EPS = 4.0
EPS = {torch.float32: 2.0**-23, torch.float64: 2.0**-52, torch.bfloat16: 2.0**-7,
       torch.float16: 2.0**-10}
KERNELBENCH = os.environ.get("KFORGE_KERNELBENCH_DIR", "/work/shared/data/kernelbench")
VARIANTS = ["fp64-rounded", "fp32-1thread", "fp32-perturbed", "tf32-inputs", "fp16-inputs",
            "bf16-inputs", "bf16-compute"]
DISTRIBUTIONS = ["task", "normal", "uniform", "scaled", "negative", "dominant", "sorted"]


def load(code: str) -> types.ModuleType:
    module = types.ModuleType("kb_task")
    exec(compile(code, "task.py", "exec"), module.__dict__)
    return module


def numel(values) -> int:
    return sum(v.numel() for v in values if isinstance(v, torch.Tensor))


class _MetaTorch:
    """torch, with the tensor factories a get_inputs() calls making meta tensors (no memory):
    shrinking a task with 10^9-element inputs then costs nothing."""

    _FACTORIES = ("rand", "randn", "randint", "zeros", "ones", "empty", "full", "arange",
                  "rand_like", "randn_like", "tensor")

    def __getattr__(self, name):
        value = getattr(torch, name)
        if name in self._FACTORIES:
            return lambda *a, **k: value(*a, **dict(k, device="meta"))
        return value


def _input_elements(module) -> int:
    real = module.__dict__.get("torch")
    module.torch = _MetaTorch()
    try:
        return numel(module.get_inputs())
    except Exception:  # an op meta tensors lack: draw for real
        module.torch = real
        torch.manual_seed(0)
        return numel(module.get_inputs())
    finally:
        module.torch = real


def shrink(module, max_elements: int) -> bool:
    """Halves int globals >= 16 (largest first) until get_inputs() fits; False if it cannot."""
    for _ in range(64):
        if _input_elements(module) <= max_elements:
            return True
        sizes = [(v, k) for k, v in vars(module).items()
                 if isinstance(v, int) and not isinstance(v, bool) and v >= 16]
        sizes += [(max(v), k) for k, v in vars(module).items()
                  if isinstance(v, tuple) and v and
                  all(isinstance(x, int) and not isinstance(x, bool) for x in v) and max(v) >= 16]
        if not sizes:
            return False
        _, name = max(sizes)
        value = getattr(module, name)
        if isinstance(value, tuple):  # halve the tuple's largest element
            i = value.index(max(value))
            value = value[:i] + (value[i] // 2,) + value[i + 1:]
        else:
            value //= 2
        setattr(module, name, value)
    return False


def round_bits(x: torch.Tensor, bits: int) -> torch.Tensor:
    """fp32 values rounded to `bits` explicit mantissa bits, to nearest even."""
    i = x.float().contiguous().view(torch.int32).long()
    drop = 23 - bits
    i = ((i + ((i >> drop) & 1) + (1 << (drop - 1)) - 1) >> drop) << drop
    return i.to(torch.int32).view(torch.float32)


def as_list(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def run(model, inputs):
    with torch.no_grad():
        return [t.detach() for t in as_list(model(*inputs))]


def mapped(inputs, fn):
    return [fn(v) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]


def model_mapped(model, fn):
    m = copy.deepcopy(model)
    with torch.no_grad():
        for p in list(m.parameters()) + list(m.buffers()):
            if p.is_floating_point():
                p.copy_(fn(p))
    return m


def ratio(c, r, t) -> float:
    if not t.is_floating_point():
        return 0.0 if torch.equal(c, r) else math.inf
    finite = torch.isfinite(r.double()) & torch.isfinite(t)
    if not bool(finite.any()):
        return math.nan
    t64, r64, c64 = t[finite], r.double()[finite], c.double()[finite]
    scale = t64.abs().max().item()
    floor = FLOOR_EPS * EPS.get(r.dtype, 2.0**-23) * max(scale, 1e-38)
    ec = (c64 - t64).abs().max().item()
    if math.isnan(ec):
        ec = math.inf
    return ec / max((r64 - t64).abs().max().item(), floor)


def variants(model, model64, inputs, reference, dtype):
    up = mapped(inputs, lambda v: v.double())
    truth = run(model64, up)
    out = {"fp64-rounded": [t.to(r.dtype) for t, r in zip(truth, reference)]}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out["fp32-1thread"] = run(model, inputs)
    finally:
        torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(7)

    def nudge(v):  # each value one ulp up, down, or kept, at random
        step = torch.randint(-1, 2, v.shape, generator=g)
        up = torch.nextafter(v, torch.full_like(v, math.inf))
        down = torch.nextafter(v, torch.full_like(v, -math.inf))
        return torch.where(step > 0, up, torch.where(step < 0, down, v))
    out["fp32-perturbed"] = run(model_mapped(model, nudge), mapped(inputs, nudge))
    for name, fn in (("tf32-inputs", lambda v: round_bits(v, 10).double()),
                     ("fp16-inputs", lambda v: v.half().double()),
                     ("bf16-inputs", lambda v: round_bits(v, 7).double())):
        out[name] = run(model_mapped(model64, fn), mapped(inputs, fn))
    try:
        low = copy.deepcopy(model).to(torch.bfloat16)
        out["bf16-compute"] = run(low, mapped(inputs, lambda v: v.to(torch.bfloat16)))
    except Exception:  # an op without a bf16 kernel on this CPU
        out["bf16-compute"] = None
    return truth, out


def calibrate_task(code: str, max_elements: int, seed: int):
    module = load(code)
    if not shrink(module, max_elements):
        return None, "cannot shrink"
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs())
    model64 = copy.deepcopy(model).double()
    worst = {v: 0.0 for v in VARIANTS}
    measured, seen = set(VARIANTS), set()
    ref_ulps = 0.0
    for k, dist in enumerate(DISTRIBUTIONS):
        torch.manual_seed(seed + k)
        inputs = module.get_inputs()
        if dist in ("normal", "uniform"):
            inputs = trial_inputs.redraw(inputs, dist, seed + k)
        elif dist != "task":
            inputs, note = trial_inputs.transform(inputs, dist, seed + k)
            if note:
                continue
        reference = run(model, inputs)
        if not all(bool(torch.isfinite(r).all()) for r in reference if r.is_floating_point()):
            continue  # the reference phase skips such a trial
        truth, cands = variants(model, model64, inputs, reference, None)
        for r, t in zip(reference, truth):
            if r.is_floating_point() and t.dtype == torch.float64:
                s = t.abs().max().item()
                if s > 0:
                    ref_ulps = max(ref_ulps, (r.double() - t).abs().max().item() /
                                   (EPS[r.dtype] * s))
        for name, outs in cands.items():
            if outs is None:
                measured.discard(name)
                continue
            for c, r, t in zip(outs, reference, truth):
                if t.dtype != torch.float64 or c.shape != r.shape:
                    continue
                q = ratio(c.to(r.dtype), r, t)
                if not math.isnan(q):
                    worst[name] = max(worst[name], q)
                    seen.add(name)
    for name in VARIANTS:
        if name not in measured or name not in seen:
            worst[name] = math.nan  # not measured (no bf16 kernel, or no comparable output)
    return {"ratios": worst, "reference_ulps": ref_ulps}, ""


def quantiles(values):
    v = sorted(x for x in values if not math.isnan(x))
    if not v:
        return "-"
    pick = lambda q: v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]
    return f"{pick(0):9.3g} {pick(0.5):9.3g} {pick(0.9):9.3g} {v[-1]:9.3g}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--max-elements", type=int, default=1 << 18)
    parser.add_argument("--seconds-per-task", type=float, default=60)
    parser.add_argument("--only", type=int, nargs="*", help="problem ids")
    parser.add_argument("--json", help="write the per-task results here")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results = {}
    for level in args.levels:
        with open(os.path.join(KERNELBENCH, f"level{level}.jsonl"), encoding="utf-8") as f:
            tasks = [json.loads(line) for line in f]
        for task in tasks:
            if args.only and task["problem_id"] not in args.only:
                continue
            name = f"L{level}#{task['problem_id']} {task['name']}"
            started = time.monotonic()
            try:
                result, why = calibrate_task(task["code"], args.max_elements, 1234)
            except Exception as e:  # a task this emulation cannot run (float64, shapes)
                result, why = None, f"{type(e).__name__}: {e}"[:80]
            seconds = time.monotonic() - started
            if result is None:
                print(f"{name:60s} skipped: {why}", flush=True)
                continue
            results[name] = result
            r = result["ratios"]
            print(f"{name:60s} ref {result['reference_ulps']:7.3g} ulp  " +
                  "  ".join(f"{v}={r[v]:.3g}" for v in VARIANTS) + f"  ({seconds:.1f} s)",
                  flush=True)
    print(f"\n{len(results)} tasks; per variant, the largest ratio over each task's trials:")
    print(f"{'variant':16s} {'min':>9s} {'median':>9s} {'p90':>9s} {'max':>9s}   fail strict (> 64)")
    for v in VARIANTS:
        values = [res["ratios"][v] for res in results.values()]
        fails = sum(1 for x in values if x > FACTOR)
        known = sum(1 for x in values if not math.isnan(x))
        print(f"{v:16s} {quantiles(values)}   {fails} of {known}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
