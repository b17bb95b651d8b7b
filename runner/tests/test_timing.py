"""Timing (PROTOCOL.md, "Timing"): the stopping rule on a fake clock, and real timed runs on the
CPU of a native cpp candidate, an OpenCL candidate on PoCL and the eager reference baseline."""

import shutil
import subprocess
import sys

import pytest

from conftest import (ABI_DIR, POCL_PLATFORM, RUNNER_ROOT, candidate_job, kernelbench_source,
                      reference_job, run_runner, write_file)

sys.path.insert(0, RUNNER_ROOT)
from kforge_runner import protocol, timing  # noqa: E402

# Short enough for CI, long enough for at least min_samples samples of a ReLU on 256K floats.
TIMING = {"min_samples": 10, "min_seconds": 0.05, "max_seconds": 2.0, "target_rel_std": 0.005,
          "warmup_seconds": 0.05}
STATS = ("median_s", "mean_s", "min_s", "p10_s", "p90_s", "rel_std")


class FakeClock:
    """``now`` for timing.measure: advances by each sample the fake sampler returns."""

    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t

    def sampler(self, values):
        values = iter(values)

        def sample():
            s = next(values)
            self.t += s
            return s
        return sample


def _spec(**kw):
    return protocol.TimingSpec(**{**TIMING, **kw})


def test_constant_samples_stop_on_noise_at_the_minimums():
    clock = FakeClock()
    out = timing.measure(clock.sampler([0.0625] * 1000),
                         _spec(min_seconds=1.25, warmup_seconds=0), "perf_counter", now=clock.now)
    assert out["stopped_by"] == "noise"
    assert out["samples"] == 20  # 1.25 s of 1/16 s samples; 10 samples alone are not enough
    assert out["median_s"] == 0.0625 and out["rel_std"] == pytest.approx(0.0)
    assert out["clock"] == "perf_counter"


def test_noisy_samples_stop_on_timeout_with_statistics():
    clock = FakeClock()
    out = timing.measure(clock.sampler([0.01, 0.03] * 1000), _spec(warmup_seconds=0),
                         "perf_counter", now=clock.now)
    assert out["stopped_by"] == "timeout"
    assert out["samples"] >= 10
    assert out["min_s"] == pytest.approx(0.01)
    assert out["p10_s"] == pytest.approx(0.01) and out["p90_s"] == pytest.approx(0.03)
    assert out["mean_s"] == pytest.approx(0.02, rel=0.05)
    assert out["rel_std"] > 0.4


def test_no_noise_target_stops_at_the_minimums():
    clock = FakeClock()
    out = timing.measure(clock.sampler([0.01, 0.03] * 1000),
                         _spec(target_rel_std=0, min_seconds=0, warmup_seconds=0),
                         "perf_counter", now=clock.now)
    assert (out["stopped_by"], out["samples"]) == ("min", 10)


def test_warmup_samples_are_not_counted():
    clock = FakeClock()
    out = timing.measure(clock.sampler([1.0] * 5 + [0.01] * 1000),
                         _spec(min_seconds=0, warmup_seconds=5), "perf_counter", now=clock.now)
    assert out["min_s"] == out["p90_s"] == pytest.approx(0.01)


def test_statistics_interpolate_percentiles():
    stats = timing.statistics([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats["median_s"], stats["min_s"], stats["mean_s"]) == (3.0, 1.0, 3.0)
    assert stats["p10_s"] == pytest.approx(1.4) and stats["p90_s"] == pytest.approx(4.6)


def test_timing_object_is_parsed_with_defaults_and_checked(tmp_path):
    job = reference_job("/abs/task.py", tmp_path)
    assert protocol.parse_job(job).timing is None
    job["timing"] = {"min_samples": 3}
    spec = protocol.parse_job(job).timing
    assert spec == protocol.TimingSpec(min_samples=3)
    for bad in ({"min_samples": 0}, {"max_seconds": -1}, {"min_seconds": "1"},
                {"unknown": 1}, [1]):
        job["timing"] = bad
        with pytest.raises(protocol.JobError):
            protocol.parse_job(job)


def test_bad_timing_object_is_infra_error(tmp_path):
    job = reference_job("/abs/task.py", tmp_path)
    job["timing"] = {"min_samples": "ten"}
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "infra_error"
    assert "job.timing.min_samples" in run.result["diagnostics"]


RELU_CPP = """\
#include <stdint.h>
#include "kforge_kernel.h"

extern "C" int kforge_forward(const kforge_tensor* in, int n_in, kforge_tensor* out, int n_out,
                              void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != kforge_float32) return 7;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  const int64_t n = kforge_numel(&in[0]);
  for (int repeat = 0; repeat < REPEATS; ++repeat) {
#pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  }
  return 0;
}
"""

OPENCL_RELU = '''\
import numpy as np

SOURCE = r"""
__kernel void relu(__global const float* x, __global float* y, const int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = fmax(x[i], 0.0f);
}
"""


def launch(cl, queue, program, inputs, outputs):
    n = outputs[0].numel
    for _ in range(REPEATS):
        program.relu(queue, (n,), None, inputs[0].buf, outputs[0].buf, np.int32(n))
'''


@pytest.fixture(scope="module")
def big_relu_reference(tmp_path_factory):
    """Reference phase of KernelBench level 1 #19 (ReLU) on 64 x 4096 floats, timed."""
    workdir = tmp_path_factory.mktemp("relu_timed")
    task = write_file(workdir / "19_ReLU.py", kernelbench_source(1, 19))
    job = reference_job(task, workdir, overrides={"batch_size": 64, "dim": 4096})
    job["timing"] = TIMING
    run = run_runner(job, workdir)
    assert run.returncode == 0, run.log
    assert run.result["status"] == "ok", run.result
    return job, run.result


def _assert_stats(t, clock):
    assert "error" not in t, t
    assert t["clock"] == clock
    assert t["samples"] >= 10
    assert t["stopped_by"] in timing.STOPPED_BY
    assert t["median_s"] > 0
    assert t["min_s"] <= t["p10_s"] <= t["median_s"] <= t["p90_s"]
    assert all(isinstance(t[k], float) for k in STATS)


def test_reference_phase_times_the_eager_baseline(big_relu_reference):
    _, result = big_relu_reference
    assert result["timing"]["baseline"] == "eager"
    _assert_stats(result["timing"], "perf_counter")


def test_reference_phase_without_timing_reports_none(relu_reference):
    _, result, _ = relu_reference
    assert "timing" not in result


def _timed_candidate(tmp_path, reference, candidate, name):
    job, ref = reference
    cand = candidate_job(job, ref, candidate, tmp_path / name)
    cand["timing"] = TIMING
    run = run_runner(cand, tmp_path)
    assert run.returncode == 0, run.log
    assert run.result["status"] == "ok", run.result
    return run.result


def _native(tmp_path, repeats):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    src = write_file(tmp_path / f"relu{repeats}.cpp", RELU_CPP)
    so = str(tmp_path / f"relu{repeats}.so")
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-fopenmp", f"-DREPEATS={repeats}",
                    "-I", ABI_DIR, src, "-o", so], check=True)
    return {"kind": "native", "backend": "cpp", "artifact": so}


def test_native_cpp_timing_tells_slower_from_faster(tmp_path, big_relu_reference):
    fast = _timed_candidate(tmp_path, big_relu_reference, _native(tmp_path, 1), "fast")
    slow = _timed_candidate(tmp_path, big_relu_reference, _native(tmp_path, 20), "slow")
    _assert_stats(fast["timing"], "perf_counter")
    _assert_stats(slow["timing"], "perf_counter")
    assert slow["timing"]["median_s"] > fast["timing"]["median_s"]


def _opencl(tmp_path, repeats):
    pytest.importorskip("pyopencl")
    source = OPENCL_RELU.replace("REPEATS", str(repeats))
    return {"kind": "opencl", "backend": "opencl",
            "source_file": write_file(tmp_path / f"relu{repeats}.py", source),
            "opencl_platform": POCL_PLATFORM}


def test_opencl_timing_on_pocl_tells_slower_from_faster(tmp_path, big_relu_reference):
    fast = _timed_candidate(tmp_path, big_relu_reference, _opencl(tmp_path, 1), "fast")
    slow = _timed_candidate(tmp_path, big_relu_reference, _opencl(tmp_path, 20), "slow")
    # On a CPU device the candidate is timed by the eager baseline's clock (perf_counter).
    _assert_stats(fast["timing"], "perf_counter")
    _assert_stats(slow["timing"], "perf_counter")
    assert slow["timing"]["median_s"] > fast["timing"]["median_s"]


def test_candidate_that_fails_while_timed_keeps_its_status(tmp_path, big_relu_reference):
    # Correct in the trials, raises from the 7th call on (during timing): status stays ok.
    source = OPENCL_RELU.replace("REPEATS", "1").replace(
        "def launch(cl, queue, program, inputs, outputs):",
        "CALLS = [0]\n\n\ndef launch(cl, queue, program, inputs, outputs):\n"
        "    CALLS[0] += 1\n"
        "    if CALLS[0] > 6:\n"
        "        raise RuntimeError('tired of being timed')")
    pytest.importorskip("pyopencl")
    candidate = {"kind": "opencl", "backend": "opencl",
                 "source_file": write_file(tmp_path / "tired.py", source),
                 "opencl_platform": POCL_PLATFORM}
    result = _timed_candidate(tmp_path, big_relu_reference, candidate, "tired")
    assert set(result["timing"]) == {"error"}
    assert "tired of being timed" in result["timing"]["error"]
    assert all(t["inputs_unchanged"] for t in result["trials"])


def test_candidate_without_timing_reports_none(tmp_path, big_relu_reference):
    job, ref = big_relu_reference
    run = run_runner(candidate_job(job, ref, _native(tmp_path, 1), tmp_path / "c"), tmp_path)
    assert run.result["status"] == "ok"
    assert "timing" not in run.result


def test_measure_discards_samples_it_is_told_not_to_keep():
    """Throttled samples (keep() false) are counted and left out of the statistics."""
    clock = FakeClock()
    inner = clock.sampler([0.01, 9.0] * 1000)
    last = []

    def sampler():
        last.append(inner())
        return last[-1]

    out = timing.measure(sampler, _spec(warmup_seconds=0, max_seconds=1e9, min_seconds=0.05),
                         "events-cold", now=clock.now, keep=lambda: last[-1] < 1.0)
    assert out["median_s"] == 0.01 and out["p90_s"] == 0.01
    assert out["samples"] == 10 and out["discarded"] == 10


def test_reference_phase_reports_the_work_of_one_call(big_relu_reference):
    """min_bytes = the input read once + the output written once (64 x 4096 floats each)."""
    _, result = big_relu_reference
    work = result["work"]
    assert work["min_bytes"] == 2 * 64 * 4096 * 4
    assert work["dtype"] == "float32"
    assert work["flops"] is None or work["flops"] >= 0


def test_compile_baseline_is_timed_or_says_why_not(tmp_path):
    import torch
    task = write_file(tmp_path / "19_ReLU.py", kernelbench_source(1, 19))
    job = reference_job(task, tmp_path, overrides={"batch_size": 8, "dim": 256})
    job["timing"] = {**TIMING, "max_seconds": 1.0}
    job["baselines"] = ["compile"]
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    compiled = run.result["baselines"]["compile"]
    assert compiled["baseline"] == "compile"
    if not hasattr(torch, "compile"):
        assert "has no torch.compile" in compiled["error"]
    elif "error" not in compiled:
        _assert_stats(compiled, "perf_counter")


def test_unknown_baseline_is_a_bad_job(tmp_path):
    job = reference_job("/abs/task.py", tmp_path)
    job["timing"] = TIMING
    job["baselines"] = ["tensorrt"]
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "infra_error"
    assert "job.baselines" in run.result["diagnostics"]


def test_calibrate_phase_measures_the_cpu(tmp_path):
    run = run_runner({"protocol": 1, "phase": "calibrate", "device": "cpu"}, tmp_path)
    assert run.returncode == 0, run.log
    result = run.result
    assert result["phase"] == "calibrate" and result["status"] == "ok", result
    assert result["copy"]["bytes_per_s"] > 1e8  # any machine copies more than 100 MB/s
    assert result["matmul"]["float32"]["flops_per_s"] > 1e8
    assert result["environment"]["device_name"]
