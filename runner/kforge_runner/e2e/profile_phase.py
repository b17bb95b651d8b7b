"""Phase `e2e_profile`: profiles the model's decode workload, ranks its leaf modules (kernel
sites) by time, and writes the top sites as KernelBench tasks.

Job:    {"phase": "e2e_profile", "model_file", "config", "device", "seed", "top", "tasks_dir",
         "warmup_steps", "profile_steps"}
Result: {"status": "ok" | "model_error", "diagnostics", "implementation", "policy",
         "batch_sizes", "task_batch_size", "step_seconds": {B: s}, "operators": [...],
         "sites": [...], "environment"}

Timing: every leaf module's forward is wrapped (an instance attribute) to record its arguments
and time it between device synchronisations, and the whole step is timed the same way; a site's
share is its time over the step's, both measured in this instrumented pass. The operator table
comes from torch.profiler over the same steps (self time per aten operator).
"""

import inspect
import os
import statistics
import time
from typing import Any, Dict, List, Tuple

import torch

from kforge_runner import environment
from kforge_runner.e2e import decode_timing, model_file, task_writer

_TOP_OPERATORS = 15


def _describe_value(value: Any) -> Dict[str, Any]:
    if isinstance(value, torch.Tensor):
        d = {"kind": "tensor", "shape": list(value.shape),
             "dtype": str(value.dtype).replace("torch.", "")}
        if value.is_floating_point():
            d["zero_fraction"] = float((value == 0).float().mean()) if value.numel() else 0.0
        elif value.numel():
            d["min"], d["max"] = int(value.min()), int(value.max())
        else:
            d["min"], d["max"] = 0, 0
        return d
    if task_writer._simple(value):
        return {"kind": "constant", "value": value}
    return {"kind": "unsupported", "type": type(value).__name__}


def _describe_outputs(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return "tensor"
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        return len(out)
    return None


class _Recorder:
    """Wraps every leaf module's forward; records calls and synchronised times."""

    def __init__(self, model: torch.nn.Module, device: torch.device):
        self.device = device
        self.batch = -1  # the batch size being recorded; -1: none
        self.calls: Dict[str, Dict[int, List[Dict[str, Any]]]] = {}  # qualname -> batch -> calls
        self.seconds: Dict[str, Dict[int, float]] = {}
        self.modules = {}
        for name, m in model.named_modules():
            if name and not list(m.children()):
                self.modules[name] = m
                m.forward = self._wrap(name, m)

    def _wrap(self, name: str, module: torch.nn.Module):
        original = module.forward
        try:
            params = [p for p in inspect.signature(type(module).forward).parameters][1:]
        except (TypeError, ValueError):
            params = []

        def forward(*args, **kwargs):
            if self.batch < 0:  # warm-up
                return original(*args, **kwargs)
            decode_timing.sync(self.device)
            start = time.perf_counter()
            with torch.profiler.record_function(f"kforge.site::{name}"):
                out = original(*args, **kwargs)
            decode_timing.sync(self.device)
            elapsed = time.perf_counter() - start
            per_batch = self.seconds.setdefault(name, {})
            per_batch[self.batch] = per_batch.get(self.batch, 0.0) + elapsed
            calls = self.calls.setdefault(name, {}).setdefault(self.batch, [])
            if len(calls) < 2:  # enough to see whether constants vary between calls
                given = dict(zip(params, args))
                given.update(kwargs)
                # Described after profiling, so that describing adds no operators to the table.
                calls.append({"params": params,
                              "given": [(k, given[k].detach() if isinstance(given[k], torch.Tensor)
                                         else given[k]) for k in params if k in given],
                              "outputs": _describe_outputs(out)})
            return out

        return forward

    def describe_calls(self) -> None:
        for per_batch in self.calls.values():
            for calls in per_batch.values():
                for call in calls:
                    call["args"] = [dict(name=k, **_describe_value(v))
                                    for k, v in call.pop("given")]

    def undo(self) -> None:
        for m in self.modules.values():
            m.__dict__.pop("forward", None)


def _signature_key(call: Dict[str, Any]) -> Tuple:
    return tuple((a["name"], a["kind"], a.get("dtype"), repr(a.get("value")),
                  tuple(a.get("shape", ()))) for a in call["args"])


def _constants(call: Dict[str, Any]) -> Dict[str, Any]:
    """The call's argument names and its non-tensor values."""
    return {a["name"]: (a.get("value") if a["kind"] == "constant" else "<tensor>")
            for a in call["args"]}


def _group_sites(recorder: _Recorder, task_batch: int) -> List[Dict[str, Any]]:
    """Instances of one class with the same state shapes and call signature form one site."""
    groups: Dict[Tuple, Dict[str, Any]] = {}
    for qualname, module in recorder.modules.items():
        calls = recorder.calls.get(qualname, {})
        if task_batch not in calls:
            continue  # not called in the workload
        call = calls[task_batch][0]
        state = tuple((k, tuple(t.shape), str(t.dtype))
                      for k, t in module.state_dict(keep_vars=True).items())
        cls = type(module)
        key = (cls.__module__, cls.__qualname__, state, _signature_key(call))
        site = groups.setdefault(key, {
            "class": f"{cls.__module__}.{cls.__qualname__}", "class_name": cls.__name__,
            "instances": [], "params": call["params"], "args": call["args"],
            "outputs": call["outputs"], "state_keys": [k for k, _, _ in state],
            "seconds_per_step": {}, "calls_per_step": 0, "constant_varies": False})
        site["instances"].append(qualname)
        if cls.__module__ == model_file.MODEL_MODULE_NAME:
            site["class"] = f"{os.path.basename(recorder.model_path)}:{cls.__qualname__}"
        for batch, seconds in recorder.seconds.get(qualname, {}).items():
            site["seconds_per_step"][batch] = site["seconds_per_step"].get(batch, 0.0) + seconds
        constants = _constants(call)
        for per_batch in calls.values():
            for c in per_batch:
                if _constants(c) != constants or c["params"] != call["params"]:
                    site["constant_varies"] = True
    return list(groups.values())


def _operator_table(prof, steps: int) -> List[Dict[str, Any]]:
    rows = []
    for e in prof.key_averages():
        if e.key.startswith(("kforge.site::", "ProfilerStep")):
            continue
        device_us = getattr(e, "self_device_time_total", None)
        if device_us is None:
            device_us = getattr(e, "self_cuda_time_total", 0)
        rows.append({"name": e.key, "calls_per_step": e.count / steps,
                     "self_cpu_seconds_per_step": e.self_cpu_time_total / 1e6 / steps,
                     "self_device_seconds_per_step": (device_us or 0) / 1e6 / steps})
    rows.sort(key=lambda r: max(r["self_device_seconds_per_step"], r["self_cpu_seconds_per_step"]),
              reverse=True)
    return rows[:_TOP_OPERATORS]


def _site_names(sites: List[Dict[str, Any]]) -> None:
    used: Dict[str, int] = {}
    for site in sites:
        base = "".join(c if c.isalnum() else "_" for c in site["class_name"])
        used[base] = used.get(base, 0) + 1
        site["name"] = base if used[base] == 1 else f"{base}_{used[base]}"


def run(job: Dict[str, Any]) -> Dict[str, Any]:
    try:
        mf = model_file.load(job["model_file"], job["config"])
    except model_file.ModelFileError as e:
        return {"status": "model_error", "diagnostics": str(e)}
    device = torch.device(job["device"])
    warmup, steps = int(job.get("warmup_steps", 2)), int(job.get("profile_steps", 4))
    torch.manual_seed(int(job.get("seed", 0)))
    model = mf.build_model().to(device)
    recorder = _Recorder(model, device)
    recorder.model_path = mf.path
    step_seconds: Dict[int, float] = {}
    operator_prof = None
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    for batch in mf.batch_sizes:
        recorder.batch = -1  # neither the prefill nor the warm-up steps are recorded
        session = mf.new_session(model, batch, device, warmup + steps)
        for _ in range(warmup):
            session.step()
        recorder.batch = batch
        with torch.profiler.profile(activities=activities) as prof:
            times = decode_timing.timed_steps(session, steps, device)
        step_seconds[batch] = statistics.median(times)
        for seconds in recorder.seconds.values():
            if batch in seconds:
                seconds[batch] /= steps
        if batch == mf.task_batch_size:
            operator_prof = _operator_table(prof, steps)
    recorder.undo()
    recorder.describe_calls()

    sites = _group_sites(recorder, mf.task_batch_size)
    for site in sites:
        site["calls_per_step"] = len(site["instances"])
        site["share"] = {b: s / step_seconds[b] for b, s in site["seconds_per_step"].items()}
        site["total_seconds"] = sum(site["seconds_per_step"].values())
    _site_names(sites)  # in the model's module order, so that names do not depend on timing
    sites.sort(key=lambda s: s["total_seconds"], reverse=True)
    wanted = list(job.get("sites") or [])
    known = {s["name"] for s in sites} | {s["class_name"] for s in sites}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        return {"status": "bad_sites",
                "diagnostics": f"--sites names {', '.join(unknown)}, which the workload does not "
                               f"have; its sites, by time: {', '.join(s['name'] for s in sites)}"}
    _write_tasks(sites, recorder, mf, job, wanted)
    return {"status": "ok", "diagnostics": "", "implementation": mf.implementation(),
            "policy": mf.policy, "batch_sizes": mf.batch_sizes,
            "task_batch_size": mf.task_batch_size,
            "step_seconds": {str(b): s for b, s in step_seconds.items()},
            "operators": operator_prof or [],
            "sites": [_public(s) for s in sites],
            "environment": environment.describe(device)}


def _public(site: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(site)
    out["seconds_per_step"] = {str(b): s for b, s in site["seconds_per_step"].items()}
    out["share"] = {str(b): s for b, s in site["share"].items()}
    out.pop("constant_varies", None)
    return out


def _write_tasks(sites: List[Dict[str, Any]], recorder: _Recorder, mf, job,
                 wanted: List[str]) -> None:
    """Marks each site extractable or not (with the reason) and writes tasks for the sites named
    in `wanted` (site or class names) or, when it is empty, the top `job["top"]` extractable
    ones."""
    os.makedirs(job["tasks_dir"], exist_ok=True)
    selected = 0
    for rank, site in enumerate(sites, 1):
        site["rank"] = rank
        site["selected"] = False
        site["task_file"] = None
        reason = ""
        if site["outputs"] is None:
            reason = "its output is not a tensor or a tuple of tensors"
        elif any(a["kind"] == "unsupported" for a in site["args"]):
            bad = next(a for a in site["args"] if a["kind"] == "unsupported")
            reason = f"argument {bad['name']} is a {bad['type']}, not a tensor or a plain value"
        elif site["constant_varies"]:
            reason = "a non-tensor argument changes between calls"
        elif not any(a["kind"] == "tensor" for a in site["args"]):
            reason = "it takes no tensor argument"
        source = None
        if not reason:
            header = [
                f"KForge e2e task {site['name']}: extracted by `kforge e2e` from "
                f"{os.path.basename(mf.path)} (configuration {mf.config_name}).",
                f"Module class {site['class']}; {len(site['instances'])} instance(s) in the "
                f"model, e.g. {site['instances'][0]}.",
                f"Shapes and dtypes as seen in the decode workload at batch size "
                f"{mf.task_batch_size}; kernels must handle other batch sizes too.",
                "Parameters are drawn around the values seen in the model."]
            try:
                source = task_writer.write_task(site, recorder.modules[site["instances"][0]],
                                                header)
            except task_writer.NotExtractable as e:
                reason = str(e)
        site["extractable"] = not reason
        site["reason"] = reason
        chosen = (site["name"] in wanted or site["class_name"] in wanted) if wanted else (
            selected < int(job["top"]))
        if chosen and source is None:
            site["reason"] = site["reason"] or "not extractable"
        if source is not None and chosen:
            path = os.path.join(job["tasks_dir"], f"{site['name']}.py")
            with open(path, "w") as f:
                f.write(source)
            site["task_file"] = path
            site["selected"] = True
            selected += 1
