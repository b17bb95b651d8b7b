"""Phase ``candidate``: loads one candidate and runs it on the stored inputs of every trial.

Reads ``inputs_dir`` (trial inputs, reference state, init.json) and writes the candidate's outputs
to ``outputs_dir/trial_K/``. Loading is stage "load" and each call stage "run" for classifying
exceptions (errors.classify); the first failure ends the phase, keeping the trials completed so far.
Candidate code always runs inside ``process_guard.candidate_code()``.
"""

import json
import os
import time
from typing import Any, Dict, List

import torch

from kforge_runner import (environment, errors, isolation, phase_clock, process_guard,
                           tamper_guard, task_loader, tensor_files, timing)
from kforge_runner.errors import LoadStage
from kforge_runner.protocol import CandidateJob


class _Failure(Exception):
    """Candidate code raised; carries the protocol status and trimmed diagnostics."""

    def __init__(self, status: str, diagnostics: str):
        super().__init__(diagnostics)
        self.status = status
        self.diagnostics = diagnostics


def _call_candidate(stage: str, own_files: List[str], context: str, fn, *args):
    """Runs ``fn(*args)`` as candidate code; any exception becomes a _Failure."""
    try:
        with process_guard.candidate_code():
            return fn(*args)
    except (Exception, SystemExit) as e:
        raise _Failure(errors.classify(e, stage),
                       errors.format_diagnostics(e, own_files, context)) from None


def _read_state(inputs_dir: str) -> Dict[str, torch.Tensor]:
    with open(os.path.join(inputs_dir, "init.json"), encoding="utf-8") as f:
        init = json.load(f)
    state_dir = os.path.join(inputs_dir, "state")
    return {e["key"]: tensor_files.read_tensor(state_dir, e) for e in init["state"]}


def _load(job: CandidateJob, state: Dict[str, torch.Tensor], device: torch.device):
    """The loaded candidate of the job's kind.

    Every kind offers ``run(inputs, expected) -> (outputs, inputs_unchanged, problems)`` and the
    dicts ``environment`` (added to the result's environment) and ``result_fields`` (added to the
    result). The kind's module is imported only here, so pyopencl is needed only for opencl.
    """
    spec = job.candidate
    own_files = [spec.source_file] if spec.source_file else []
    context = "loading the candidate"
    if spec.kind == "native":
        from kforge_runner.native import NativeCandidate
        return _call_candidate(LoadStage.LOAD, own_files, context, NativeCandidate,
                               spec.artifact, device, list(state.values()), spec.stream_handle)
    if spec.kind == "opencl":
        from kforge_runner import opencl
        opencl.use_scratch_dir(job.outputs_dir)
        cl_device = opencl.find_device(spec.opencl_platform)  # a missing platform is infra_error
        return _call_candidate(LoadStage.LOAD, own_files, context, opencl.OpenCLCandidate,
                               spec.source_file, cl_device, list(state.values()))
    from kforge_runner.module_candidate import ModuleCandidate
    task = task_loader.load_task(job.task)
    return _call_candidate(LoadStage.LOAD, own_files, context, ModuleCandidate,
                           spec.source_file, task, job.init_seed, device, state)


def _write_outputs(directory: str, outputs: List[Any]) -> List[Dict[str, Any]]:
    """Writes the outputs that are plain tensors of a protocol dtype (the snapshots taken when the
    call returned); others are listed as problems by the candidate kind's checks."""
    os.makedirs(directory, exist_ok=True)
    entries = []
    for i, out in enumerate(outputs):
        # Whatever candidate code left at the name (a symbolic link to the reference's outputs,
        # say) goes first: the runner writes a new regular file, never through a planted link.
        path = os.path.join(directory, f"output_{i}.bin")
        if os.path.lexists(path):
            os.unlink(path)
        if type(out) is torch.Tensor and out.dtype in tensor_files.DTYPE_NAMES:
            entries.append(tensor_files.write_tensor(directory, f"output_{i}", out))
    tensor_files.write_manifest(directory, entries)
    return entries


def _read_inputs(inputs_dir: str, index: int) -> List[Any]:
    trial_dir = os.path.join(inputs_dir, f"trial_{index}")
    return [tensor_files.read_value(trial_dir, e) for e in tensor_files.read_manifest(trial_dir)]


def _time(job: CandidateJob, candidate, result: Dict[str, Any]) -> Dict[str, Any]:
    """The ``timing`` object: statistics of the call on the first trial's inputs, or ``error``.

    Only candidates whose trials all ran cleanly (unchanged inputs, no output problems) are
    timed. Whatever goes wrong while timing is reported here and never changes the status.
    """
    if result.get("tampering"):
        return {"error": "not timed: the dynamic guardrails found tampering"}
    if any(not t["inputs_unchanged"] or t["problems"] for t in result["trials"]):
        return {"error": "not timed: a trial modified its inputs or had output problems"}
    first = job.trials[0]
    try:
        inputs = _read_inputs(job.inputs_dir, first.index)
        with process_guard.candidate_code():
            clock, sampler = candidate.sampler(inputs, first.outputs)
            return timing.measure_on(torch.device(job.device), sampler, job.timing, clock)
    except (Exception, SystemExit) as e:
        return {"error": errors.format_diagnostics(e, [job.candidate.source_file or ""],
                                                   "timing")}


def run(job: CandidateJob) -> Dict[str, Any]:
    """Runs the candidate phase. Infrastructure failures (unreadable inputs, unwritable outputs_dir,
    a task that no longer loads) propagate to the entry point, which reports infra_error."""
    started = time.monotonic()
    clock = phase_clock.PhaseClock()
    device = torch.device(job.device)
    result: Dict[str, Any] = {"phase": "candidate", "status": errors.STATUS_OK, "diagnostics": "",
                              "trials": [], "environment": environment.describe(device),
                              "observed_isolation": isolation.observe()}
    own_files = [job.candidate.source_file] if job.candidate.source_file else []
    with clock.step("read_tensors"):
        state = _read_state(job.inputs_dir)
    tampering: List[str] = []  # dynamic guardrail findings (tamper_guard)
    result["tampering"] = tampering
    sync = tamper_guard.synchronizer(device)
    try:
        with clock.step("load"):
            candidate = _load(job, state, device)
        result["environment"].update(candidate.environment)
        result.update(candidate.result_fields)
        for trial in job.trials:
            with clock.step("read_tensors"):
                inputs = _read_inputs(job.inputs_dir, trial.index)
            trial_started = time.monotonic()
            with clock.step("call"):  # clones, poisoned outputs, the call, the inputs check
                outputs, unchanged, problems = _call_candidate(
                    LoadStage.RUN, own_files, f"trial {trial.index}", candidate.run, inputs,
                    trial.outputs)
                copies = tamper_guard.snapshot(outputs)  # what the call returned, as it returned it
            snapped = tamper_guard.now()
            seconds = time.monotonic() - trial_started
            with clock.step("write_tensors"):
                entries = _write_outputs(os.path.join(job.outputs_dir, f"trial_{trial.index}"),
                                         copies)
            result["trials"].append({
                "index": trial.index, "outputs": entries,
                "inputs_unchanged": unchanged, "problems": problems, "seconds": seconds})
            with clock.step("guards"):
                _note(tampering, tamper_guard.injected_threads(job.candidate.source_file))
                # The delay counts from the snapshot: writing the outputs above is part of it.
                _note(tampering, tamper_guard.late_writes(outputs, copies, sync, since=snapped))
                _note(tampering, tamper_guard.replaced_clocks())
        if len(job.trials) >= 2 and hasattr(candidate, "run_same_buffers"):
            with clock.step("address_probe"):
                result["address_probe"] = _address_probe(job, candidate, own_files)
    except _Failure as failure:
        result["status"], result["diagnostics"] = failure.status, failure.diagnostics
    else:
        if job.timing is not None and job.trials:
            with clock.step("timing"):
                result["timing"] = _time(job, candidate, result)
            _note(tampering, tamper_guard.replaced_clocks())
            _note(tampering, tamper_guard.injected_threads(job.candidate.source_file))
            if tampering:
                result["timing"] = {"error": "timing discarded: " + tampering[0]}
    result["seconds"] = time.monotonic() - started
    result["steps"] = clock.as_dict()
    return result


def _note(found: List[str], new: List[str]) -> None:
    for line in new:
        if line not in found:
            found.append(line)


def _address_probe(job: CandidateJob, candidate, own_files: List[str]) -> Dict[str, Any]:
    """Trial 1's inputs run in the very buffers trial 0's inputs had just used (PROTOCOL.md,
    "Address probe"): a result cached by buffer address, or an output left from the call before,
    shows up as a wrong answer for trial 1, which the orchestrator compares with the reference."""
    first, second = job.trials[0], job.trials[1]
    outputs, unchanged, problems = _call_candidate(
        LoadStage.RUN, own_files, "address probe", candidate.run_same_buffers,
        _read_inputs(job.inputs_dir, first.index), _read_inputs(job.inputs_dir, second.index),
        first.outputs, second.outputs)
    if outputs is None:
        return {"skipped": "trial 0 and trial 1 inputs differ in shape or dtype"}
    copies = tamper_guard.snapshot(outputs)
    return {"index": second.index,
            "outputs": _write_outputs(os.path.join(job.outputs_dir, "address_probe"), copies),
            "inputs_unchanged": unchanged, "problems": problems}
