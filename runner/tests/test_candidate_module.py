"""Candidate phase for module candidates (``ModelNew`` in plain torch)."""

import os
import subprocess

import pytest
import torch

from conftest import (ABI_DIR, candidate_job, kernelbench_source, read_output, reference_job,
                      run_runner, write_file)

RELU_MODEL_NEW = """\
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
"""


def _module(tmp_path, reference, source):
    job, ref = reference[0], reference[1]
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "model_new.py", source)}
    return run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path)


def test_module_relu_matches_reference(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW)
    assert run.returncode == 0, run.log
    assert run.result["status"] == "ok", run.result
    job, ref, _ = relu_reference
    for trial, ref_trial in zip(run.result["trials"], ref["trials"]):
        assert trial["inputs_unchanged"] and trial["problems"] == []
        got = read_output(str(tmp_path / "cand" / f"trial_{trial['index']}"), trial["outputs"][0])
        want = read_output(os.path.join(job["outputs_dir"], f"trial_{trial['index']}"),
                           ref_trial["outputs"][0])
        assert torch.equal(got, want)


def test_wrong_output_dtype_is_reported_not_converted(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW.replace(
        "torch.clamp_min(x, 0.0)", "torch.relu(x).half()"))
    assert run.result["status"] == "ok"
    trial = run.result["trials"][0]
    assert trial["problems"] == ["output 0: dtype float16, expected float32"]
    assert trial["outputs"][0]["dtype"] == "float16"


def test_wrong_output_shape_and_count_are_reported(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW.replace(
        "torch.clamp_min(x, 0.0)", "(torch.relu(x).t(), x)"))
    problems = run.result["trials"][0]["problems"]
    assert problems == ["2 outputs, expected 1", "output 0: shape [64, 4], expected [4, 64]"]


def test_module_input_mutation_is_detected(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW.replace(
        "torch.clamp_min(x, 0.0)", "x.neg_().neg().relu()"))  # right output, negated input
    assert run.result["status"] == "ok"
    assert all(t["problems"] == [] for t in run.result["trials"])
    assert [t["inputs_unchanged"] for t in run.result["trials"]] == [False, False, False]


def test_syntax_error_is_compile_error(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW + "\ndef broken(:\n    pass\n")
    assert run.result["status"] == "compile_error"
    assert "SyntaxError" in run.result["diagnostics"]


def test_missing_model_new_is_compile_error(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW.replace("ModelNew", "ModelOld"))
    assert run.result["status"] == "compile_error"
    assert "does not define class ModelNew" in run.result["diagnostics"]


def test_exception_in_forward_is_runtime_error_with_candidate_frames_first(tmp_path,
                                                                          relu_reference):
    run = _module(tmp_path, relu_reference, RELU_MODEL_NEW.replace(
        "return torch.clamp_min(x, 0.0)", "return helper(x)") + "\n\ndef helper(x):\n"
        "    raise ValueError('bad block size 17')\n")
    assert run.result["status"] == "runtime_error"
    lines = run.result["diagnostics"].splitlines()
    assert lines[0] == "trial 0: ValueError: bad block size 17"
    assert lines[1].startswith("Frames in model_new.py")
    assert "in forward" in lines[2] and "in helper" in run.result["diagnostics"]
    assert len(lines) <= 61 and len(run.result["diagnostics"].encode()) <= 4096 + 20


@pytest.fixture(scope="module")
def linear_reference(tmp_path_factory):
    """A Linear + softmax task (KernelBench level 2 #66 without its dropout, which is active in
    the training mode references run in): deterministic, and it has state."""
    workdir = tmp_path_factory.mktemp("linear")
    task = write_file(workdir / "linear_softmax.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, in_features, out_features, dropout_p):
                super().__init__()
                self.matmul = nn.Linear(in_features, out_features)

            def forward(self, x):
                return torch.softmax(self.matmul(x), dim=1)

        batch_size, in_features, out_features, dropout_p = 128, 100, 50, 0.2

        def get_inputs():
            return [torch.rand(batch_size, in_features)]

        def get_init_inputs():
            return [in_features, out_features, dropout_p]
        """)
    job = reference_job(task, workdir, overrides={"batch_size": 4, "in_features": 16,
                                                  "out_features": 8})
    run = run_runner(job, workdir)
    assert run.result["status"] == "ok", run.result
    assert [e["key"] for e in run.result["state"]] == ["matmul.weight", "matmul.bias"]
    return job, run.result


LINEAR_MODEL_NEW = """\
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.LAYER = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.softmax(x @ self.LAYER.weight.t() + self.LAYER.bias, dim=1)
"""


def _max_error(tmp_path, reference, result):
    job, ref = reference
    worst = 0.0
    for trial, ref_trial in zip(result["trials"], ref["trials"]):
        got = read_output(str(tmp_path / "cand" / f"trial_{trial['index']}"), trial["outputs"][0])
        want = read_output(os.path.join(job["outputs_dir"], f"trial_{trial['index']}"),
                           ref_trial["outputs"][0])
        worst = max(worst, float((got - want).abs().max()))
    return worst


def test_reference_state_is_loaded_when_keys_match(tmp_path, linear_reference):
    # Different construction order than Model would draw different weights without the state load.
    source = LINEAR_MODEL_NEW.replace("LAYER", "matmul").replace(
        "super().__init__()", "super().__init__()\n        torch.rand(1000)")
    run = _module(tmp_path, linear_reference, source)
    assert run.result["status"] == "ok", run.result
    assert run.result["state_loaded"] is True
    assert _max_error(tmp_path, linear_reference, run.result) < 1e-6


def test_same_construction_gives_same_weights_without_state_load(tmp_path, linear_reference):
    run = _module(tmp_path, linear_reference, LINEAR_MODEL_NEW.replace("LAYER", "renamed"))
    assert run.result["status"] == "ok", run.result
    assert run.result["state_loaded"] is False
    assert _max_error(tmp_path, linear_reference, run.result) < 1e-6


def test_module_scalars_are_python_numbers_and_native_get_float64(tmp_path):
    task = write_file(tmp_path / "scale.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, s, k):
                return x * s + k

        def get_inputs():
            return [torch.rand(3, 5), 2.5, 3]

        def get_init_inputs():
            return []
        """)
    job = reference_job(task, tmp_path)
    ref = run_runner(job, tmp_path).result
    source = """\
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, s, k):
                if type(s) is not float or type(k) is not int:
                    raise TypeError(f"scalars arrived as {type(s)}, {type(k)}")
                return x * s + k
        """
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "model_new.py", source)}
    run = run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path)
    assert run.result["status"] == "ok", run.result
    assert run.result["trials"][0]["problems"] == []

    # The same scalars reach a native kernel as 0-d float64 host tensors.
    cpp = write_file(tmp_path / "scale.cpp", """\
        #include <stdint.h>
        #include "kforge_kernel.h"
        extern "C" int kforge_forward(const kforge_tensor* in, int n_in, kforge_tensor* out,
                                      int n_out, void* stream) {
          if (n_in != 3 || in[1].dtype != kforge_float64 || in[1].ndim != 0) return 1;
          if (in[2].dtype != kforge_float64 || in[2].ndim != 0) return 2;
          const double s = *(const double*)in[1].data, k = *(const double*)in[2].data;
          const float* x = (const float*)in[0].data;
          float* y = (float*)out[0].data;
          for (int64_t i = 0; i < kforge_numel(&in[0]); ++i) y[i] = x[i] * (float)s + (float)k;
          return 0;
        }
        """)
    so = str(tmp_path / "scale.so")
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-I", ABI_DIR, cpp, "-o", so], check=True)
    native = {"kind": "native", "backend": "cpp", "artifact": so}
    run = run_runner(candidate_job(job, ref, native, tmp_path / "native"), tmp_path)
    assert run.result["status"] == "ok", run.result
    got = read_output(str(tmp_path / "native" / "trial_0"), run.result["trials"][0]["outputs"][0])
    want = read_output(os.path.join(job["outputs_dir"], "trial_0"), ref["trials"][0]["outputs"][0])
    assert torch.allclose(got, want)
