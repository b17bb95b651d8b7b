"""Phase ``calibrate``: the device's measured ceilings, for the physics floor and speed of light.

Measures what the device does, not what its data sheet says: copy bandwidth (a device-to-device
copy of a buffer far larger than the last-level cache; bytes read + bytes written per second) and
the matrix rate per dtype (square matmuls, 2·n³ FLOPs per call). Each figure is the best of its
samples' medians over a few repetitions: a ceiling, not a typical value.

On a CPU, which has no cache flush between timed calls, a working set that fits in a cache is
read from it: the phase also measures the copy rate of each data cache level (``cache_levels``,
from /sys/devices/system/cpu/cpu0/cache), with a working set of half the level's capacity summed
over the instances the runner's cores use, and the memory's with the all-thread copy of 256 MB.
Each level is credited with the larger of the all-thread copy rate and the one-core rate times
the cores (a ceiling: no core moves data faster than its own load and store units allow, and a
loaded machine's all-thread figure is far below it); the cost of one copy call is measured on an
empty copy and subtracted. A level whose copies that cost hides has no rate (null).
"""

import math
import os
import time
from typing import Any, Callable, Dict, List, Optional

import torch

from kforge_runner import environment, errors
from kforge_runner.protocol import CalibrateJob

_REPEATS = 15


def _median(values: List[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _seconds_per_call(device: torch.device, call: Callable[[], Any]) -> float:
    """Median seconds of ``call`` over _REPEATS after two warm-up calls (events on cuda)."""
    for _ in range(2):
        call()
    samples = []
    for _ in range(_REPEATS):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize(device)
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            started = time.perf_counter_ns()
            call()
            samples.append((time.perf_counter_ns() - started) / 1e9)
    return _median(samples)


def _copy_bandwidth(device: torch.device) -> Dict[str, Any]:
    nbytes = 2 * 2**30 if device.type == "cuda" else 256 * 2**20
    source = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    seconds = _seconds_per_call(device, lambda: target.copy_(source))
    return {"bytes_per_s": 2 * nbytes / seconds, "buffer_bytes": nbytes, "seconds": seconds}


_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


def _size_bytes(text: str) -> Optional[int]:
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        if text and text[-1] in units:
            return int(text[:-1]) * units[text[-1]]
        return int(text)
    except ValueError:
        return None


def _cpu_count(cpu_list: str) -> int:
    count = 0
    for part in cpu_list.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            count += int(high) - int(low) + 1
        elif part:
            count += 1
    return max(count, 1)


def cache_levels(cores: int) -> List[Dict[str, Any]]:
    """The data caches of cpu0 (L1d, L2, L3 ...): name, per-instance bytes, cores per instance,
    and the capacity summed over the instances ``cores`` cores use; [] where sysfs says nothing."""
    levels = []
    try:
        entries = sorted(e for e in os.listdir(_CACHE_DIR) if e.startswith("index"))
    except OSError:
        return []
    for entry in entries:
        def read(name: str) -> str:
            with open(os.path.join(_CACHE_DIR, entry, name), encoding="ascii") as f:
                return f.read().strip()
        try:
            kind, level, size = read("type"), int(read("level")), _size_bytes(read("size"))
            shared = _cpu_count(read("shared_cpu_list"))
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not size:
            continue
        instances = max(1, math.ceil(cores / shared))
        levels.append({"name": f"L{level}{'d' if kind == 'Data' else ''}", "instance_bytes": size,
                       "cores_per_instance": shared, "bytes": size * instances})
    return sorted(levels, key=lambda level: level["bytes"])


def _copy_loop_seconds(source: torch.Tensor, target: torch.Tensor, calls: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(calls):
        target.copy_(source)
    return (time.perf_counter_ns() - started) / 1e9


def _cpu_copy_rate(working_set: int, threads: int) -> Optional[float]:
    """Bytes read + written per second of a copy whose source and target together are
    ``working_set`` bytes, on ``threads`` threads: loops of copies long enough to time, the best
    of _REPEATS, less the best of as many loops of one-element copies (the call's own cost).
    None when that cost hides the copy (under a tenth of the loop is left)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        source = torch.ones(max(working_set // 8, 1), dtype=torch.float32)
        target = torch.empty_like(source)
        empty_source, empty_target = torch.ones(1), torch.empty(1)
        calls = 1
        while _copy_loop_seconds(source, target, calls) < 2e-3 and calls < 1 << 20:
            calls *= 2
        loop = min(_copy_loop_seconds(source, target, calls) for _ in range(_REPEATS))
        overhead = min(_copy_loop_seconds(empty_source, empty_target, calls)
                       for _ in range(_REPEATS))
        if loop - overhead < 0.1 * loop:
            return None
        return 2 * source.numel() * 4 * calls / (loop - overhead)
    finally:
        torch.set_num_threads(previous)


def _cpu_cache_rates() -> List[Dict[str, Any]]:
    """Each data cache level with ``copy_bytes_per_s`` (null when the level could not be
    measured: working sets that fit it get no memory floor)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = max(cores or 1, 1)
    out = []
    for level in cache_levels(cores):
        working_set = level["bytes"] // 2
        all_threads = _cpu_copy_rate(working_set, cores)
        one_core = _cpu_copy_rate(min(working_set, level["instance_bytes"] // 2), 1)
        # No core moves data faster than its own load and store units allow, at any level: every
        # core at the one-core rate is a ceiling of what all of them do.
        rates = [r for r in (all_threads, one_core * cores if one_core else None) if r]
        out.append(dict(level, working_set_bytes=working_set,
                        copy_bytes_per_s=max(rates) if rates else None,
                        all_threads_bytes_per_s=all_threads, one_core_bytes_per_s=one_core))
    return out


def _matmul_rate(device: torch.device, dtype: torch.dtype, tf32: bool) -> Dict[str, Any]:
    n = 8192 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        seconds = _seconds_per_call(device, lambda: torch.matmul(a, b))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return {"flops_per_s": 2 * n**3 / seconds, "n": n, "seconds": seconds}


def run(job: CalibrateJob) -> Dict[str, Any]:
    started = time.monotonic()
    device = torch.device(job.device)
    result: Dict[str, Any] = {"phase": "calibrate", "status": errors.STATUS_OK, "diagnostics": "",
                              "environment": environment.describe(device)}
    try:
        result["copy"] = _copy_bandwidth(device)
        if device.type == "cpu":
            result["cache_levels"] = _cpu_cache_rates()
            one_core = _cpu_copy_rate(result["copy"]["buffer_bytes"] * 2, 1)
            cores = max(len(os.sched_getaffinity(0)), 1)
            if one_core and one_core * cores > result["copy"]["bytes_per_s"]:
                result["copy"]["all_threads_bytes_per_s"] = result["copy"]["bytes_per_s"]
                result["copy"]["bytes_per_s"] = one_core * cores
        rates = {"float32": _matmul_rate(device, torch.float32, tf32=False)}
        if device.type == "cuda":
            rates["tf32"] = _matmul_rate(device, torch.float32, tf32=True)
            rates["bfloat16"] = _matmul_rate(device, torch.bfloat16, tf32=False)
            rates["float16"] = _matmul_rate(device, torch.float16, tf32=False)
        result["matmul"] = rates
    except Exception as e:
        result["status"] = errors.STATUS_INFRA_ERROR
        result["diagnostics"] = errors.format_diagnostics(e, [], "calibration")
    result["seconds"] = time.monotonic() - started
    return result
