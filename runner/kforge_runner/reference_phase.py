"""Phase ``reference``: runs the task's ``Model`` on fresh seeded inputs and stores everything.

Writes ``inputs_dir/trial_K/`` (inputs + manifest), ``inputs_dir/state/`` and
``inputs_dir/init.json`` for the candidate phase, and ``outputs_dir/trial_K/`` (outputs, their
float64 truth + manifest), which the candidate phase never sees; timing sets go to
``inputs_dir/timing_J/`` and ``outputs_dir/timing_J/``. Inputs are written exactly as drawn: the
model only ever receives clones of them. The trials' distributions are kforge_runner.trial_inputs;
a shortcut trial on which the reference is not well defined (it raises, or an output is not
finite) is not written but reported in ``skipped``, so it can never fail a candidate.
"""

import json
import math
import os
import re
import time
from typing import Any, Dict, List, Optional, Tuple

import torch

from kforge_runner import (environment, errors, input_guard, phase_clock, size_params, task_loader,
                           tensor_files, timing, trial_inputs)
from kforge_runner.degenerate import DegenerateCheck
from kforge_runner.protocol import ReferenceJob, ReferenceTrial
from kforge_runner.truth import Truth


class BadReference(Exception):
    """The reference misbehaved (bad output type, init input JSON cannot hold): reference_error."""


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


class _Skip(Exception):
    """A shortcut trial the reference is not well defined on: reported, never written."""


# Ops whose index outputs break ties in an order torch does not define: no ties trial for them.
_TIE_ORDER_UNDEFINED = re.compile(r"\b(sort|argsort|msort|topk|kthvalue|mode|median|unique)\b")


class _Drawer:
    """Draws the inputs of each trial and runs the reference on them (trial_inputs)."""

    def __init__(self, task, model, device: torch.device, source: str):
        self.task, self.model, self.device = task, model, device
        self.first_inputs: Optional[List[Any]] = None   # the first trial's draw
        self.first_outputs: Optional[List[torch.Tensor]] = None
        self._source = source

    def draw(self, trial: ReferenceTrial) -> Tuple[List[Any], List[torch.Tensor], str, str]:
        """Returns (inputs, outputs, distribution actually used, notes); raises _Skip for a
        shortcut trial that does not apply or on which the reference is not well defined."""
        d = trial.distribution
        if d == "shape":
            return self._second_shape(trial)
        torch.manual_seed(trial.seed)
        task_inputs = self.task.get_inputs()
        if d == "task":
            return task_inputs, _run_model(self.model, task_inputs, self.device), "task", ""
        if d in ("normal", "uniform"):
            if not trial_inputs.has_float_tensor(task_inputs):
                note = f"no floating-point inputs to redraw from {d}; used task inputs"
                return task_inputs, _run_model(self.model, task_inputs, self.device), "task", note
            redrawn = trial_inputs.redraw(task_inputs, d, trial.seed)
            outputs = _run_model(self.model, redrawn, self.device)
            if _all_finite(outputs):
                return redrawn, outputs, d, ""
            note = f"{d} inputs gave a non-finite reference output; fell back to task inputs"
            return task_inputs, _run_model(self.model, task_inputs, self.device), "task", note
        if d == "ties":
            if self.first_outputs is None or \
                    all(t.is_floating_point() for t in self.first_outputs):
                raise _Skip("the reference returns no integer output: no ties to break")
            if _TIE_ORDER_UNDEFINED.search(self._source):
                raise _Skip("the task uses an op whose tie order torch does not define")
        inputs, note = trial_inputs.transform(task_inputs, d, trial.seed)
        if note:
            raise _Skip(note)
        return inputs, self._well_defined(inputs, d), d, ""

    def _well_defined(self, inputs: List[Any], what: str) -> List[torch.Tensor]:
        try:
            outputs = _run_model(self.model, inputs, self.device)
        except BadReference:
            raise
        except Exception as e:
            raise _Skip(f"the reference raised on {what} inputs: {type(e).__name__}: {e}"[:300])
        if not _all_finite(outputs):
            raise _Skip(f"the reference output is not finite on {what} inputs")
        return outputs

    def _second_shape(self, trial: ReferenceTrial):
        module = self.task.module
        names = size_params.find(module)
        if not names:
            raise _Skip("the task has no size parameter (a global that get_inputs() reads and "
                        "get_init_inputs() and Model do not)")
        reasons = []
        # All size parameters together first (keeps derived pairs consistent), then each alone.
        for group in [names] + ([[n] for n in names] if len(names) > 1 else []):
            with size_params.SecondShape(module, group) as shape:
                torch.manual_seed(trial.seed)
                inputs = self.task.get_inputs()
                if size_params.shapes(inputs) == size_params.shapes(self.first_inputs or []):
                    reasons.append(f"{shape.describe()}: the input shapes do not change")
                    continue
                try:
                    outputs = self._well_defined(inputs, "second-shape")
                except _Skip as e:
                    reasons.append(f"{shape.describe()}: {e}")
                    continue
                return inputs, outputs, "shape", shape.describe()
        raise _Skip("no second shape the reference accepts: " + "; ".join(reasons)[:400])


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


def _write_outputs(directory: str, outputs: List[torch.Tensor],
                   truth: List[Optional[torch.Tensor]]) -> Tuple[List[Dict[str, Any]], List[Any]]:
    """Writes a trial's outputs and their truth (``truth_M.bin`` where there is one) into one
    folder with one manifest; returns the outputs' entries and the truth entries (None where an
    output has no truth)."""
    os.makedirs(directory, exist_ok=True)
    entries = [tensor_files.write_tensor(directory, f"output_{m}", t)
               for m, t in enumerate(outputs)]
    truth_entries = [tensor_files.write_tensor(directory, f"truth_{m}", t) if t is not None
                     else None for m, t in enumerate(truth)]
    tensor_files.write_manifest(directory, entries + [e for e in truth_entries if e is not None])
    return entries, truth_entries


def _set_fp32_matmul(tf32: bool) -> None:
    """Whether float32 matmuls and convolutions on CUDA may use TF32 (cuDNN allows it by default:
    an fp32 reference conv would have TF32's error, and strict would compare candidates with it)."""
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def run(job: ReferenceJob) -> Dict[str, Any]:
    """Runs the reference phase; failures of the task's code become ``reference_error`` results.

    Errors writing files propagate (the entry point reports them as infra_error).
    """
    started = time.monotonic()
    clock = phase_clock.PhaseClock()
    device = torch.device(job.device)
    check = DegenerateCheck(job.tolerance)
    result: Dict[str, Any] = {"phase": "reference", "status": errors.STATUS_OK, "diagnostics": "",
                              "trials": [], "timing_sets": [], "skipped": [], "init_inputs": [],
                              "state": [], "degenerate": check.flags(),
                              "environment": environment.describe(device)}
    stage = "loading the task and constructing Model"
    # The reference and its truth are computed in IEEE fp32 whatever the policy: the contract
    # compares candidates with fp32's own error.
    _set_fp32_matmul(False)
    try:
        with clock.step("load_and_construct"):
            task = task_loader.load_task(job.task)
            model, init_inputs = task_loader.construct(task.model_class, task, job.init_seed,
                                                       device)
            with open(job.task.source_file, encoding="utf-8") as f:
                drawer = _Drawer(task, model, device, f.read())
            truth = Truth(model, device) if job.truth else None
        if truth is not None:
            result["truth"] = {"available": truth.available, "device": str(truth.device),
                               "reason": truth.reason}
        with clock.step("write_tensors"):
            init = _write_init(job, model, init_inputs)
        result["init_inputs"], result["state"] = init["init_inputs"], init["state"]
        first = None
        for position, trial in enumerate(job.trials):
            timing_set = trial.purpose == "timing"
            listed = result["timing_sets" if timing_set else "trials"]
            k = len(listed)
            stage = f"{'timing set' if timing_set else 'trial'} {k}"
            with clock.step("draw_and_run"):
                try:
                    inputs, outputs, distribution, notes = drawer.draw(trial)
                except _Skip as skip:
                    result["skipped"].append({"position": position,
                                              "distribution": trial.distribution,
                                              "purpose": trial.purpose, "reason": str(skip)})
                    continue
            if truth is not None:
                with clock.step("truth"):
                    truth_outputs, truth_notes = truth.outputs(inputs, outputs)
                notes = "; ".join(n for n in (notes, truth_notes) if n)
            else:
                truth_outputs = [None] * len(outputs)
            if not timing_set and distribution in trial_inputs.TASK_OWN:
                with clock.step("degenerate_checks"):
                    check.add_trial(outputs)  # on the device, before the copies to the host
            name = f"{'timing' if timing_set else 'trial'}_{k}"
            with clock.step("write_tensors"):
                out_entries, truth_entries = _write_outputs(
                    os.path.join(job.outputs_dir, name), outputs, truth_outputs)
                listed.append({
                    "index": k, "distribution": distribution,
                    "inputs": _write_all(os.path.join(job.inputs_dir, name), "input", inputs),
                    "outputs": out_entries, "truth": truth_entries, "notes": notes})
            if first is None and not timing_set:
                # A private copy: a model may hand back the same buffer on its next call.
                first = (inputs, [t.clone() for t in outputs])
                drawer.first_inputs, drawer.first_outputs = first
        if truth is not None:
            result["truth"]["available"] = truth.available
            result["truth"]["reason"] = truth.reason
        if first is None:
            raise BadReference("every trial was skipped: " +
                               "; ".join(s["reason"] for s in result["skipped"])[:400])
        stage = "determinism re-run of trial 0"
        with clock.step("determinism_rerun"):
            check.record_rerun(first[1], _run_model(model, first[0], device))
        result["degenerate"] = check.flags()
        if job.timing is not None:
            stage = "measuring the work of one call"
            # Baselines run as the policy allows: TF32 matrix math under tf32 and mixed.
            _set_fp32_matmul(job.precision_policy != "strict")
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
