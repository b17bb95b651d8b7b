"""Timing a call after the correctness trials (PROTOCOL.md, "Timing").

A *sampler* is a zero-argument function that prepares one call (fresh input clones, output
buffers: outside the timed region), makes it between the two clock readings, and returns the
seconds measured. ``measure`` warms up, then samples until the stopping rule is met, and returns
the protocol's statistics. Clocks:

- ``perf_counter``: ``time.perf_counter_ns`` around the call (cpu devices);
- ``events-warm``: a ``torch.cuda.Event`` pair around the call on the current stream, the device
  synchronised after each sample; caches stay warm between samples (cuda devices);
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


def clock_for(device: torch.device) -> str:
    return "events-warm" if device.type == "cuda" else "perf_counter"


def time_call(device: torch.device, call: Callable[[], Any]) -> Tuple[float, Any]:
    """Runs ``call()`` once between two clock readings; returns (seconds, what it returned)."""
    if device.type == "cuda":
        stream = torch.cuda.current_stream(device)
        torch.cuda.synchronize(device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        value = call()
        end.record(stream)
        torch.cuda.synchronize(device)
        return start.elapsed_time(end) / 1e3, value
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
            now: Callable[[], float] = time.monotonic) -> Dict[str, Any]:
    """Warm-up, then samples until the stopping rule; returns the protocol's ``timing`` object.

    Warm-up calls the sampler at least once and until ``warmup_seconds`` of wall time pass. Then:
    stop with "noise" once at least ``min_samples`` samples and ``min_seconds`` of summed sample
    time are in and the relative standard deviation is below ``target_rel_std``; with "min" at
    that point when the noise target is off (0); with "timeout" when ``max_seconds`` of wall time
    (from the end of the warm-up) have passed, whatever has been collected (at least one sample).
    Exceptions from the sampler propagate.
    """
    warm_start = now()
    sampler()
    while now() - warm_start < spec.warmup_seconds:
        sampler()
    samples: List[float] = []
    running = _Running()
    started = now()
    stopped_by: Optional[str] = None
    while stopped_by is None:
        seconds = sampler()
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
    return result
