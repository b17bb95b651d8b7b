"""OpenCL candidates: a Python file with ``SOURCE`` (OpenCL C) and
``launch(cl, queue, program, inputs, outputs)``, run through pyopencl.

``inputs``/``outputs`` are lists of ``Buffer``. The program is built for the first device of the
platform whose name contains the job's platform substring, with ``-cl-std=CL1.2``; a failed build
raises CompileError with the build log. Outputs start as NaN (floats) or 0x5A bytes (integers);
the runner waits for the queue to finish after ``launch``. pyopencl is imported only here.
"""

import os
import re
from typing import Any, Dict, List, Tuple

import numpy as np
import torch

from kforge_runner import source_loader, tensor_files, timing
from kforge_runner.errors import CompileError
from kforge_runner.poison import POISON_BYTE
from kforge_runner.protocol import OutputSpec

CANDIDATE_MODULE_NAME = "kforge_candidate"
BUILD_OPTIONS = ["-cl-std=CL1.2"]

# pyopencl's binary cache writes under $HOME and adds its own text to build errors; builds here are
# one-shot, so it is off. Must be set before pyopencl is imported.
os.environ.setdefault("PYOPENCL_NO_CACHE", "1")
import pyopencl as cl  # noqa: E402


def use_scratch_dir(scratch_dir: str) -> None:
    """Points PoCL's compiler cache into the phase's scratch directory unless POCL_CACHE_DIR is set.

    PoCL otherwise writes under $HOME, which a sandbox may keep read-only. Takes effect if called
    before the first platform query.
    """
    os.environ.setdefault("POCL_CACHE_DIR", os.path.join(scratch_dir, "pocl-cache"))


class Buffer:
    """A device buffer holding one tensor's C-contiguous elements.

    ``buf`` is the ``cl.Buffer``, ``shape`` a tuple, ``dtype`` the numpy dtype of the elements
    (bfloat16 tensors use int16 holding the raw bfloat16 bit patterns), ``numel`` the element count.
    Scalar inputs are 0-d float64 buffers.
    """

    def __init__(self, buf: "cl.Buffer", shape: Tuple[int, ...], dtype: np.dtype):
        self.buf = buf
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.numel = int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize


def find_device(platform_substring: str) -> "cl.Device":
    """The first device of the first platform whose name contains the substring (case-insensitive).

    Raises RuntimeError naming the available platforms when none matches.
    """
    platforms = cl.get_platforms()
    for platform in platforms:
        if platform_substring.lower() in platform.name.lower():
            devices = platform.get_devices()
            if devices:
                return devices[0]
    names = ", ".join(repr(p.name) for p in platforms) or "none"
    raise RuntimeError(
        f"no OpenCL platform with devices matches {platform_substring!r} (found: {names})")


def build(context: "cl.Context", device: "cl.Device", source: str) -> "cl.Program":
    program = cl.Program(context, source)
    try:
        return program.build(options=BUILD_OPTIONS, devices=[device])
    except cl.Error as e:
        try:
            log = program.get_build_info(device, cl.program_build_info.LOG)
        except cl.Error:
            log = str(e)
        raise CompileError("OpenCL build failed (-cl-std=CL1.2):\n" + _tidy_build_log(log))\
            from None


# The OpenCL runtime compiles SOURCE from a temporary file whose name is random (PoCL:
# .../pocl-cache/tempfile_XXXXXX.cl, NVIDIA: <source>): a log line names it as "SOURCE" instead,
# so that the model reads the line numbers of its own string and the same error reads the same
# in every run (a recorded conversation replays).
# The closing "Device <name> failed to build the program" line names the machine, not the error.
_TEMP_SOURCE = re.compile(r"(?:/[^\s:]*)?/tempfile_[A-Za-z0-9]+\.cl|<source>")
_DEVICE_FAILED = re.compile(r"^Device .* failed to build the program\.?$")


def _tidy_build_log(log: str) -> str:
    lines = [line for line in log.strip().splitlines() if not _DEVICE_FAILED.match(line.strip())]
    return _TEMP_SOURCE.sub("SOURCE", "\n".join(lines))


def _host_array(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return tensor_files.to_host_array(value)
    return np.array(float(value), dtype=np.float64)


def poisoned_array(spec: OutputSpec) -> np.ndarray:
    dtype = np.dtype(tensor_files.NUMPY_DTYPES[spec.dtype])
    if spec.dtype in ("float32", "float16", "float64"):
        return np.full(spec.shape, np.nan, dtype=dtype)
    if spec.dtype == "bfloat16":
        return np.full(spec.shape, 0x7FC0, dtype=dtype)  # bfloat16 quiet NaN
    return np.frombuffer(bytes([POISON_BYTE]) * (int(np.prod(spec.shape)) * dtype.itemsize),
                         dtype=dtype).reshape(spec.shape).copy()


class OpenCLCandidate:
    """A loaded and built OpenCL candidate. Loading raises CompileError when the build fails.

    ``environment`` adds the OpenCL device's name to the result's environment.
    """

    result_fields: Dict[str, Any] = {}

    def __init__(self, source_file: str, device: "cl.Device", state: List[torch.Tensor]):
        self.device = device
        self.environment = {"opencl_device": device.name}
        self._state = [_host_array(t) for t in state]
        self._context = cl.Context([self.device])
        # Profiling-enabled for timing (markers around launch); it changes nothing else.
        self._queue = cl.CommandQueue(
            self._context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        module = source_loader.load_module(source_file, CANDIDATE_MODULE_NAME)
        for name in ("SOURCE", "launch"):
            if not hasattr(module, name):
                raise CompileError(f"{source_file} does not define {name}")
        self._launch = module.launch
        self._program = build(self._context, self.device, module.SOURCE)

    def _upload(self, array: np.ndarray) -> Buffer:
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        # A zero-sized cl.Buffer is invalid; empty tensors get one unused byte.
        host = array if array.nbytes else np.zeros(1, dtype=np.uint8)
        return Buffer(cl.Buffer(self._context, flags, hostbuf=host), array.shape, array.dtype)

    def _download(self, buffer: Buffer) -> np.ndarray:
        host = np.empty(buffer.shape, dtype=buffer.dtype)
        if host.nbytes:
            cl.enqueue_copy(self._queue, host, buffer.buf)
        return host

    def sampler(self, inputs: List[Any], expected: List[OutputSpec]) -> Tuple[str, Any]:
        """(clock, sampler) timing ``launch`` (timing.py).

        Each sample uploads fresh input buffers and allocates output buffers, and waits for the
        queue, before the clock starts. On a CPU device (PoCL) the clock is ``perf_counter``
        around ``launch`` and the queue's finish: the clock the eager baseline is timed by on
        the same CPU, so that the speedup compares one clock. Elsewhere it is ``opencl-events``:
        the end of a marker enqueued after ``launch`` minus the start of one enqueued before it.
        """
        originals = [_host_array(v) for v in inputs] + self._state

        if self.device.type & cl.device_type.CPU:
            def host_sample() -> float:
                in_buffers = [self._upload(a) for a in originals]
                out_buffers = [self._allocate(spec) for spec in expected]
                self._queue.finish()
                started = timing.host_clock_ns()
                self._launch(cl, self._queue, self._program, in_buffers, out_buffers)
                self._queue.finish()
                return (timing.host_clock_ns() - started) / 1e9

            return "perf_counter", host_sample

        def sample() -> float:
            in_buffers = [self._upload(a) for a in originals]
            out_buffers = [self._allocate(spec) for spec in expected]
            self._queue.finish()
            first = cl.enqueue_marker(self._queue)
            self._launch(cl, self._queue, self._program, in_buffers, out_buffers)
            last = cl.enqueue_marker(self._queue)
            self._queue.finish()
            return (last.profile.end - first.profile.start) / 1e9

        return "opencl-events", sample

    def _allocate(self, spec: OutputSpec) -> Buffer:
        dtype = np.dtype(tensor_files.NUMPY_DTYPES[spec.dtype])
        numel = int(np.prod(spec.shape, dtype=np.int64))
        buf = cl.Buffer(self._context, cl.mem_flags.READ_WRITE, max(numel * dtype.itemsize, 1))
        return Buffer(buf, tuple(spec.shape), dtype)

    def run(self, inputs: List[Any],
            expected: List[OutputSpec]) -> Tuple[List[torch.Tensor], bool, List[str]]:
        """Launches once on buffers of ``inputs`` then the state tensors.

        Returns (outputs, inputs_unchanged, problems); outputs are runner-allocated with the
        expected shapes and dtypes, so there are no problems.
        """
        originals = [_host_array(v) for v in inputs] + self._state
        in_buffers = [self._upload(a) for a in originals]
        out_buffers = [self._upload(poisoned_array(spec)) for spec in expected]
        self._launch(cl, self._queue, self._program, in_buffers, out_buffers)
        self._queue.finish()
        outputs = [tensor_files.from_host_array(self._download(b), spec.dtype)
                   for b, spec in zip(out_buffers, expected)]
        unchanged = all(np.array_equal(o, self._download(b), equal_nan=o.dtype.kind == "f")
                        for o, b in zip(originals, in_buffers))
        return outputs, unchanged, []
