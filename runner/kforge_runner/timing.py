"""Timing a call after the correctness trials (PROTOCOL.md, "Timing").

A *sampler* is a zero-argument function that prepares one call (fresh input clones, output
buffers: outside the timed region), makes it between the two clock readings, and returns the
seconds measured. ``measure`` warms up, then samples until the stopping rule is met, and returns
the protocol's statistics. Clocks:

- ``perf_counter``: ``time.perf_counter_ns`` around the call (cpu devices);
- ``events-cold``: the cold protocol of cuda_timing.py (L2 overwritten, persisting L2 reset, the
  call queued behind a spin kernel, one call between an event pair, throttled samples discarded),
  followed by three labelled side figures: ``warm`` (events, caches warm), ``host_sync`` (a
  device-synchronised host clock, the side-stream cross-check) and ``graph_replay`` (cuda devices;
  ``measure_on``);
- ``opencl-events``: OpenCL event profiling, a marker before and after ``launch`` on a
  profiling-enabled queue (opencl.py).
"""

import math
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from kforge_runner.protocol import TimingSpec

STOPPED_BY = ("noise", "timeout", "min")

# Bound when the runner imports this module, before any candidate code loads: a candidate that
# rebinds time.perf_counter_ns cannot change what time_call reads (docs/redteam.md, timer patch).
_perf_counter_ns = time.perf_counter_ns


def host_clock_ns() -> int:
    """The host clock of ``perf_counter`` samples, bound before any candidate code loaded."""
    return _perf_counter_ns()


def clock_for(device: torch.device) -> str:
    return "events-cold" if device.type == "cuda" else "perf_counter"


def time_call(device: torch.device, call: Callable[[], Any]) -> Tuple[float, Any]:
    """Runs ``call()`` once between two clock readings; returns (seconds, what it returned).

    On cuda devices the clock is the current mode of the device's ``cuda_timing.CudaClock``
    (cold unless ``measure_on`` is taking one of its side figures)."""
    if device.type == "cuda":
        from kforge_runner import cuda_timing
        return cuda_timing.clock_for_device(device).time_call(call)
    start_ns = _perf_counter_ns()
    value = call()
    end_ns = _perf_counter_ns()
    return (end_ns - start_ns) / 1e9, value


def _percentile(ordered: List[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) on sorted data."""
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def statistics(samples: List[float]) -> Dict[str, float]:
    """median, mean, min, p10, p90 (seconds) and the relative sample standard deviation."""
    ordered = sorted(samples)
    n = len(ordered)
    mean = math.fsum(ordered) / n
    variance = math.fsum((s - mean) ** 2 for s in ordered) / (n - 1) if n > 1 else 0.0
    return {"median_s": _percentile(ordered, 0.5), "mean_s": mean, "min_s": ordered[0],
            "p10_s": _percentile(ordered, 0.1), "p90_s": _percentile(ordered, 0.9),
            "rel_std": math.sqrt(variance) / mean if mean > 0 else 0.0}


class _Running:
    """Running count, sum and relative standard deviation (Welford), O(1) per sample."""

    def __init__(self):
        self.n = 0
        self.total = 0.0
        self._mean = 0.0
        self._m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        delta = x - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (x - self._mean)

    def rel_std(self) -> float:
        if self.n < 2 or self._mean <= 0:
            return math.inf
        return math.sqrt(self._m2 / (self.n - 1)) / self._mean


def measure(sampler: Callable[[], float], spec: TimingSpec, clock: str,
            now: Callable[[], float] = time.monotonic,
            keep: Optional[Callable[[], bool]] = None,
            after_warmup: Optional[Callable[[], None]] = None) -> Dict[str, Any]:
    """Warm-up, then samples until the stopping rule; returns the protocol's ``timing`` object.

    Warm-up calls the sampler at least once and until ``warmup_seconds`` of wall time pass. Then:
    stop with "noise" once at least ``min_samples`` samples and ``min_seconds`` of summed sample
    time are in and the relative standard deviation is below ``target_rel_std``; with "min" at
    that point when the noise target is off (0); with "timeout" when ``max_seconds`` of wall time
    (from the end of the warm-up) have passed, whatever has been collected (at least one sample).
    ``keep``, when given, is asked after every sample whether to keep it (a throttled sample is
    not kept; ``discarded`` counts them; at the timeout the last sample is kept so that there is
    one). ``after_warmup`` runs once between warm-up and sampling. Exceptions from the sampler
    propagate.
    """
    warm_start = now()
    sampler()
    while now() - warm_start < spec.warmup_seconds:
        sampler()
    if after_warmup is not None:
        after_warmup()
    samples: List[float] = []
    running = _Running()
    started = now()
    stopped_by: Optional[str] = None
    discarded = 0
    while stopped_by is None:
        seconds = sampler()
        if keep is not None and not keep() and (samples or now() - started < spec.max_seconds):
            discarded += 1
            if now() - started >= spec.max_seconds and samples:
                stopped_by = "timeout"
            continue
        samples.append(seconds)
        running.add(seconds)
        minimums = running.n >= spec.min_samples and running.total >= spec.min_seconds
        if minimums and spec.target_rel_std <= 0:
            stopped_by = "min"
        elif minimums and running.rel_std() < spec.target_rel_std:
            stopped_by = "noise"
        elif now() - started >= spec.max_seconds:
            stopped_by = "timeout"
    result: Dict[str, Any] = {"clock": clock}
    result.update(statistics(samples))
    result["samples"] = len(samples)
    result["stopped_by"] = stopped_by
    if keep is not None:
        result["discarded"] = discarded
    return result


# The side figures of the cuda protocol are short passes: enough samples for a median.
_SIDE_SPEC = TimingSpec(min_samples=10, min_seconds=0.02, max_seconds=3.0, target_rel_std=0.0,
                        warmup_seconds=0.0)
_GRAPH_SPEC = TimingSpec(min_samples=3, min_seconds=0.0, max_seconds=3.0, target_rel_std=0.0,
                         warmup_seconds=0.0)

# Side-stream cross-check: the device-synchronised host time, less the host clock's floor, may
# exceed the warm event time by launch overheads; beyond twice the event time plus 50 us, work
# that the events did not see ran somewhere (EVAL-PROTOCOL timing rule 3).
_SIDE_STREAM_FACTOR = 2.0
_SIDE_STREAM_SLACK_S = 50e-6
_THROTTLE_FRACTION = 0.75


def measure_on(device: torch.device, sampler: Callable[[], float], spec: TimingSpec,
               clock: str) -> Dict[str, Any]:
    """``measure`` with the device's full protocol: on cuda devices (clock ``events-cold``) the
    cold headline with throttled samples discarded, then the ``warm``, ``host_sync`` and
    ``graph_replay`` side figures and the side-stream flag; elsewhere plain ``measure``."""
    if device.type != "cuda" or clock != "events-cold":
        return measure(sampler, spec, clock)
    from kforge_runner import cuda_timing
    cuda_clock = cuda_timing.clock_for_device(device)
    clocks: List[int] = []

    def keep() -> bool:
        mhz = cuda_clock.last_sm_mhz
        if mhz and cuda_clock.nvml.max_sm_mhz and mhz < _THROTTLE_FRACTION * cuda_clock.nvml.max_sm_mhz:
            return False
        if mhz:
            clocks.append(mhz)
        return True

    def reset_spin() -> None:
        cuda_clock.spin_s = cuda_timing.MIN_SPIN_S

    try:
        cuda_clock.mode = "cold"
        result = measure(sampler, spec, clock, keep=keep, after_warmup=reset_spin)
        result["cold"] = cuda_clock.describe()
        result["sm_clock_mhz"] = sorted(clocks)[len(clocks) // 2] if clocks else None
        cuda_clock.mode = "warm"
        warm = measure(sampler, _SIDE_SPEC, "events-warm")
        result["warm"] = {"clock": "events-warm", "median_s": warm["median_s"],
                          "samples": warm["samples"]}
        cuda_clock.mode = "host"
        host = measure(sampler, _SIDE_SPEC, "host-sync")
        excess = host["median_s"] - cuda_clock.launch_floor_s
        flagged = excess > _SIDE_STREAM_FACTOR * warm["median_s"] + _SIDE_STREAM_SLACK_S
        result["host_sync"] = {"clock": "host-sync", "median_s": host["median_s"],
                               "floor_s": cuda_clock.launch_floor_s,
                               "samples": host["samples"], "side_stream_suspect": flagged}
        cuda_clock.mode = "graph"
        try:
            graph = measure(sampler, _GRAPH_SPEC, "graph-replay")
            result["graph_replay"] = {"clock": "graph-replay", "median_s": graph["median_s"],
                                      "samples": graph["samples"]}
        except Exception as e:  # a call that cannot be captured has no graph figure
            torch.cuda.synchronize(device)
            result["graph_replay"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    finally:
        cuda_clock.mode = "cold"
    return result
