"""Harness commands (runner/HARNESS.md) parsed into typed values; parsing happens here only.

A malformed command raises ``ProtocolError``, which the loop answers with ``infra_error``: the
parent sent it, so it is never the candidate's verdict.
"""

import dataclasses
import math
from typing import Any, Dict, List, Optional

from kforge_runner import tensor_files

PROTOCOL_VERSION = 2
REGION_ALIGNMENT = 64
SAMPLE_MODES = ("cold", "warm", "host", "cpu", "opencl-events")
DEVICE_TYPES = ("cpu", "cuda", "xpu", "mps")  # xpu: Intel's Triton; mps: Metal
CANDIDATE_KINDS = ("module", "opencl", "reference")
REFERENCE_VARIANTS = ("eager", "compile", "compile-max-autotune")
SCALAR_KINDS = ("int", "float")
MAX_GRAPH_CALLS = 10_000
DEFAULT_SPIN_S = 50e-6  # the spin of a cold sample that names none
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "int64": 8,
            "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


class ProtocolError(Exception):
    """The command is malformed or out of order; the message names the field."""


@dataclasses.dataclass(frozen=True)
class Region:
    offset: int
    bytes: int


@dataclasses.dataclass(frozen=True)
class TensorDesc:
    """A contiguous little-endian tensor in the arena. ``scalar`` is "int"/"float" for a Python
    number carried as a 0-d float64 tensor; ``key`` names a state tensor."""

    dtype: str
    shape: List[int]
    region: Region
    scalar: Optional[str] = None
    key: Optional[str] = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclasses.dataclass(frozen=True)
class Hello:
    arena_bytes: int
    device: str
    opencl_platform: Optional[str]


@dataclasses.dataclass(frozen=True)
class CandidateSpec:
    kind: str
    backend: str
    source_file: Optional[str]
    task_file: Optional[str]
    overrides: Dict[str, Any]
    init_seed: int
    variant: str
    opencl_platform: Optional[str]


@dataclasses.dataclass(frozen=True)
class Load:
    candidate: CandidateSpec
    state: List[TensorDesc]
    stream_handle: str


@dataclasses.dataclass(frozen=True)
class Call:
    inputs: List[TensorDesc]
    outputs: List[TensorDesc]
    inputs_after: List[Region]
    reuse: bool


@dataclasses.dataclass(frozen=True)
class TimingSet:
    inputs: List[TensorDesc]
    outputs: List[TensorDesc]


@dataclasses.dataclass(frozen=True)
class PrepareTiming:
    sets: List[TimingSet]
    clock: str


@dataclasses.dataclass(frozen=True)
class Sample:
    """``buffers``: the set whose device buffers the call gets (default: ``set``'s own); with
    another set's, ``set``'s values are restored into them (an address probe while timing)."""

    set: int
    mode: Optional[str]
    spin_s: float
    buffers: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Graph:
    set: int
    calls: int


@dataclasses.dataclass(frozen=True)
class Quit:
    pass


def _field(obj: Any, key: str, kind, where: str, default=dataclasses.MISSING):
    if not isinstance(obj, dict):
        raise ProtocolError(f"{where}: expected an object")
    if key not in obj or obj[key] is None:
        if default is not dataclasses.MISSING:
            return default
        raise ProtocolError(f"{where}: missing field '{key}'")
    value = obj[key]
    # bool is an int subclass; a JSON true where a number is expected is still a mistake.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ProtocolError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, "
                            f"got {value!r}")
    return value


def _count(obj: Any, key: str, where: str, default=dataclasses.MISSING) -> int:
    value = _field(obj, key, int, where, default)
    if value is not None and value < 0:
        raise ProtocolError(f"{where}.{key}: must not be negative, got {value}")
    return value


def region(obj: Any, where: str) -> Region:
    offset, size = _count(obj, "offset", where), _count(obj, "bytes", where)
    if offset % REGION_ALIGNMENT:
        raise ProtocolError(f"{where}.offset: {offset} is not {REGION_ALIGNMENT}-byte aligned")
    return Region(offset=offset, bytes=size)


def tensor_desc(obj: Any, where: str) -> TensorDesc:
    dtype = _field(obj, "dtype", str, where)
    if dtype not in tensor_files.TORCH_DTYPES:
        raise ProtocolError(f"{where}.dtype: {dtype!r} is not one of "
                            f"{sorted(tensor_files.TORCH_DTYPES)}")
    shape = _field(obj, "shape", list, where)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ProtocolError(f"{where}.shape: expected non-negative integers, got {shape!r}")
    scalar = _field(obj, "scalar", str, where, None)
    if scalar is not None and (scalar not in SCALAR_KINDS or dtype != "float64" or shape):
        raise ProtocolError(f"{where}.scalar: a scalar is a 0-d float64 tensor with scalar "
                            f"'int' or 'float', got {scalar!r} {dtype} {shape}")
    desc = TensorDesc(dtype=dtype, shape=list(shape), region=region(
        _field(obj, "region", dict, where), f"{where}.region"),
        scalar=scalar, key=_field(obj, "key", str, where, None))
    itemsize = ITEMSIZE[dtype]
    if desc.region.bytes != desc.numel * itemsize:
        raise ProtocolError(f"{where}.region.bytes: {desc.region.bytes}, but {dtype} "
                            f"{desc.shape} holds {desc.numel * itemsize} bytes")
    return desc


def _descs(obj: Any, key: str, where: str) -> List[TensorDesc]:
    return [tensor_desc(d, f"{where}.{key}[{i}]")
            for i, d in enumerate(_field(obj, key, list, where))]


def _hello(m: Dict[str, Any]) -> Hello:
    version = m.get("protocol", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version!r} not supported (this harness speaks "
                            f"{PROTOCOL_VERSION})")
    arena_bytes = _count(m, "arena_bytes", "hello")
    device = _field(m, "device", str, "hello")
    kind, _, index = device.partition(":")
    if kind not in DEVICE_TYPES or (index and not index.isdigit()) or (kind in ("cpu", "mps")
                                                                       and index):
        raise ProtocolError(f"hello.device: {device!r} is not one of 'cpu', 'cuda[:N]', "
                            "'xpu[:N]', 'mps'")
    return Hello(arena_bytes=arena_bytes, device=device,
                 opencl_platform=_field(m, "opencl_platform", str, "hello", None))


def _candidate(obj: Any) -> CandidateSpec:
    where = "load.candidate"
    kind = _field(obj, "kind", str, where)
    if kind not in CANDIDATE_KINDS:
        raise ProtocolError(f"{where}.kind: {kind!r} is not one of {CANDIDATE_KINDS} (native "
                            "candidates are served by kforge-harness)")
    spec = CandidateSpec(
        kind=kind, backend=_field(obj, "backend", str, where, kind),
        source_file=_field(obj, "source_file", str, where, None),
        task_file=_field(obj, "task_file", str, where, None),
        overrides=dict(_field(obj, "overrides", dict, where, {})),
        init_seed=_field(obj, "init_seed", int, where, 0),
        variant=_field(obj, "variant", str, where, "eager"),
        opencl_platform=_field(obj, "opencl_platform", str, where, None))
    if kind in ("module", "opencl") and spec.source_file is None:
        raise ProtocolError(f"{where}.source_file: required for kind '{kind}'")
    if kind in ("module", "reference") and spec.task_file is None:
        raise ProtocolError(f"{where}.task_file: required for kind '{kind}'")
    if kind == "reference" and spec.variant not in REFERENCE_VARIANTS:
        raise ProtocolError(f"{where}.variant: {spec.variant!r} is not one of "
                            f"{REFERENCE_VARIANTS}")
    return spec


def _load(m: Dict[str, Any]) -> Load:
    stream_handle = _field(m, "stream_handle", str, "load", "none")
    if stream_handle not in ("none", "cuda-stream"):
        raise ProtocolError(f"load.stream_handle: {stream_handle!r}: the Python harness runs "
                            "opencl and module candidates, which take 'none' or 'cuda-stream'")
    return Load(candidate=_candidate(_field(m, "candidate", dict, "load")),
                state=_descs(m, "state", "load") if m.get("state") is not None else [],
                stream_handle=stream_handle)


def _call(m: Dict[str, Any]) -> Call:
    inputs = _descs(m, "inputs", "call")
    after = [region(r, f"call.inputs_after[{i}]")
             for i, r in enumerate(_field(m, "inputs_after", list, "call", []))]
    if after and len(after) != len(inputs):
        raise ProtocolError(f"call.inputs_after: {len(after)} regions for {len(inputs)} inputs")
    for i, (r, d) in enumerate(zip(after, inputs)):
        if r.bytes != d.region.bytes:
            raise ProtocolError(f"call.inputs_after[{i}].bytes: {r.bytes}, input {i} has "
                                f"{d.region.bytes}")
    return Call(inputs=inputs, outputs=_descs(m, "outputs", "call"), inputs_after=after,
                reuse=_field(m, "reuse", bool, "call", False))


def _prepare_timing(m: Dict[str, Any]) -> PrepareTiming:
    sets = _field(m, "sets", list, "prepare_timing")
    outputs = _field(m, "outputs", list, "prepare_timing")
    if len(outputs) != len(sets):
        raise ProtocolError(f"prepare_timing.outputs: {len(outputs)} lists for {len(sets)} sets")
    parsed = []
    for k, (s, outs) in enumerate(zip(sets, outputs)):
        if not isinstance(outs, list):
            raise ProtocolError(f"prepare_timing.outputs[{k}]: expected a list")
        parsed.append(TimingSet(
            inputs=_descs(s, "inputs", f"prepare_timing.sets[{k}]"),
            outputs=[tensor_desc(d, f"prepare_timing.outputs[{k}][{i}]")
                     for i, d in enumerate(outs)]))
    clock = _field(m, "clock", str, "prepare_timing", "cpu")
    if clock not in SAMPLE_MODES:
        raise ProtocolError(f"prepare_timing.clock: {clock!r} is not one of {SAMPLE_MODES}")
    return PrepareTiming(sets=parsed, clock=clock)


def _sample(m: Dict[str, Any]) -> Sample:
    mode = _field(m, "mode", str, "sample", None)
    if mode is not None and mode not in SAMPLE_MODES:
        raise ProtocolError(f"sample.mode: {mode!r} is not one of {SAMPLE_MODES}")
    spin_s = _field(m, "spin_s", (int, float), "sample", DEFAULT_SPIN_S)
    if not math.isfinite(spin_s) or not 0 <= spin_s <= 1.0:
        raise ProtocolError(f"sample.spin_s: expected seconds in [0, 1], got {spin_s!r}")
    return Sample(set=_count(m, "set", "sample"), mode=mode, spin_s=float(spin_s),
                  buffers=_count(m, "buffers", "sample", None))


def _graph(m: Dict[str, Any]) -> Graph:
    calls = _count(m, "calls", "graph")
    if not 1 <= calls <= MAX_GRAPH_CALLS:
        raise ProtocolError(f"graph.calls: expected 1..{MAX_GRAPH_CALLS}, got {calls}")
    return Graph(set=_count(m, "set", "graph"), calls=calls)


_PARSERS = {"hello": _hello, "load": _load, "call": _call, "prepare_timing": _prepare_timing,
            "sample": _sample, "graph": _graph, "quit": lambda m: Quit()}


def parse(message: Dict[str, Any]):
    """The typed command of one message; raises ProtocolError."""
    name = message.get("command")
    if name not in _PARSERS:
        raise ProtocolError(f"command: {name!r} is not one of {sorted(_PARSERS)}")
    return _PARSERS[name](message)
