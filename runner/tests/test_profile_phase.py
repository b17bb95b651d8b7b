"""Phase ``profile`` (PROTOCOL.md, "Phase profile"): the torch profiler around a module and a
native cpp candidate, OpenCL event records on PoCL, and malformed profile jobs."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import (ABI_DIR, POCL_PLATFORM, RUNNER_ROOT, candidate_job, run_runner, write_file)

sys.path.insert(0, RUNNER_ROOT)
from kforge_runner import protocol  # noqa: E402

MODULE_RELU = '''\
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x * 1.0)
'''

OPENCL_TWO_KERNELS = '''\
import numpy as np

SOURCE = r"""
__kernel void relu(__global const float* x, __global float* y, const int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = fmax(x[i], 0.0f);
}
__kernel void keep(__global float* y, const int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = y[i] + 0.0f;
}
"""


def launch(cl, queue, program, inputs, outputs):
    n = outputs[0].numel
    program.relu(queue, (n,), None, inputs[0].buf, outputs[0].buf, np.int32(n))
    kernel = program.keep
    kernel.set_args(outputs[0].buf, np.int32(n))
    cl.enqueue_nd_range_kernel(queue, kernel, (n,), None)
'''

RELU_CPP = r"""
#include "kforge_kernel.h"
extern "C" int kforge_forward(const kforge_tensor* in, int ni, kforge_tensor* out, int no,
                              void* stream) {
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < kforge_numel(&in[0]); ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  return 0;
}
"""


def _profile_job(reference, candidate, workdir, tool, calls=2):
    job, ref, _ = reference
    cand = candidate_job(job, ref, candidate, workdir / "cand")
    cand["phase"] = "profile"
    cand["profile"] = {"tool": tool, "calls": calls, "output_dir": str(workdir / "cand" / "profile")}
    return cand


def test_torch_profiler_around_a_module_candidate(tmp_path, relu_reference):
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "relu_module.py", MODULE_RELU)}
    job = _profile_job(relu_reference, candidate, tmp_path, "torch", calls=3)
    run = run_runner(job, tmp_path)
    assert run.returncode == 0, run.log
    assert run.result["phase"] == "profile"
    assert run.result["status"] == "ok", run.result
    assert run.result["profile"]["files"] == ["torch.json"]
    with open(os.path.join(job["profile"]["output_dir"], "torch.json"), encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    calls = [e for e in events if e.get("name") == "kforge_call"]
    assert len(calls) == 3
    assert any(e.get("name") == "aten::relu" for e in events)


def test_torch_profiler_around_a_native_candidate(tmp_path, relu_reference):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    src = write_file(tmp_path / "relu.cpp", RELU_CPP)
    so = str(tmp_path / "relu.so")
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-I", ABI_DIR, src, "-o", so], check=True)
    job = _profile_job(relu_reference, {"kind": "native", "backend": "cpp", "artifact": so},
                       tmp_path, "torch")
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    assert os.path.exists(os.path.join(job["profile"]["output_dir"], "torch.json"))


def test_opencl_events_of_every_enqueued_kernel(tmp_path, relu_reference):
    pytest.importorskip("pyopencl")
    candidate = {"kind": "opencl", "backend": "opencl",
                 "source_file": write_file(tmp_path / "two.py", OPENCL_TWO_KERNELS),
                 "opencl_platform": POCL_PLATFORM}
    job = _profile_job(relu_reference, candidate, tmp_path, "opencl", calls=2)
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    with open(os.path.join(job["profile"]["output_dir"], "opencl.json"), encoding="utf-8") as f:
        records = json.load(f)
    assert len(records["calls"]) == 2
    for call in records["calls"]:
        assert [k["name"] for k in call["kernels"]] == ["relu", "keep"]
        for k in call["kernels"]:
            assert k["queued"] <= k["submit"] <= k["start"] <= k["end"]
        assert call["wall_ns"] > 0


def test_a_failing_call_is_the_candidates_status(tmp_path, relu_reference):
    source = MODULE_RELU.replace("return torch.relu(x * 1.0)", "raise ValueError('nope')")
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "bad.py", source)}
    run = run_runner(_profile_job(relu_reference, candidate, tmp_path, "torch"), tmp_path)
    assert run.result["status"] == "runtime_error", run.result
    assert "nope" in run.result["diagnostics"]


@pytest.mark.parametrize("profile, message", [
    ({"tool": "vtune", "output_dir": "/tmp/x"}, "job.profile.tool"),
    ({"tool": "torch", "calls": 0, "output_dir": "/tmp/x"}, "job.profile.calls"),
    ({"tool": "torch", "output_dir": "relative"}, "job.profile.output_dir"),
    ({"tool": "torch", "output_dir": "/tmp/x", "extra": 1}, "unknown field"),
])
def test_malformed_profile_jobs(relu_reference, tmp_path, profile, message):
    job = _profile_job(relu_reference, {"kind": "module", "backend": "kernelbench",
                                        "source_file": "/x.py"}, tmp_path, "torch")
    job["profile"] = profile
    with pytest.raises(protocol.JobError, match=message):
        protocol.parse_job(job)
