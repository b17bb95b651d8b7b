"""Runner protocol version 1 (runner/PROTOCOL.md): jobs parsed into typed values, one result.

Parsing happens here and nowhere else; the phases see only the dataclasses below. A malformed job
raises ``JobError``, which the entry point reports as ``infra_error``.
"""

import dataclasses
import json
import math
import os
from typing import Any, Dict, List, Optional

from kforge_runner import process_guard

PROTOCOL_VERSION = 1

# Bound before candidate code runs, so that rebinding os.write/os.close cannot intercept the result.
_os_write = os.write
_os_close = os.close
# The trials' input distributions (kforge_runner/trial_inputs.py): the task's own, then the
# shortcut-finding ones.
TASK_DISTRIBUTIONS = ("task", "normal", "uniform")
SHORTCUT_DISTRIBUTIONS = ("scaled", "negative", "dominant", "sorted", "ties", "shape")
DISTRIBUTIONS = TASK_DISTRIBUTIONS + SHORTCUT_DISTRIBUTIONS
TRIAL_PURPOSES = ("trial", "timing")
PRECISION_POLICIES = ("strict", "tf32", "mixed")
CANDIDATE_KINDS = ("native", "opencl", "module")
# What a native candidate's kforge_forward receives as `stream` (the backend names it in the job).
STREAM_HANDLES = ("none", "cuda-stream", "hip-stream", "sycl-queue")
DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "int16", "int8",
               "uint8", "bool")


class JobError(Exception):
    """The job document is malformed or inconsistent; the message names the offending field."""


class UnsupportedProtocol(JobError):
    """The job carries a protocol version this runner does not implement."""


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """The task: its Python source file and the module-level globals to override after exec."""

    name: str
    source_file: str
    overrides: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ReferenceTrial:
    """One reference trial: the secret seed, the input distribution requested for it, and what it
    is for: a correctness ``trial`` or a ``timing`` set (drawn alike, kept apart)."""

    seed: int
    distribution: str
    purpose: str = "trial"


@dataclasses.dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclasses.dataclass(frozen=True)
class TimingSpec:
    """The job's optional ``timing`` object: when to stop sampling (timing.measure).

    ``target_rel_std`` of 0 turns the noise target off: sampling stops as soon as ``min_samples``
    and ``min_seconds`` (summed sample time) are in (stopped_by "min").
    """

    min_samples: int = 10
    min_seconds: float = 0.5
    max_seconds: float = 15.0
    target_rel_std: float = 0.005
    warmup_seconds: float = 0.2


@dataclasses.dataclass(frozen=True)
class ReferenceJob:
    task: TaskSpec
    device: str
    init_seed: int
    trials: List[ReferenceTrial]
    tolerance: Tolerance
    inputs_dir: str
    outputs_dir: str
    timing: Optional[TimingSpec] = None
    # Baselines to time besides eager (which is timed whenever ``timing`` is set): any of
    # BASELINES. The orchestrator leaves out those it has cached.
    baselines: List[str] = dataclasses.field(default_factory=list)
    # Whether every trial's outputs also get their float64 truth (kforge_runner/truth.py).
    truth: bool = False
    # The task's precision policy: under tf32 and mixed the baselines may use TF32 matrix math.
    precision_policy: str = "strict"


BASELINES = ("compile", "compile-max-autotune")


@dataclasses.dataclass(frozen=True)
class CalibrateJob:
    """Measure the device's ceilings: copy bandwidth and matrix rates per dtype."""

    device: str


@dataclasses.dataclass(frozen=True)
class CandidateSpec:
    """What to run: ``artifact`` is set for native candidates, ``source_file`` for opencl/module."""

    kind: str
    backend: str  # the programming model's name, for messages; the kind chooses the adapter
    artifact: Optional[str]
    source_file: Optional[str]
    opencl_platform: Optional[str]
    stream_handle: Optional[str] = None  # native: one of STREAM_HANDLES; None: by the device


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    """Shape and dtype of one reference output, as the candidate must reproduce them."""

    dtype: str
    shape: List[int]


@dataclasses.dataclass(frozen=True)
class CandidateTrial:
    index: int
    outputs: List[OutputSpec]


@dataclasses.dataclass(frozen=True)
class CandidateJob:
    task: TaskSpec
    device: str
    candidate: CandidateSpec
    init_seed: int
    inputs_dir: str
    outputs_dir: str
    trials: List[CandidateTrial]
    timing: Optional[TimingSpec] = None


def _field(obj: Dict[str, Any], key: str, kind, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise JobError(f"{where}: missing field '{key}'")
    value = obj[key]
    # bool is an int subclass; a JSON true where a number is expected is still a mistake.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise JobError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _optional_str(obj: Dict[str, Any], key: str, where: str) -> Optional[str]:
    if obj.get(key) is None:
        return None
    return _field(obj, key, str, where)


def _abs_dir(obj: Dict[str, Any], key: str) -> str:
    path = _field(obj, key, str, "job")
    if not os.path.isabs(path):
        raise JobError(f"job.{key}: must be an absolute path, got {path!r}")
    return os.path.realpath(path)


def _is_within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _parse_task(job: Dict[str, Any]) -> TaskSpec:
    task = _field(job, "task", dict, "job")
    overrides = task.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise JobError("job.task.overrides: expected an object")
    return TaskSpec(name=_field(task, "name", str, "job.task"),
                    source_file=_field(task, "source_file", str, "job.task"),
                    overrides=dict(overrides))


def _parse_timing(job: Dict[str, Any]) -> Optional[TimingSpec]:
    """The optional ``timing`` object; absent or null: no timing. Missing keys take defaults."""
    if job.get("timing") is None:
        return None
    timing = _field(job, "timing", dict, "job")
    defaults = TimingSpec()
    values = {}
    for f in dataclasses.fields(TimingSpec):
        if f.name not in timing:
            values[f.name] = getattr(defaults, f.name)
            continue
        kind = int if f.name == "min_samples" else (int, float)
        value = _field(timing, f.name, kind, "job.timing")
        if value < 0 or not math.isfinite(value):
            raise JobError(f"job.timing.{f.name}: expected a finite number >= 0, got {value!r}")
        values[f.name] = value if f.name == "min_samples" else float(value)
    unknown = sorted(set(timing) - set(values))
    if unknown:
        raise JobError(f"job.timing: unknown field(s) {unknown}")
    if values["min_samples"] < 1:
        raise JobError("job.timing.min_samples: at least 1")
    return TimingSpec(**values)


def _parse_reference(job: Dict[str, Any]) -> ReferenceJob:
    trials = []
    for i, trial in enumerate(_field(job, "trials", list, "job")):
        where = f"job.trials[{i}]"
        distribution = _field(trial, "distribution", str, where)
        if distribution not in DISTRIBUTIONS:
            raise JobError(f"{where}.distribution: {distribution!r} is not one of {DISTRIBUTIONS}")
        purpose = trial.get("purpose", "trial")
        if purpose not in TRIAL_PURPOSES:
            raise JobError(f"{where}.purpose: {purpose!r} is not one of {TRIAL_PURPOSES}")
        trials.append(ReferenceTrial(seed=_field(trial, "seed", int, where),
                                     distribution=distribution, purpose=purpose))
    if not any(t.purpose == "trial" for t in trials):
        raise JobError("job.trials: at least one trial is required")
    policy = job.get("precision_policy", "strict")
    if policy not in PRECISION_POLICIES:
        raise JobError(f"job.precision_policy: {policy!r} is not one of {PRECISION_POLICIES}")
    truth = job.get("truth", False)
    if not isinstance(truth, bool):
        raise JobError("job.truth: must be true or false")
    tolerance = _field(job, "tolerance", dict, "job")
    inputs_dir, outputs_dir = _abs_dir(job, "inputs_dir"), _abs_dir(job, "outputs_dir")
    if _is_within(outputs_dir, inputs_dir) or _is_within(inputs_dir, outputs_dir):
        raise JobError("job.outputs_dir and job.inputs_dir must not contain one another: the "
                       "candidate phase reads inputs_dir and must not see reference outputs")
    return ReferenceJob(
        task=_parse_task(job),
        device=_field(job, "device", str, "job"),
        init_seed=_field(job, "init_seed", int, "job"),
        trials=trials,
        tolerance=Tolerance(atol=float(_field(tolerance, "atol", (int, float), "job.tolerance")),
                            rtol=float(_field(tolerance, "rtol", (int, float), "job.tolerance"))),
        inputs_dir=inputs_dir,
        outputs_dir=outputs_dir,
        timing=_parse_timing(job),
        baselines=_parse_baselines(job),
        truth=truth,
        precision_policy=policy)


def _parse_baselines(job: Dict[str, Any]) -> List[str]:
    if job.get("baselines") is None:
        return []
    names = _field(job, "baselines", list, "job")
    for name in names:
        if name not in BASELINES:
            raise JobError(f"job.baselines: {name!r} is not one of {BASELINES}")
    return list(names)


def _parse_candidate_spec(job: Dict[str, Any]) -> CandidateSpec:
    spec = _field(job, "candidate", dict, "job")
    kind = _field(spec, "kind", str, "job.candidate")
    if kind not in CANDIDATE_KINDS:
        raise JobError(f"job.candidate.kind: {kind!r} is not one of {CANDIDATE_KINDS}")
    backend = _field(spec, "backend", str, "job.candidate")
    if not backend or not all(c.isalnum() or c in "-_" for c in backend):
        raise JobError(f"job.candidate.backend: {backend!r} is not a backend name")
    stream_handle = _optional_str(spec, "stream_handle", "job.candidate")
    if stream_handle is not None and stream_handle not in STREAM_HANDLES:
        raise JobError(f"job.candidate.stream_handle: {stream_handle!r} is not one of "
                       f"{STREAM_HANDLES}")
    candidate = CandidateSpec(kind=kind, backend=backend,
                              artifact=_optional_str(spec, "artifact", "job.candidate"),
                              source_file=_optional_str(spec, "source_file", "job.candidate"),
                              opencl_platform=_optional_str(spec, "opencl_platform",
                                                            "job.candidate"),
                              stream_handle=stream_handle)
    if kind == "native" and candidate.artifact is None:
        raise JobError("job.candidate.artifact: required for kind 'native'")
    if kind in ("opencl", "module") and candidate.source_file is None:
        raise JobError(f"job.candidate.source_file: required for kind '{kind}'")
    if kind == "opencl" and candidate.opencl_platform is None:
        raise JobError("job.candidate.opencl_platform: required for kind 'opencl'")
    return candidate


def _parse_candidate(job: Dict[str, Any]) -> CandidateJob:
    trials = []
    for i, trial in enumerate(_field(job, "trials", list, "job")):
        where = f"job.trials[{i}]"
        outputs = []
        for j, out in enumerate(_field(trial, "outputs", list, where)):
            shape = _field(out, "shape", list, f"{where}.outputs[{j}]")
            if not all(isinstance(d, int) and d >= 0 for d in shape):
                raise JobError(f"{where}.outputs[{j}].shape: expected non-negative integers")
            dtype = _field(out, "dtype", str, f"{where}.outputs[{j}]")
            if dtype not in DTYPE_NAMES:
                raise JobError(f"{where}.outputs[{j}].dtype: {dtype!r} is not one of {DTYPE_NAMES}")
            outputs.append(OutputSpec(dtype=dtype, shape=list(shape)))
        trials.append(CandidateTrial(index=_field(trial, "index", int, where), outputs=outputs))
    inputs_dir, outputs_dir = _abs_dir(job, "inputs_dir"), _abs_dir(job, "outputs_dir")
    if _is_within(outputs_dir, inputs_dir):
        raise JobError("job.outputs_dir must not lie inside job.inputs_dir")
    return CandidateJob(task=_parse_task(job),
                        device=_field(job, "device", str, "job"),
                        candidate=_parse_candidate_spec(job),
                        init_seed=_field(job, "init_seed", int, "job"),
                        inputs_dir=inputs_dir,
                        outputs_dir=outputs_dir,
                        trials=trials,
                        timing=_parse_timing(job))


def parse_job(document: Any):
    """Returns a ReferenceJob, CandidateJob or CalibrateJob; raises UnsupportedProtocol or
    JobError."""
    if not isinstance(document, dict):
        raise JobError("job: expected a JSON object")
    version = document.get("protocol")
    if version != PROTOCOL_VERSION:
        raise UnsupportedProtocol(f"protocol version {version} not supported")
    phase = _field(document, "phase", str, "job")
    if phase == "reference":
        return _parse_reference(document)
    if phase == "candidate":
        return _parse_candidate(document)
    if phase == "calibrate":
        return CalibrateJob(device=_field(document, "device", str, "job"))
    if phase == "profile":
        from kforge_runner import profile_phase  # pylint: disable=import-outside-toplevel
        return profile_phase.parse(document)
    if phase == "task_check":
        from kforge_runner import task_check_phase  # pylint: disable=import-outside-toplevel
        return task_check_phase.parse(document)
    raise JobError(f"job.phase: {phase!r} is not 'reference', 'candidate', 'calibrate', "
                   "'profile' or 'task_check'")


def read_job(path: str):
    """Reads and parses the job file at ``path``; raises JobError if unreadable or malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise JobError(f"cannot read job file {path}: {e}") from e
    return parse_job(document)


class ResultChannel:
    """The result pipe: accepts exactly one document, and only from the original runner process.

    ``write`` adds ``"protocol": 1`` (and ``"seal"`` when the channel has one), serialises the document as strict JSON (no NaN/Infinity),
    writes it to the fd and closes the fd. A document that cannot be serialised raises ValueError or
    TypeError before anything is written; a second call raises RuntimeError; a call from a forked
    child exits that child (status 70) without writing.
    """

    def __init__(self, fd: int, seal: Optional[str] = None):
        self._fd = fd
        self._written = False
        # The per-job secret (``--seal-stdin``): the orchestrator accepts only a document that
        # carries it, so one a candidate forges on an inherited descriptor is refused.
        self._seal = seal

    def write(self, result: Dict[str, Any]) -> None:
        process_guard.exit_if_forked()
        if self._written:
            raise RuntimeError("the result has already been written")
        document = {"protocol": PROTOCOL_VERSION}
        document.update(result)
        document["protocol"] = PROTOCOL_VERSION
        if self._seal is not None:
            document["seal"] = self._seal
        data = json.dumps(document, allow_nan=False).encode("utf-8") + b"\n"
        self._written = True
        try:
            view = memoryview(data)
            while view:
                view = view[_os_write(self._fd, view):]
        finally:
            _os_close(self._fd)


def read_seal(fd: int = 0) -> str:
    """Reads the per-job seal, one line, from ``fd`` (stdin), then points ``fd`` at /dev/null so
    that nothing loaded later can read from the orchestrator's pipe. Called before candidate code
    exists in the process."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 512:
        chunk = os.read(fd, 512 - len(data))
        if not chunk:
            break
        data += chunk
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
    seal = data.decode("ascii", "replace").strip()
    if not seal:
        raise JobError("--seal-stdin: no seal on stdin")
    return seal
