"""Phase `e2e_measure`: the model with KForge's kernels put in, against the original, in one
process on one device.

Job:    {"phase": "e2e_measure", "model_file", "config", "device", "seed", "sites", "kernels"
         (site name -> shared object), "namespace", "warmup_steps", "timed_steps",
         "kernel_repeats"}
Result: {"status", "diagnostics", "implementation", "policy", "tolerance", "torch",
         "dynamo_recompile_limit" (null without torch.compile),
         "configurations": {name: {"available", "why"}}, "equivalence": [...], "timing": [...],
         "kernels": [...], "coverage": {...}, "environment"}

Configurations: `eager` (the original model), `compile` (torch.compile of it), `eager+kforge`
(a copy with the same weights, patched by torch_op.patch), `compile+kforge` (torch.compile of the
patched copy). Without torch.compile (torch 1.13) the compiled ones are reported unavailable.

Equivalence: eager decodes `decode_steps` tokens greedily; every other configuration is fed the
same tokens (teacher forcing, where the model file's session takes them) so that one near tie
resolved differently cannot put it on another token stream. Per step the logits are compared
with |a-b| <= atol + rtol·|b| (the precision policy's tolerance), and the greedy tokens must be
the same, a flipped argmax between two logits within the tolerance counted apart as a near tie.
torch.compile: dynamic shapes, and dynamo's recompile limit raised to RECOMPILE_LIMIT (see
_allow_recompiles); a figure taken after dynamo still hit it is flagged.
Timing: per batch size and configuration, a fresh session, `warmup_steps` untimed steps, then
`timed_steps` steps each between device synchronisations; tokens/s = batch / median step time.
Per-kernel: the first instance of each site, called with the arguments it got in one decode step
at that batch size, original forward against the kernel, `kernel_repeats` times each (medians).
"""

import copy
import inspect
import logging
import statistics
import time
from typing import Any, Callable, Dict, List

import torch

from kforge_runner import environment
from kforge_runner.e2e import decode_timing, model_file, torch_op

TOLERANCES = {"strict": 1e-4, "tf32": 1e-3, "mixed": 1e-2}


# Enough graphs per code object for both compiled configurations at every batch size.
RECOMPILE_LIMIT = 64


def _allow_recompiles(limit: int) -> int:
    """Raises dynamo's per-code-object recompile limit to at least `limit`; returns the limit now
    in force. The two compiled configurations are two instances of the same model class, so
    their graphs count against the same code objects, and each needs several (batch size 1 is
    always specialised, the prompt's prefill and the decode steps differ in length, a fresh KV
    cache is guarded apart from a filled one): the default of 8 is reached by the measurement's
    own structure, after which frames run eagerly and `compile` would be partly eager. Raising
    it gives torch.compile its best case, as a user tuning a deployment would."""
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    if getattr(config, name) < limit:
        setattr(config, name, limit)
    return getattr(config, name)


def _compile_support() -> str:
    """Empty when torch.compile can be used, else why not."""
    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile (it arrived in torch 2.0)"
    return ""


def _figures(samples: List[float]) -> Dict[str, float]:
    ordered = sorted(samples)
    return {"median_s": statistics.median(ordered), "mean_s": statistics.fmean(ordered),
            "p10_s": ordered[len(ordered) // 10], "p90_s": ordered[(len(ordered) * 9) // 10],
            "samples": len(ordered)}


def _compare(reference: List[torch.Tensor], other: List[torch.Tensor], tol: float,
             teacher_forced: bool = False):
    """Logits of `other` against `reference`, step by step, and their greedy tokens.

    A token disagreement where the reference's two best logits are within the tolerance of each
    other is a near tie: the precision policy allows either choice, so it is counted apart
    (`near_tie_disagreements`) and does not make `tokens_agree` false. `same_greedy_tokens` is
    the strict reading (every step's tokens equal)."""
    worst_abs = worst_rel = worst_fraction = 0.0
    disagreements = near_ties = 0
    first_divergence = None
    for step, (a, b) in enumerate(zip(other, reference)):
        diff = (a - b).abs()
        bad = ~(diff <= tol + tol * b.abs())  # NaN counts as out of tolerance
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / b.abs().clamp_min(1e-12)).max()))
        worst_fraction = max(worst_fraction, float(bad.float().mean()))
        differ = a.argmax(-1) != b.argmax(-1)
        if bool(differ.any()):
            if first_divergence is None:
                first_divergence = step
            best = b.topk(min(2, b.shape[-1]), dim=-1).values
            margin = best[..., 0] - best[..., -1]
            tie = margin <= tol + tol * best[..., 0].abs()
            disagreements += int(differ.sum())
            near_ties += int((differ & tie).sum())
    within = worst_fraction == 0.0 and len(other) == len(reference)
    return {"steps": len(other), "within_tolerance": within, "max_abs_error": worst_abs,
            "max_rel_error": worst_rel, "worst_fraction_out": worst_fraction,
            "same_greedy_tokens": disagreements == 0,
            "tokens_agree": disagreements == near_ties and len(other) == len(reference),
            "token_disagreements": disagreements, "near_tie_disagreements": near_ties,
            "first_token_divergence": first_divergence, "teacher_forced": teacher_forced}


def _reference_decode(mf, model, batch, device, steps):
    """The original model's greedy decode: per step the tokens it was fed (None where the session
    does not expose `next_tokens`) and its logits."""
    session = mf.new_session(model, batch, device, steps)
    fed, logits = [], []
    for _ in range(steps):
        tokens = getattr(session, "next_tokens", None)
        fed.append(None if tokens is None else tokens.clone())
        logits.append(session.step().detach().float().cpu())
    return fed, logits


def _takes_tokens(session) -> bool:
    try:
        return len(inspect.signature(session.step).parameters) >= 1
    except (TypeError, ValueError):
        return False


def _decode_like(mf, model, batch, device, fed):
    """Another configuration's logits over the reference's steps, and whether they were teacher
    forced: fed the reference's token at every step, so that one near tie resolved the other way
    does not put the two on different token streams (after which their logits have nothing in
    common). Sessions without `next_tokens` / `step(tokens)` (docs/e2e.md) decode freely."""
    session = mf.new_session(model, batch, device, len(fed))
    if any(t is None for t in fed) or not _takes_tokens(session):
        return [session.step().detach().float().cpu() for _ in fed], False
    return [session.step(t).detach().float().cpu() for t in fed], True


def _time_steps(mf, model, batch, device, warmup, timed) -> List[float]:
    session = mf.new_session(model, batch, device, warmup + timed)
    for _ in range(warmup):
        session.step()
    return decode_timing.timed_steps(session, timed, device)


def _time_call(call: Callable[[], Any], device, repeats: int) -> List[float]:
    call()  # warm-up
    samples = []
    for _ in range(repeats):
        decode_timing.sync(device)
        start = time.perf_counter()
        call()
        decode_timing.sync(device)
        samples.append(time.perf_counter() - start)
    return samples


def _time_back_to_back(call: Callable[[], Any], device, repeats: int) -> float:
    """Seconds per call of `repeats` calls issued back to back between two synchronisations: the
    cost of a call inside a stream of work, where the host's side (dispatch, launches, ctypes)
    counts whenever the host is slower than the device, as in a launch-bound decode step.
    `_time_call` synchronises around every call and so shows the device side."""
    call()
    decode_timing.sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    decode_timing.sync(device)
    return (time.perf_counter() - start) / repeats


class _RecompileLimitWatch(logging.Handler):
    """Counts torch._dynamo's "hit config.recompile_limit" warnings (cache_size_limit before
    torch 2.6): past the limit a compiled function runs its frames eagerly, so figures labelled
    `compile` are then partly eager, which the report must say."""

    LOGGER = "torch._dynamo.convert_frame"

    def __init__(self):
        super().__init__(logging.WARNING)
        self.hits = 0

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "recompile_limit" in text or "cache_size_limit" in text:
            self.hits += 1


def _captured_calls(mf, model, sites, batch, device) -> Dict[str, Dict[str, Any]]:
    """The arguments the first instance of each site gets in one decode step at `batch`."""
    modules = dict(model.named_modules())
    captured: Dict[str, Dict[str, Any]] = {}
    for site in sites:
        module = modules[site["instances"][0]]
        original = module.forward

        def spy(*args, _site=site, _original=original, **kwargs):
            if _site["name"] not in captured:
                given = dict(zip(_site["params"], args))
                given.update(kwargs)
                captured[_site["name"]] = {k: (v.clone() if isinstance(v, torch.Tensor) else v)
                                           for k, v in given.items()}
            return _original(*args, **kwargs)

        module.forward = spy
    try:
        session = mf.new_session(model, batch, device, 2)
        captured.clear()  # the prefill's calls have the prompt's length, not a decode step's
        session.step()
    finally:
        for site in sites:
            modules[site["instances"][0]].__dict__.pop("forward", None)
    return captured


def run(job: Dict[str, Any]) -> Dict[str, Any]:
    try:
        mf = model_file.load(job["model_file"], job["config"])
    except model_file.ModelFileError as e:
        return {"status": "model_error", "diagnostics": str(e)}
    device = torch.device(job["device"])
    tol = TOLERANCES[mf.policy]
    warmup, timed = int(job.get("warmup_steps", 3)), int(job.get("timed_steps", 10))
    repeats = int(job.get("kernel_repeats", 20))
    sites = [s for s in job["sites"] if s["name"] in job["kernels"]]

    torch.manual_seed(int(job.get("seed", 0)))
    original = mf.build_model().to(device)
    patched_model = copy.deepcopy(original)
    handle = torch_op.patch(patched_model, sites, job["kernels"], job["namespace"])

    configurations = {"eager": original, "eager+kforge": patched_model}
    why_not = _compile_support()
    status = {"eager": {"available": True, "why": ""},
              "eager+kforge": {"available": True, "why": ""}}
    recompile_limit = None if why_not else _allow_recompiles(RECOMPILE_LIMIT)
    for name, model in (("compile", original), ("compile+kforge", patched_model)):
        status[name] = {"available": not why_not, "why": why_not}
        if not why_not:
            # dynamic=True: decoding grows the KV cache every step and the batch sizes differ, so
            # static shapes would recompile at the first new shape and then turn dynamic anyway
            # (automatic dynamic shapes); compiling dynamic from the start skips those recompiles.
            configurations[name] = torch.compile(model, dynamic=True)

    equivalence, timing, kernels = [], [], []
    watch = _RecompileLimitWatch()
    logging.getLogger(_RecompileLimitWatch.LOGGER).addHandler(watch)
    hits = {name: 0 for name in configurations}  # recompile-limit warnings while each was used
    original_modules = dict(original.named_modules())
    patched_modules = dict(patched_model.named_modules())
    for batch in mf.batch_sizes:
        steps = int(mf.config["decode_steps"])
        fed, reference = _reference_decode(mf, original, batch, device, steps)
        for name, model in configurations.items():
            if name == "eager":
                continue
            before = watch.hits
            try:
                logits, forced = _decode_like(mf, model, batch, device, fed)
            except Exception as e:  # a configuration that fails is reported, never dropped
                status[name] = {"available": False, "why": f"failed: {type(e).__name__}: {e}"}
                continue
            finally:
                hits[name] += watch.hits - before
            equivalence.append(dict(batch_size=batch, configuration=name,
                                    **_compare(reference, logits, tol, forced)))
        for name, model in configurations.items():
            if not status[name]["available"]:
                continue
            before = watch.hits
            samples = _time_steps(mf, model, batch, device, warmup, timed)
            hits[name] += watch.hits - before
            figures = _figures(samples)
            timing.append(dict(batch_size=batch, configuration=name,
                               tokens_per_s=batch / figures["median_s"],
                               recompile_limit_hit=hits[name] > 0, **figures))
        calls = _captured_calls(mf, original, sites, batch, device)
        for site in sites:
            if site["name"] not in calls:
                continue
            kwargs = calls[site["name"]]
            qualname = site["instances"][0]
            base = original_modules[qualname]
            with torch.no_grad():
                t_orig = _figures(_time_call(lambda: base(**kwargs), device, repeats))
                t_kforge = _figures(_time_call(lambda: patched_modules[qualname](**kwargs),
                                               device, repeats))
                b2b_orig = _time_back_to_back(lambda: base(**kwargs), device, repeats)
                b2b_kforge = _time_back_to_back(lambda: patched_modules[qualname](**kwargs),
                                                device, repeats)
            kernels.append({"site": site["name"], "batch_size": batch,
                            "shapes": {k: list(v.shape) for k, v in kwargs.items()
                                       if isinstance(v, torch.Tensor)},
                            "original_median_s": t_orig["median_s"],
                            "kforge_median_s": t_kforge["median_s"],
                            "speedup": t_orig["median_s"] / t_kforge["median_s"],
                            "original_back_to_back_s": b2b_orig,
                            "kforge_back_to_back_s": b2b_kforge,
                            "back_to_back_speedup": b2b_orig / b2b_kforge})
    logging.getLogger(_RecompileLimitWatch.LOGGER).removeHandler(watch)
    for name, count in hits.items():
        if count and status[name]["available"]:
            status[name]["why"] = (f"torch._dynamo hit its recompile limit ({recompile_limit}) "
                                   f"{count} time(s): frames past it ran eagerly")
    coverage = {name: {"kernel_calls": k.calls, "unrouted_calls": handle.unrouted.get(name, 0)}
                for name, k in handle.kernels.items()}
    return {"status": "ok", "diagnostics": "", "implementation": mf.implementation(),
            "policy": mf.policy, "tolerance": {"atol": tol, "rtol": tol},
            "torch": torch.__version__, "dynamo_recompile_limit": recompile_limit,
            "configurations": status,
            "equivalence": equivalence, "timing": timing, "kernels": kernels,
            "coverage": coverage, "environment": environment.describe(device)}
