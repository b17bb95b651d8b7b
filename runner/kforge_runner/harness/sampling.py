"""The clocks of one ``sample`` (runner/HARNESS.md): what happens between the two readings.

``DeviceClock.sample(mode, spin_s, call)`` runs ``call()`` once under the named mode and returns a
``Reading`` with the raw figure (the clock's own cost is in it: the parent subtracts the median
of the empty samples it took before ``load``):

- ``cpu``: ``perf_counter_ns`` around the call, nothing synchronised inside;
- ``cold`` (cuda): persisting-L2 reset, a read of twice the L2 size, a spin kernel of ``spin_s``
  queued first so that the call is enqueued while it runs, then an event pair around the call on
  the current stream (EVAL-PROTOCOL timing rule 2); ``enqueue_s`` is the host time the call took
  to enqueue (the parent keeps ``spin_s`` above it);
- ``warm`` (cuda): an event pair around the call, nothing flushed;
- ``host`` (cuda): device synchronised, host clock, call, device synchronised, host clock (sees
  work on every stream: the side-stream cross-check).

On other accelerators (``xpu``, ``mps``) ``host`` synchronises through the device's own module
and ``cold``/``warm`` are not offered. ``graph`` captures ``calls`` calls back to back in one CUDA graph and times its replays, so the
side figure has no launch gap between calls. The functions and clocks used are bound when this
module is imported, before any candidate code loads.
"""

import dataclasses
import time
from typing import Any, Callable, Optional

import torch

_perf_counter_ns = time.perf_counter_ns
GRAPH_REPLAYS = 5
CUDA_MODES = ("cold", "warm", "host")


class ClockError(Exception):
    """A mode the device has no clock for (``cold`` on the CPU, say): the parent's mistake."""


@dataclasses.dataclass
class Reading:
    seconds: float
    enqueue_s: float
    sm_mhz: int
    value: Any


def synchronizer(device: torch.device) -> Callable[..., None]:
    """Waits for all work on ``device`` (nothing to wait for on the CPU), bound now."""
    if device.type == "cpu":
        return lambda *_: None
    module = getattr(torch, device.type)
    sync = module.synchronize
    if device.type == "mps":
        return lambda *_: sync()
    return lambda *_: sync(device)


class DeviceClock:
    """The sample clocks of one device; on cuda devices the flush buffer, the CUDA runtime (for
    the persisting-L2 reset) and NVML (SM clock) are set up once, at the first cuda sample."""

    def __init__(self, device: torch.device):
        self.device = device
        self._cuda = None

    def _cuda_state(self):
        if self._cuda is None:
            self._cuda = _CudaState(self.device)
        return self._cuda

    def prepare(self) -> None:
        """Sets up the device's clock state ahead of the first sample (hello calls it)."""
        if self.device.type == "cuda":
            self._cuda_state()

    def check(self, mode: str) -> None:
        """Raises ClockError unless this device has a clock for ``mode``."""
        if mode == "cpu":
            return
        if mode not in CUDA_MODES:
            raise ClockError(f"sample.mode {mode!r} is not a clock of the torch harness")
        if self.device.type != "cuda" and not (mode == "host" and self.device.type != "cpu"):
            raise ClockError(f"sample.mode {mode!r} needs a cuda device, this harness serves "
                             f"{self.device}")

    def check_graph(self) -> None:
        if self.device.type != "cuda":
            raise ClockError(f"no CUDA graphs on {self.device}")

    def sample(self, mode: str, spin_s: float, call: Callable[[], Any]) -> Reading:
        """One call under ``mode`` (``check`` it first: a ClockError raised here would look
        like the candidate's failure to a caller that guards the call)."""
        if mode == "cpu":
            start = _perf_counter_ns()
            value = call()
            seconds = (_perf_counter_ns() - start) / 1e9
            return Reading(seconds, seconds, 0, value)
        if self.device.type != "cuda":  # host mode on another accelerator
            sync = synchronizer(self.device)
            sync()
            start = _perf_counter_ns()
            value = call()
            enqueue_s = (_perf_counter_ns() - start) / 1e9
            sync()
            return Reading((_perf_counter_ns() - start) / 1e9, enqueue_s, 0, value)
        return self._cuda_state().sample(mode, spin_s, call)

    def graph(self, calls: int, call: Callable[[], Any]) -> float:
        """Seconds per call of ``calls`` calls captured back to back in one CUDA graph
        (``check_graph`` first)."""
        return self._cuda_state().graph(calls, call)


class _CudaState:
    def __init__(self, device: torch.device):
        from kforge_runner import cuda_timing
        self.device = device
        props = torch.cuda.get_device_properties(device)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self._flush = torch.zeros(2 * self.l2_bytes // 4, dtype=torch.int32, device=device)
        self._flush_sink: Optional[torch.Tensor] = None
        self._cudart = cuda_timing.load_cudart()
        reset = getattr(self._cudart, "cudaCtxResetPersistingL2Cache", None) \
            if self._cudart is not None else None
        self._reset = reset if reset is not None and reset() == 0 else None
        self.nvml = cuda_timing.Nvml(device)
        self.cycles_per_s = (self.nvml.max_sm_mhz or 1500) * 1e6
        # Bound now, before candidate code loads: a rebound Event.elapsed_time (a finding)
        # does not change what is measured.
        self._synchronize = torch.cuda.synchronize
        self._event = torch.cuda.Event
        self._record = torch.cuda.Event.record
        self._elapsed = torch.cuda.Event.elapsed_time
        self._sleep = torch.cuda._sleep  # pylint: disable=protected-access

    def sample(self, mode: str, spin_s: float, call: Callable[[], Any]) -> Reading:
        if mode == "host":
            self._synchronize(self.device)
            start = _perf_counter_ns()
            value = call()
            enqueue_s = (_perf_counter_ns() - start) / 1e9
            self._synchronize(self.device)
            seconds = (_perf_counter_ns() - start) / 1e9
            return Reading(seconds, enqueue_s, self.nvml.sm_mhz(), value)
        stream = torch.cuda.current_stream(self.device)
        self._synchronize(self.device)
        if mode == "cold":
            if self._reset is not None:
                self._reset()
            # Twice the L2 size read: every line the last sample left is replaced by clean,
            # unrelated data (dirty lines are written back here, outside the timed region).
            self._flush_sink = self._flush.sum()
            if spin_s > 0:
                self._sleep(int(spin_s * self.cycles_per_s))
        start, end = self._event(enable_timing=True), self._event(enable_timing=True)
        self._record(start, stream)
        enqueue_started = _perf_counter_ns()
        value = call()
        enqueue_s = (_perf_counter_ns() - enqueue_started) / 1e9
        self._record(end, stream)
        self._synchronize(self.device)
        return Reading(self._elapsed(start, end) / 1e3, enqueue_s, self.nvml.sm_mhz(), value)

    def graph(self, calls: int, call: Callable[[], Any]) -> float:
        capture_stream = torch.cuda.Stream(self.device)
        capture_stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(capture_stream):
            call()  # capture needs the lazy initialisations done
        torch.cuda.current_stream(self.device).wait_stream(capture_stream)
        self._synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                call()
        times = []
        for _ in range(GRAPH_REPLAYS):
            self._synchronize(self.device)
            start, end = self._event(enable_timing=True), self._event(enable_timing=True)
            self._record(start)
            graph.replay()
            self._record(end)
            self._synchronize(self.device)
            times.append(self._elapsed(start, end) / 1e3)
        del graph
        return sorted(times)[len(times) // 2] / calls
