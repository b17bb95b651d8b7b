"""Served OpenCL candidates: ``SOURCE`` (OpenCL C) and ``launch(cl, queue, program, inputs,
outputs)`` through pyopencl (runner/PROTOCOL.md, "Phase candidate", kind opencl), or nothing
(the empty samples before ``load``).

The context and its profiling queue are made once (``OpenCLDevice``: at ``hello`` when it names
the platform, else at ``load``). Buffers: ``inputs`` are the task inputs (scalars as 0-d float64
buffers) then the state tensors, ``outputs`` harness-allocated buffers of the reference's shapes
filled with NaN (integers: 0x5A bytes). A ``call`` uploads fresh buffers (the buffers of earlier
calls are kept alive, so no handle is ever handed out twice), waits for the queue after
``launch`` and downloads the outputs (and the inputs as they are now) straight into their arena
regions. A ``sample`` restores its set's device buffers from the pristine host copies and
re-poisons its outputs, finishes the queue, then times ``launch``: ``opencl-events`` from the
start of a marker enqueued before it to the end of one enqueued after it, ``cpu`` on the host
clock up to the queue's finish.
"""

import dataclasses
import os
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
import torch

from kforge_runner import source_loader
from kforge_runner.errors import CompileError, LoadStage
from kforge_runner.harness.arena import Arena
from kforge_runner.harness.guarded import run_guarded
from kforge_runner.harness.messages import Call, ProtocolError, TimingSet
from kforge_runner.harness.sampling import ClockError

CANDIDATE_MODULE_NAME = "kforge_candidate"
MODES = ("opencl-events", "cpu")
_perf_counter_ns = time.perf_counter_ns


def _opencl():
    from kforge_runner import opencl  # pyopencl only where OpenCL is served
    return opencl


class OpenCLDevice:
    """The device of the first platform whose name contains ``platform`` (case-insensitive),
    with one context and one profiling-enabled queue. PoCL's compiler cache goes to
    ``./pocl-cache`` (the harness's working folder) unless POCL_CACHE_DIR is set."""

    def __init__(self, platform: str):
        opencl = _opencl()
        opencl.use_scratch_dir(os.getcwd())
        self.platform = platform
        self.cl = opencl.cl
        self.device = opencl.find_device(platform)
        self.context = self.cl.Context([self.device])
        self.queue = self.cl.CommandQueue(
            self.context, properties=self.cl.command_queue_properties.PROFILING_ENABLE)

    def upload(self, array: np.ndarray):
        opencl = _opencl()
        flags = self.cl.mem_flags.READ_WRITE | self.cl.mem_flags.COPY_HOST_PTR
        # A zero-sized cl.Buffer is invalid; empty tensors get one unused byte.
        host = array if array.nbytes else np.zeros(1, dtype=np.uint8)
        return opencl.Buffer(self.cl.Buffer(self.context, flags, hostbuf=host), array.shape,
                             array.dtype)

    def write(self, buffer, array: np.ndarray) -> None:
        if array.nbytes:
            self.cl.enqueue_copy(self.queue, buffer.buf, np.ascontiguousarray(array))

    def read_into(self, target: np.ndarray, buffer) -> None:
        if target.nbytes:
            self.cl.enqueue_copy(self.queue, target, buffer.buf)


def _host_value(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        from kforge_runner import tensor_files
        return tensor_files.to_host_array(value)
    return np.array(float(value), dtype=np.float64)


@dataclasses.dataclass
class _DeviceSet:
    pristine: List[np.ndarray]  # inputs then state
    poisons: List[np.ndarray]
    in_buffers: List[Any]
    out_buffers: List[Any]


class OpenCLServed:
    """One OpenCL candidate on ``device`` (``source_file`` None: the empty call)."""

    def __init__(self, device: OpenCLDevice, arena: Arena, source_file: Optional[str] = None,
                 state: Iterable[torch.Tensor] = ()):
        self.cl_device = device
        self.arena = arena
        self.own_files = [source_file] if source_file else []
        self._state = [_host_value(t) for t in state]
        self._launch = None
        self._program = None
        self._kept: List[Any] = []  # every call's buffers: handles are never reused
        self._last: Optional[tuple] = None
        self._sets: Dict[int, _DeviceSet] = {}
        self.environment = {"opencl_device": device.device.name}
        if source_file is not None:
            run_guarded(LoadStage.LOAD, self.own_files, "loading the candidate", self._load,
                        source_file)

    def _load(self, source_file: str) -> None:
        module = source_loader.load_module(source_file, CANDIDATE_MODULE_NAME)
        for name in ("SOURCE", "launch"):
            if not hasattr(module, name):
                raise CompileError(f"{source_file} does not define {name}")
        self._program = _opencl().build(self.cl_device.context, self.cl_device.device,
                                        module.SOURCE)
        self._launch = module.launch

    def _run_launch(self, in_buffers, out_buffers) -> None:
        self._launch(self.cl_device.cl, self.cl_device.queue, self._program, in_buffers,
                     out_buffers)
        self.cl_device.queue.finish()

    def call(self, cmd: Call) -> Dict[str, Any]:
        if self._launch is None:
            raise ProtocolError("call before load")
        opencl = _opencl()
        arrays = [_host_value(self.arena.read(d)) for d in cmd.inputs] + self._state
        poisons = [opencl.poisoned_array(d) for d in cmd.outputs]
        if cmd.reuse:
            if self._last is None or [a.shape for a in arrays] != [b.shape for b in self._last[0]]:
                raise ProtocolError("call.reuse: no earlier call with the same input shapes")
            in_buffers, out_buffers = self._last
            for buf, a in zip(in_buffers, arrays):
                self.cl_device.write(buf, a)
            for buf, p in zip(out_buffers, poisons):
                self.cl_device.write(buf, p)
            self.cl_device.queue.finish()
        else:
            in_buffers = [self.cl_device.upload(a) for a in arrays]
            out_buffers = [self.cl_device.upload(p) for p in poisons]
            self._kept.append((in_buffers, out_buffers))
        self._last = (in_buffers, out_buffers)
        run_guarded(LoadStage.RUN, self.own_files, "call", self._run_launch, in_buffers,
                    out_buffers)
        for desc, buf in zip(cmd.outputs, out_buffers):
            self.cl_device.read_into(self.arena.numpy_view(desc), buf)
        for desc, region, buf in zip(cmd.inputs, cmd.inputs_after, in_buffers):
            self.cl_device.read_into(
                self.arena.numpy_view(dataclasses.replace(desc, region=region)), buf)
        self.cl_device.queue.finish()
        return {"ok": True, "output_descs": [{"dtype": d.dtype, "shape": d.shape}
                                             for d in cmd.outputs], "problems": []}

    def forget_sets(self) -> None:
        self._sets.clear()

    def _device_set(self, index: int, tset: TimingSet, host_inputs: List[Any]) -> _DeviceSet:
        if index not in self._sets:
            opencl = _opencl()
            pristine = [_host_value(v) for v in host_inputs] + self._state
            poisons = [opencl.poisoned_array(d) for d in tset.outputs]
            self._sets[index] = _DeviceSet(
                pristine, poisons, [self.cl_device.upload(a) for a in pristine],
                [self.cl_device.upload(p) for p in poisons])
        return self._sets[index]

    def _timed(self, mode: str, in_buffers, out_buffers) -> Tuple[float, float]:
        """(seconds, enqueue_s): the sample's figure, and the host time ``launch`` took."""
        queue = self.cl_device.queue
        first = self.cl_device.cl.enqueue_marker(queue) if mode == "opencl-events" else None
        start = _perf_counter_ns()
        if self._launch is not None:
            self._launch(self.cl_device.cl, queue, self._program, in_buffers, out_buffers)
        enqueue_s = (_perf_counter_ns() - start) / 1e9
        if first is None:
            queue.finish()
            return (_perf_counter_ns() - start) / 1e9, enqueue_s
        last = self.cl_device.cl.enqueue_marker(queue)
        queue.finish()
        return (last.profile.end - first.profile.start) / 1e9, enqueue_s

    def sample(self, index: int, tset: TimingSet, host_inputs: List[Any], mode: str,
               spin_s: float, buffers: Optional[int] = None,  # pylint: disable=unused-argument
               buffer_set=None) -> Dict[str, Any]:
        """One timed launch on set ``index`` (in set ``buffers``'s device buffers when given)."""
        if mode not in MODES:
            raise ClockError(f"sample.mode {mode!r}: OpenCL candidates are timed with {MODES}")
        dset = self._device_set(index, tset, host_inputs)
        target = dset
        if buffers is not None and buffers != index:
            target = self._device_set(buffers, *buffer_set)
        for buf, a in zip(target.in_buffers, dset.pristine):
            self.cl_device.write(buf, a)
        for buf, p in zip(target.out_buffers, dset.poisons):
            self.cl_device.write(buf, p)
        self.cl_device.queue.finish()
        seconds, enqueue_s = run_guarded(LoadStage.RUN, self.own_files, "sample", self._timed,
                                         mode, target.in_buffers, target.out_buffers)
        for desc, buf in zip(tset.outputs, target.out_buffers):
            self.cl_device.read_into(self.arena.numpy_view(desc), buf)
        self.cl_device.queue.finish()
        return {"ok": True, "seconds": seconds, "enqueue_s": enqueue_s, "sm_mhz": 0,
                "problems": []}

    def graph(self, *_args) -> Dict[str, Any]:
        raise ClockError("no CUDA graphs for OpenCL candidates")
