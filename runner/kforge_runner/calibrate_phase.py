"""Phase ``calibrate``: the device's measured ceilings, for the physics floor and speed of light.

Measures what the device does, not what its data sheet says: copy bandwidth (a device-to-device
copy of a buffer far larger than the last-level cache; bytes read + bytes written per second) and
the matrix rate per dtype (square matmuls, 2·n³ FLOPs per call). Each figure is the best of its
samples' medians over a few repetitions: a ceiling, not a typical value.
"""

import time
from typing import Any, Callable, Dict, List

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
