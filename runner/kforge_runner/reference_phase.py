"""Phase ``reference``: runs the task's ``Model`` on fresh seeded inputs and stores everything.

Writes ``inputs_dir/trial_K/`` (inputs + manifest), ``inputs_dir/state/`` and
``inputs_dir/init.json`` for the candidate phase, and ``outputs_dir/trial_K/`` (outputs +
manifest), which the candidate phase never sees. Inputs are written exactly as drawn: the model
only ever receives clones of them.
"""

import json
import math
import os
import time
from typing import Any, Dict, List

import torch

from kforge_runner import (environment, errors, input_guard, phase_clock, task_loader, tensor_files,
                           timing)
from kforge_runner.degenerate import DegenerateCheck
from kforge_runner.protocol import ReferenceJob, ReferenceTrial


class BadReference(Exception):
    """The reference misbehaved (bad output type, init input JSON cannot hold): reference_error."""


def _redraw(inputs: List[Any], distribution: str, seed: int) -> List[Any]:
    """Replaces every floating-point tensor with N(0, 1) or U(-1, 1) samples of its shape and dtype.

    Samples come from a CPU generator seeded with the trial's seed (float32, or float64 for float64
    tensors), so they do not depend on the device.
    """
    generator = torch.Generator().manual_seed(seed)
    redrawn = []
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            draw_dtype = torch.float64 if value.dtype == torch.float64 else torch.float32
            if distribution == "normal":
                sample = torch.randn(value.shape, generator=generator, dtype=draw_dtype)
            else:
                sample = torch.rand(value.shape, generator=generator, dtype=draw_dtype) * 2 - 1
            value = sample.to(value.dtype)
        redrawn.append(value)
    return redrawn


def _has_float_tensor(inputs: List[Any]) -> bool:
    return any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in inputs)


def _as_output_list(value: Any) -> List[torch.Tensor]:
    outputs = list(value) if isinstance(value, (tuple, list)) else [value]
    for i, t in enumerate(outputs):
        if not isinstance(t, torch.Tensor):
            raise BadReference(f"reference output {i} is a {type(t).__name__}, not a tensor")
    return outputs


def _run_model(model: torch.nn.Module, inputs: List[Any],
               device: torch.device) -> List[torch.Tensor]:
    """Runs the model under no_grad on device clones of ``inputs``; returns its outputs, detached,
    where the model left them (the device), after the device has finished them."""
    args = [v.to(device).clone() if isinstance(v, torch.Tensor) else v for v in inputs]
    with torch.no_grad():
        outputs = _as_output_list(model(*args))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return [t.detach() for t in outputs]


def _all_finite(outputs: List[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point())


def _draw_trial(task, model, trial: ReferenceTrial, device: torch.device):
    """Returns (inputs, outputs, distribution actually used, notes) for one trial; the outputs are
    where the model left them (_run_model)."""
    torch.manual_seed(trial.seed)
    task_inputs = task.get_inputs()
    if trial.distribution != "task":
        if not _has_float_tensor(task_inputs):
            note = f"no floating-point inputs to redraw from {trial.distribution}; used task inputs"
            return task_inputs, _run_model(model, task_inputs, device), "task", note
        redrawn = _redraw(task_inputs, trial.distribution, trial.seed)
        outputs = _run_model(model, redrawn, device)
        if _all_finite(outputs):
            return redrawn, outputs, trial.distribution, ""
        note = (f"{trial.distribution} inputs gave a non-finite reference output; "
                "fell back to task inputs")
        return task_inputs, _run_model(model, task_inputs, device), "task", note
    return task_inputs, _run_model(model, task_inputs, device), "task", ""


def _write_all(directory: str, prefix: str, values: List[Any]) -> List[Dict[str, Any]]:
    os.makedirs(directory, exist_ok=True)
    entries = [tensor_files.write_tensor(directory, f"{prefix}_{i}", v)
               for i, v in enumerate(values)]
    tensor_files.write_manifest(directory, entries)
    return entries


def _jsonable(value: Any) -> Any:
    """Init inputs as JSON: tuples become lists; values JSON cannot carry raise BadReference."""
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise BadReference(f"init input {value!r} ({type(value).__name__}) cannot be stored as JSON")


def _write_init(job: ReferenceJob, model: torch.nn.Module, init_inputs: List[Any]):
    state_dir = os.path.join(job.inputs_dir, "state")
    os.makedirs(state_dir, exist_ok=True)
    state = []
    for i, (key, tensor) in enumerate(model.state_dict().items()):
        entry = tensor_files.write_tensor(state_dir, f"state_{i}", tensor)
        entry["key"] = key
        state.append(entry)
    init = {"init_inputs": _jsonable(init_inputs), "state": state}
    with open(os.path.join(job.inputs_dir, "init.json"), "w", encoding="utf-8") as f:
        json.dump(init, f, indent=1)
    return init


def _timed(job: ReferenceJob, forward, inputs: List[Any], device: torch.device,
           baseline: str) -> Dict[str, Any]:
    """Times ``forward`` on clones of ``inputs`` with the candidate's protocol (timing.measure_on);
    a failure is reported as ``error`` and does not fail the phase."""
    result: Dict[str, Any] = {"baseline": baseline}
    try:
        originals = [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]

        def sample() -> float:
            handed = input_guard.clones(originals)
            with torch.no_grad():
                seconds, _ = timing.time_call(device, lambda: forward(*handed))
            return seconds

        result.update(timing.measure_on(device, sample, job.timing, timing.clock_for(device)))
    except Exception as e:  # the task's code failing while timed is reported, not fatal
        result["error"] = errors.format_diagnostics(e, [job.task.source_file], "timing")
    return result


def _time_eager(job: ReferenceJob, model: torch.nn.Module, inputs: List[Any],
                device: torch.device) -> Dict[str, Any]:
    """The eager baseline: the reference ``Model``'s forward on trial 0's inputs, timed like a
    candidate (timing.py)."""
    return _timed(job, model, inputs, device, "eager")


def _time_compiled(job: ReferenceJob, model: torch.nn.Module, inputs: List[Any],
                   device: torch.device) -> Dict[str, Any]:
    """The requested torch.compile baselines (``job.baselines``), timed by the same code; the
    warm-up absorbs compilation and autotuning."""
    baselines: Dict[str, Any] = {}
    for name in job.baselines:
        if not hasattr(torch, "compile"):
            baselines[name] = {"baseline": name, "error": f"torch {torch.__version__} has no "
                               "torch.compile"}
            continue
        try:
            mode = "max-autotune" if name == "compile-max-autotune" else None
            compiled = torch.compile(model, mode=mode) if mode else torch.compile(model)
        except Exception as e:
            baselines[name] = {"baseline": name,
                               "error": errors.format_diagnostics(e, [], "torch.compile")}
            continue
        started = time.monotonic()
        baselines[name] = _timed(job, compiled, inputs, device, name)
        baselines[name]["seconds"] = time.monotonic() - started
    return baselines


def _work(model: torch.nn.Module, inputs: List[Any], outputs: List[torch.Tensor],
          device: torch.device) -> Dict[str, Any]:
    """The work of one call, for the physics floor (EVAL-PROTOCOL timing rule 7): ``flops`` from
    PyTorch's FLOP counter (null where this torch has none), ``min_bytes`` (each input, parameter
    and buffer read once, each output written once) and ``dtype``, the widest floating dtype
    among the inputs and parameters (which matrix rate applies)."""
    tensors = [v for v in inputs if isinstance(v, torch.Tensor)]
    tensors += [t for t in model.state_dict().values() if isinstance(t, torch.Tensor)]
    min_bytes = sum(t.numel() * t.element_size() for t in tensors)
    min_bytes += sum(t.numel() * t.element_size() for t in outputs)
    floats = [t for t in tensors if t.is_floating_point()]
    dtype = str(max(floats, key=lambda t: t.element_size()).dtype).replace("torch.", "") \
        if floats else None
    flops = None
    try:
        from torch.utils.flop_counter import FlopCounterMode
        args = [v.to(device).clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            model(*args)
        flops = int(counter.get_total_flops())
    except ImportError:
        pass
    except Exception as e:  # a model the counter cannot follow has no FLOP figure
        return {"flops": None, "min_bytes": int(min_bytes), "dtype": dtype,
                "flops_error": f"{type(e).__name__}: {e}"[:300]}
    return {"flops": flops, "min_bytes": int(min_bytes), "dtype": dtype}


def run(job: ReferenceJob) -> Dict[str, Any]:
    """Runs the reference phase; failures of the task's code become ``reference_error`` results.

    Errors writing files propagate (the entry point reports them as infra_error).
    """
    started = time.monotonic()
    clock = phase_clock.PhaseClock()
    device = torch.device(job.device)
    check = DegenerateCheck(job.tolerance)
    result: Dict[str, Any] = {"phase": "reference", "status": errors.STATUS_OK, "diagnostics": "",
                              "trials": [], "init_inputs": [], "state": [],
                              "degenerate": check.flags(),
                              "environment": environment.describe(device)}
    stage = "loading the task and constructing Model"
    try:
        with clock.step("load_and_construct"):
            task = task_loader.load_task(job.task)
            model, init_inputs = task_loader.construct(task.model_class, task, job.init_seed,
                                                       device)
        with clock.step("write_tensors"):
            init = _write_init(job, model, init_inputs)
        result["init_inputs"], result["state"] = init["init_inputs"], init["state"]
        first = None
        for k, trial in enumerate(job.trials):
            stage = f"trial {k}"
            with clock.step("draw_and_run"):
                inputs, outputs, distribution, notes = _draw_trial(task, model, trial, device)
            with clock.step("degenerate_checks"):
                check.add_trial(outputs)  # on the device, before the copies to the host
            name = f"trial_{k}"
            with clock.step("write_tensors"):
                result["trials"].append({
                    "index": k, "distribution": distribution,
                    "inputs": _write_all(os.path.join(job.inputs_dir, name), "input", inputs),
                    "outputs": _write_all(os.path.join(job.outputs_dir, name), "output", outputs),
                    "notes": notes})
            if first is None:
                # A private copy: a model may hand back the same buffer on its next call.
                first = (inputs, [t.clone() for t in outputs])
        stage = "determinism re-run of trial 0"
        with clock.step("determinism_rerun"):
            check.record_rerun(first[1], _run_model(model, first[0], device))
        result["degenerate"] = check.flags()
        if job.timing is not None:
            stage = "measuring the work of one call"
            with clock.step("timing"):
                result["work"] = _work(model, first[0], first[1], device)
                result["timing"] = _time_eager(job, model, first[0], device)
                result["baselines"] = _time_compiled(job, model, first[0], device)
    except OSError:
        raise
    except Exception as e:  # Anything raised by the task's code is the reference's failure.
        result["status"] = errors.STATUS_REFERENCE_ERROR
        result["diagnostics"] = errors.format_diagnostics(e, [job.task.source_file], stage)
    result["seconds"] = time.monotonic() - started
    result["steps"] = clock.as_dict()
    return result
