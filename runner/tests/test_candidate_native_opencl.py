"""Candidate phase for native cpp (a g++-built shared object) and OpenCL (PoCL) candidates."""

import os
import shutil
import subprocess

import pytest
import torch

from conftest import ABI_DIR, POCL_PLATFORM, candidate_job, read_output, run_runner, write_file

RELU_CPP = """\
#include <stdint.h>
#include "kforge_kernel.h"

extern "C" int kforge_forward(const kforge_tensor* in, int n_in, kforge_tensor* out, int n_out,
                              void* stream) {
  if (n_in != 1 || n_out != 1 || stream != 0 || in[0].dtype != kforge_float32) return 7;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  const int64_t n = kforge_numel(&in[0]);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  return 0;
}
"""

# Writes ReLU into the output and zeroes its input: the runner must notice the mutation.
MUTATING_CPP = RELU_CPP.replace(
    "y[i] = x[i] > 0.f ? x[i] : 0.f;",
    "{ y[i] = x[i] > 0.f ? x[i] : 0.f; ((float*)in[0].data)[i] = 0.f; }")

# Leaves the second half of the output unwritten: it must stay NaN.
HALF_CPP = RELU_CPP.replace("i < n;", "i < n / 2;")

FAILING_CPP = RELU_CPP.replace("return 0;\n}", "return 42;\n}")


def _compile(tmp_path, name, source):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    src = write_file(tmp_path / f"{name}.cpp", source)
    so = str(tmp_path / f"{name}.so")
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-fopenmp", "-I", ABI_DIR, src, "-o", so],
                   check=True)
    return so


def _native(tmp_path, relu_reference, name, source):
    job, ref, _ = relu_reference
    candidate = {"kind": "native", "backend": "cpp", "artifact": _compile(tmp_path, name, source)}
    return run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path), ref


def _outputs_match_reference(job, ref, result, cand_dir):
    for trial, ref_trial in zip(result["trials"], ref["trials"]):
        k = trial["index"]
        got = read_output(os.path.join(cand_dir, f"trial_{k}"), trial["outputs"][0])
        want = read_output(os.path.join(job["outputs_dir"], f"trial_{k}"), ref_trial["outputs"][0])
        assert torch.equal(got, want), f"trial {k}"


def test_native_cpp_relu_matches_reference(tmp_path, relu_reference):
    run, ref = _native(tmp_path, relu_reference, "relu", RELU_CPP)
    assert run.returncode == 0, run.log
    result = run.result
    assert result["status"] == "ok", result
    assert [t["index"] for t in result["trials"]] == [0, 1, 2]
    assert all(t["inputs_unchanged"] and t["problems"] == [] for t in result["trials"])
    assert set(result["observed_isolation"]) == {"network_blocked", "root_read_only", "user"}
    _outputs_match_reference(relu_reference[0], ref, result, str(tmp_path / "cand"))


def test_native_input_mutation_is_detected(tmp_path, relu_reference):
    run, _ = _native(tmp_path, relu_reference, "mutate", MUTATING_CPP)
    assert run.result["status"] == "ok"
    assert [t["inputs_unchanged"] for t in run.result["trials"]] == [False, False, False]


def test_native_unwritten_output_stays_nan(tmp_path, relu_reference):
    run, _ = _native(tmp_path, relu_reference, "half", HALF_CPP)
    trial = run.result["trials"][0]
    y = read_output(str(tmp_path / "cand" / "trial_0"), trial["outputs"][0]).reshape(-1)
    assert not y[: y.numel() // 2].isnan().any()
    assert y[y.numel() // 2:].isnan().all()


def test_native_nonzero_return_is_runtime_error(tmp_path, relu_reference):
    run, _ = _native(tmp_path, relu_reference, "fail", FAILING_CPP)
    assert run.result["status"] == "runtime_error"
    assert "kforge_forward returned 42" in run.result["diagnostics"]
    assert run.result["trials"] == []


def test_native_missing_symbol_is_compile_error(tmp_path, relu_reference):
    run, _ = _native(tmp_path, relu_reference, "nosym", "extern \"C\" int other() { return 0; }\n")
    assert run.result["status"] == "compile_error"
    assert "kforge_forward" in run.result["diagnostics"]


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
    program.relu(queue, (n,), None, inputs[0].buf, outputs[0].buf, np.int32(n))
'''

OPENCL_BROKEN = OPENCL_RELU.replace("fmax(x[i], 0.0f)", "fmax(x[i], undeclared_thing)")


def _opencl(tmp_path, relu_reference, source):
    pytest.importorskip("pyopencl")
    job, ref, _ = relu_reference
    candidate = {"kind": "opencl", "backend": "opencl",
                 "source_file": write_file(tmp_path / "cand.py", source),
                 "opencl_platform": POCL_PLATFORM}
    return run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path), ref


def test_opencl_relu_on_pocl_matches_reference(tmp_path, relu_reference):
    run, ref = _opencl(tmp_path, relu_reference, OPENCL_RELU)
    assert run.returncode == 0, run.log
    assert run.result["status"] == "ok", run.result
    assert all(t["inputs_unchanged"] and t["problems"] == [] for t in run.result["trials"])
    assert run.result["environment"]["opencl_device"]
    _outputs_match_reference(relu_reference[0], ref, run.result, str(tmp_path / "cand"))


def test_opencl_build_error_is_compile_error_with_build_log(tmp_path, relu_reference):
    run, _ = _opencl(tmp_path, relu_reference, OPENCL_BROKEN)
    assert run.result["status"] == "compile_error", run.result
    assert "undeclared_thing" in run.result["diagnostics"]
    assert "-cl-std=CL1.2" in run.result["diagnostics"]
    assert "Traceback" not in run.result["diagnostics"]


def test_opencl_unknown_platform_is_infra_error(tmp_path, relu_reference):
    pytest.importorskip("pyopencl")
    job, ref, _ = relu_reference
    candidate = {"kind": "opencl", "backend": "opencl",
                 "source_file": write_file(tmp_path / "cand.py", OPENCL_RELU),
                 "opencl_platform": "No Such Platform"}
    run = run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path)
    assert run.result["status"] == "infra_error"
    assert "No Such Platform" in run.result["diagnostics"]
