"""The cold timing protocol on CUDA devices (EVAL-PROTOCOL "Timing", rules 2-5).

``time_call`` in timing.py delegates here for cuda devices. Which clock it uses is the module's
*mode*, set by ``timing.measure_cuda`` for one pass at a time:

- ``cold`` (the headline): before the call, reset the persisting-L2 state, read twice the L2 size
  (L2 then holds clean, unrelated lines), then queue a spin kernel; the call is enqueued while
  the spin kernel runs, between two CUDA events on the current stream, so that launch latency is
  not timed and no cache is warm. The event pair's own time (an empty call measured the same
  way at start-up, ``timer_floor_s``) is subtracted. The SM clock is read after every sample so
  that throttled samples can be discarded.
- ``warm``: an event pair around the call, nothing flushed (labelled as warm).
- ``host``: a device-synchronised host clock around the call (``torch.cuda.synchronize``
  before and after), which sees work on every stream; compared with the warm events it exposes
  work moved to side streams.
- ``graph``: the call captured once in a CUDA graph, then the replay timed between events.

The state here (flush buffer, spin length, NVML handle) belongs to the runner process; nothing
of it is handed to candidate code.
"""

import ctypes
import glob
import os
import time
from typing import Any, Callable, Dict, Optional, Tuple

import torch

MODES = ("cold", "warm", "host", "graph")

# The spin kernel covers the host's enqueue time of the call; it starts here and grows to 1.5x
# the longest enqueue time seen (bounded), so that the device never waits for the host inside
# the timed region.
MIN_SPIN_S = 50e-6
_MAX_SPIN_S = 20e-3


def load_cudart() -> Optional[ctypes.CDLL]:
    """The CUDA runtime library torch uses (for cudaCtxResetPersistingL2Cache), or None."""
    candidates = []
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    candidates += sorted(glob.glob(os.path.join(torch_lib, "libcudart*.so*")))
    site = os.path.dirname(os.path.dirname(torch.__file__))
    candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcudart.so*")))
    candidates += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "lib", "libcudart.so*")))
    candidates += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for name in candidates:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class Nvml:
    """The SM clock of one device through NVML (libnvidia-ml), or nothing when unavailable."""

    NVML_CLOCK_SM = 1

    def __init__(self, device: torch.device):
        self.handle = None
        self.max_sm_mhz = 0
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            handle = ctypes.c_void_p()
            props = torch.cuda.get_device_properties(device)
            uuid = getattr(props, "uuid", None)
            found = -1
            if uuid is not None:
                text = str(uuid)
                text = text if text.startswith("GPU-") else "GPU-" + text
                found = lib.nvmlDeviceGetHandleByUUID(text.encode(), ctypes.byref(handle))
            if found != 0:
                index = device.index if device.index is not None else torch.cuda.current_device()
                found = lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))
            if found != 0:
                return
            clock = ctypes.c_uint()
            if lib.nvmlDeviceGetMaxClockInfo(handle, self.NVML_CLOCK_SM, ctypes.byref(clock)) == 0:
                self.max_sm_mhz = int(clock.value)
            self.lib, self.handle = lib, handle
        except (OSError, AttributeError):
            self.handle = None

    def sm_mhz(self) -> int:
        if self.handle is None:
            return 0
        clock = ctypes.c_uint()
        if self.lib.nvmlDeviceGetClockInfo(self.handle, self.NVML_CLOCK_SM,
                                           ctypes.byref(clock)) != 0:
            return 0
        return int(clock.value)


class CudaClock:
    """One per device and runner process: the protocol's buffers, spin length and SM clock."""

    def __init__(self, device: torch.device):
        self.device = device
        props = torch.cuda.get_device_properties(device)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self.flush_bytes = 2 * self.l2_bytes
        self._flush = torch.zeros(self.flush_bytes // 4, dtype=torch.int32, device=device)
        self._cudart = load_cudart()
        self.persisting_l2_reset = False
        if self._cudart is not None and hasattr(self._cudart, "cudaCtxResetPersistingL2Cache"):
            self.persisting_l2_reset = self._cudart.cudaCtxResetPersistingL2Cache() == 0
        self.nvml = Nvml(device)
        self.cycles_per_s = (self.nvml.max_sm_mhz or 1500) * 1e6
        self.spin_s = MIN_SPIN_S
        self.mode = "cold"
        self.last_sm_mhz = 0
        self.launch_floor_s = self._host_floor()
        self.timer_floor_s = 0.0
        self.timer_floor_s = self._timer_floor()

    def _host_floor(self) -> float:
        """Median host time of synchronize; (nothing); synchronize: the host clock's floor."""
        samples = []
        for _ in range(21):
            torch.cuda.synchronize(self.device)
            start = time.perf_counter_ns()
            torch.cuda.synchronize(self.device)
            samples.append((time.perf_counter_ns() - start) / 1e9)
        return sorted(samples)[len(samples) // 2]

    def _timer_floor(self) -> float:
        """Median cold sample of an empty call: the event pair's own time, which every cold
        sample contains and which is subtracted from it (the kernels' device time remains)."""
        samples = [self.time_call(lambda: None)[0] for _ in range(51)]
        self.spin_s = MIN_SPIN_S
        return sorted(samples)[len(samples) // 2]

    def _overwrite_l2(self) -> None:
        """Reads twice the L2 size: every line the last sample left (dirty outputs included, whose
        write-back happens here, outside the timed region) is replaced by clean, unrelated data."""
        self._flush_sink = self._flush.sum()

    def describe(self) -> Dict[str, Any]:
        return {"l2_bytes": self.l2_bytes, "flush_bytes": self.flush_bytes,
                "persisting_l2_reset": self.persisting_l2_reset,
                "spin_s": self.spin_s, "max_sm_mhz": self.nvml.max_sm_mhz,
                "host_floor_s": self.launch_floor_s, "timer_floor_s": self.timer_floor_s}

    def time_call(self, call: Callable[[], Any]) -> Tuple[float, Any]:
        if self.mode == "host":
            return self._host(call)
        if self.mode == "graph":
            return self._graph(call)
        stream = torch.cuda.current_stream(self.device)
        torch.cuda.synchronize(self.device)
        if self.mode == "cold":
            if self.persisting_l2_reset:
                self._cudart.cudaCtxResetPersistingL2Cache()
            self._overwrite_l2()
            torch.cuda._sleep(int(self.spin_s * self.cycles_per_s))
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        enqueue_started = time.perf_counter_ns()
        value = call()
        enqueue_s = (time.perf_counter_ns() - enqueue_started) / 1e9
        end.record(stream)
        torch.cuda.synchronize(self.device)
        if self.mode == "cold" and enqueue_s * 1.5 > self.spin_s:
            self.spin_s = min(_MAX_SPIN_S, enqueue_s * 1.5)
        self.last_sm_mhz = self.nvml.sm_mhz()
        seconds = start.elapsed_time(end) / 1e3
        if self.mode == "cold":
            seconds = max(seconds - self.timer_floor_s, 0.0)
        return seconds, value

    def _host(self, call: Callable[[], Any]) -> Tuple[float, Any]:
        torch.cuda.synchronize(self.device)
        start = time.perf_counter_ns()
        value = call()
        torch.cuda.synchronize(self.device)
        return (time.perf_counter_ns() - start) / 1e9, value

    def _graph(self, call: Callable[[], Any]) -> Tuple[float, Any]:
        """Captures ``call`` in a CUDA graph (after one eager call on the capture stream, as
        capture requires), then times the median of 5 replays between events."""
        capture_stream = torch.cuda.Stream(self.device)
        capture_stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(capture_stream):
            call()
        torch.cuda.current_stream(self.device).wait_stream(capture_stream)
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            value = call()
        times = []
        for _ in range(5):
            torch.cuda.synchronize(self.device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize(self.device)
            times.append(start.elapsed_time(end) / 1e3)
        return sorted(times)[len(times) // 2], value


_clocks: Dict[Any, CudaClock] = {}


def clock_for_device(device: torch.device) -> CudaClock:
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _clocks:
        _clocks[key] = CudaClock(device)
    return _clocks[key]
