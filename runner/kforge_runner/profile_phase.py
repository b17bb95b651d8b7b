"""Phase ``profile``: runs a candidate's call under a profiler, untimed (PROTOCOL.md, "Phase
profile").

The job is a candidate job with ``"phase": "profile"`` and a ``profile`` object. The runner loads
the candidate as the candidate phase does, warms the call up once, then makes ``calls`` calls on
the first trial's inputs, each inside the profiler's capture:

- ``torch``: ``torch.profiler`` (CPU activities, and CUDA on a cuda device), each call inside a
  ``record_function("kforge_call")`` range; the chrome trace goes to ``output_dir/torch.json``.
- ``opencl``: OpenCL candidates only; every kernel ``launch`` enqueues is recorded with its
  event's queued/submit/start/end times in ``output_dir/opencl.json``.
- ``external``: for a profiler that wraps the whole process (ncu, nsys): each call lies between
  ``cudaProfilerStart`` and ``cudaProfilerStop`` on cuda devices (the tool is started with its
  capture range tied to them), nothing is written by the runner.

Candidate code is wrapped only where the candidate phase times it: the samplers' ``time_call``
(native and module candidates) and the OpenCL ``launch``.
"""

import dataclasses
import json
import os
import time
from typing import Any, Dict, List

from kforge_runner import protocol

TOOLS = ("torch", "opencl", "external")
CALL_ANNOTATION = "kforge_call"


class ProfileUsageError(Exception):
    """The job asks for a profile this candidate cannot give (reported as infra_error)."""


@dataclasses.dataclass(frozen=True)
class ProfileJob:
    candidate_job: protocol.CandidateJob
    tool: str
    calls: int
    output_dir: str


def parse(document: Dict[str, Any]) -> ProfileJob:
    """A profile job from its JSON document; raises protocol.JobError when malformed."""
    spec = protocol._field(document, "profile", dict, "job")  # pylint: disable=protected-access
    tool = protocol._field(spec, "tool", str, "job.profile")  # pylint: disable=protected-access
    if tool not in TOOLS:
        raise protocol.JobError(f"job.profile.tool: {tool!r} is not one of {TOOLS}")
    calls = spec.get("calls", 3)
    if not isinstance(calls, int) or isinstance(calls, bool) or not 1 <= calls <= 1000:
        raise protocol.JobError("job.profile.calls: expected an integer from 1 to 1000")
    output_dir = protocol._field(spec, "output_dir", str, "job.profile")  # pylint: disable=protected-access
    if not os.path.isabs(output_dir):
        raise protocol.JobError("job.profile.output_dir: expected an absolute path")
    unknown = sorted(set(spec) - {"tool", "calls", "output_dir"})
    if unknown:
        raise protocol.JobError(f"job.profile: unknown field(s) {unknown}")
    inner = dict(document, phase="candidate")
    inner.pop("profile")
    return ProfileJob(candidate_job=protocol._parse_candidate(inner),  # pylint: disable=protected-access
                      tool=tool, calls=calls, output_dir=output_dir)


def _sync(device) -> None:
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _OpenClRecorder:
    """Wraps an OpenCL candidate's ``launch`` so that the events of the kernels it enqueues are
    kept: ``program.<kernel>(queue, ...)`` calls and ``cl.enqueue_nd_range_kernel``."""

    def __init__(self, candidate):
        import pyopencl as cl  # only OpenCL candidates get here
        self.cl = cl
        self.candidate = candidate
        self.events: List[Any] = []
        self.recording = False
        original = candidate._launch  # pylint: disable=protected-access
        recorder = self

        class _Kernel:
            def __init__(self, kernel):
                self._kernel = kernel

            def __call__(self, *args, **kwargs):
                event = self._kernel(*args, **kwargs)
                recorder._keep(event, self._kernel.function_name, args)
                return event

            def __getattr__(self, name):
                return getattr(self._kernel, name)

        class _Program:
            def __init__(self, program):
                self._program = program

            def __getattr__(self, name):
                value = getattr(self._program, name)
                return _Kernel(value) if isinstance(value, cl.Kernel) else value

        class _Cl:
            def __getattr__(self, name):
                return getattr(cl, name)

            @staticmethod
            def Kernel(program, name):  # noqa: N802 (pyopencl's name)
                return cl.Kernel(getattr(program, "_program", program), name)

            @staticmethod
            def enqueue_nd_range_kernel(queue, kernel, global_size, local_size, *args, **kwargs):
                kernel = getattr(kernel, "_kernel", kernel)  # a kernel taken from the program
                event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size, *args,
                                                   **kwargs)
                recorder._keep(event, kernel.function_name, (queue, global_size, local_size))
                return event

        def launch(_cl, queue, program, inputs, outputs):
            return original(_Cl(), queue, _Program(program), inputs, outputs)

        candidate._launch = launch  # pylint: disable=protected-access

    def _keep(self, event, name, args):
        if self.recording and isinstance(event, self.cl.Event):
            sizes = [list(a) if isinstance(a, (tuple, list)) else None for a in args[1:3]]
            self.events.append((event, name, sizes))

    def records(self) -> List[Dict[str, Any]]:
        info = self.cl.profiling_info
        out = []
        for event, name, sizes in self.events:
            record = {"name": name, "queued": event.get_profiling_info(info.QUEUED),
                      "submit": event.get_profiling_info(info.SUBMIT),
                      "start": event.get_profiling_info(info.START),
                      "end": event.get_profiling_info(info.END)}
            if len(sizes) > 0 and sizes[0]:
                record["global_size"] = sizes[0]
            if len(sizes) > 1 and sizes[1]:
                record["local_size"] = sizes[1]
            out.append(record)
        self.events = []
        return out


def _profile_calls(job: ProfileJob, candidate, inputs, expected, device) -> Dict[str, Any]:
    """Makes the job's calls under its tool; returns what the result reports about them."""
    os.makedirs(job.output_dir, exist_ok=True)
    report: Dict[str, Any] = {"tool": job.tool, "calls": job.calls, "files": []}
    if job.tool == "opencl":
        if not hasattr(candidate, "_launch"):
            raise ProfileUsageError("tool opencl profiles OpenCL candidates only")
        recorder = _OpenClRecorder(candidate)
        _, sample = candidate.sampler(inputs, expected)
        sample()  # warm-up (builds, first-launch costs)
        calls = []
        for _ in range(job.calls):
            recorder.recording = True
            seconds = sample()  # from a marker before launch to one after it (opencl.py)
            recorder.recording = False
            calls.append({"wall_ns": round(seconds * 1e9), "kernels": recorder.records()})
        path = os.path.join(job.output_dir, "opencl.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"tool": "opencl", "device": candidate.device.name, "calls": calls}, f)
        report["files"].append("opencl.json")
        return report

    import torch

    from kforge_runner import timing
    original_time_call = timing.time_call
    state = {"capturing": False}

    def captured_call(dev, call):
        if not state["capturing"]:
            return original_time_call(dev, call)
        _sync(dev)
        started = time.perf_counter_ns()
        if job.tool == "torch":
            with torch.profiler.record_function(CALL_ANNOTATION):
                value = call()
                _sync(dev)
        else:
            if dev.type == "cuda":
                torch.cuda.profiler.start()
            value = call()
            _sync(dev)
            if dev.type == "cuda":
                torch.cuda.profiler.stop()
        return (time.perf_counter_ns() - started) / 1e9, value

    timing.time_call = captured_call
    try:
        _, sample = candidate.sampler(inputs, expected)
        sample()  # warm-up, outside the capture
        if job.tool == "torch":
            activities = [torch.profiler.ProfilerActivity.CPU]
            if device.type == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=activities) as prof:
                state["capturing"] = True
                for _ in range(job.calls):
                    sample()
                state["capturing"] = False
            prof.export_chrome_trace(os.path.join(job.output_dir, "torch.json"))
            report["files"].append("torch.json")
        else:
            state["capturing"] = True
            for _ in range(job.calls):
                sample()
            state["capturing"] = False
    finally:
        timing.time_call = original_time_call
    return report


def run(job: ProfileJob) -> Dict[str, Any]:
    """Runs the profile phase: load, warm up, profiled calls. Candidate failures are statuses as
    in the candidate phase; the result carries ``profile`` (tool, calls, files written)."""
    import torch

    from kforge_runner import candidate_phase, environment, errors, process_guard
    started = time.monotonic()
    cjob = job.candidate_job
    device = torch.device(cjob.device)
    result: Dict[str, Any] = {"phase": "profile", "status": errors.STATUS_OK, "diagnostics": "",
                              "environment": environment.describe(device)}
    if not cjob.trials:
        raise protocol.JobError("job.trials: the profile phase needs one trial's inputs")
    state = candidate_phase._read_state(cjob.inputs_dir)  # pylint: disable=protected-access
    own_files = [cjob.candidate.source_file] if cjob.candidate.source_file else []
    try:
        candidate = candidate_phase._load(cjob, state, device)  # pylint: disable=protected-access
        result["environment"].update(candidate.environment)
        first = cjob.trials[0]
        inputs = candidate_phase._read_inputs(cjob.inputs_dir, first.index)  # pylint: disable=protected-access
        try:
            with process_guard.candidate_code():
                result["profile"] = _profile_calls(job, candidate, inputs, first.outputs, device)
        except ProfileUsageError:
            raise
        except (Exception, SystemExit) as e:
            raise candidate_phase._Failure(  # pylint: disable=protected-access
                errors.classify(e, errors.LoadStage.RUN),
                errors.format_diagnostics(e, own_files, "profiled call")) from None
    except candidate_phase._Failure as failure:  # pylint: disable=protected-access
        result["status"], result["diagnostics"] = failure.status, failure.diagnostics
    result["seconds"] = time.monotonic() - started
    return result
