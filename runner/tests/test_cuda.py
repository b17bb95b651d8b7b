"""CUDA paths: reference on the GPU, poisoned freed memory, Triton module and nvcc-built native
candidates on the current stream. Skipped (with the reason) where no CUDA device is present."""

import os
import shutil
import subprocess

import pytest
import torch

from conftest import ABI_DIR, candidate_job, read_output, reference_job, run_runner, write_file

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

RELU_TASK = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size, dim = 64, 1000

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def cuda_reference(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cuda_relu")
    task = write_file(workdir / "relu.py", RELU_TASK)
    job = reference_job(task, workdir, device="cuda:0",
                        trials=[{"seed": s, "distribution": "task"} for s in (1, 2, 3)])
    run = run_runner(job, workdir)
    assert run.result["status"] == "ok", run.result
    assert run.result["environment"]["device_name"] == torch.cuda.get_device_name(0)
    return job, run.result


def _run(tmp_path, reference, candidate):
    job, ref = reference
    return run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path)


def _outputs(tmp_path, result):
    return [read_output(str(tmp_path / "cand" / f"trial_{t['index']}"), t["outputs"][0])
            for t in result["trials"]]


def _expected(reference):
    job, ref = reference
    return [read_output(os.path.join(job["outputs_dir"], f"trial_{t['index']}"), t["outputs"][0])
            for t in ref["trials"]]


def test_uninitialised_output_reads_poison_not_stale_memory(tmp_path, cuda_reference):
    source = write_file(tmp_path / "lazy.py", """\
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x):
                return torch.empty_like(x)  # never written: must come back as NaN
        """)
    run = _run(tmp_path, cuda_reference, {"kind": "module", "backend": "kernelbench",
                                          "source_file": source})
    assert run.result["status"] == "ok", run.result
    assert all(bool(y.isnan().all()) for y in _outputs(tmp_path, run.result))


def test_cpu_output_for_cuda_task_is_a_problem(tmp_path, cuda_reference):
    source = write_file(tmp_path / "cpu.py", """\
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x):
                return torch.relu(x.cpu())
        """)
    run = _run(tmp_path, cuda_reference, {"kind": "module", "backend": "kernelbench",
                                          "source_file": source})
    assert run.result["trials"][0]["problems"] == ["output 0: on device cpu, expected cuda:0"]


def test_triton_module_matches_reference(tmp_path, cuda_reference):
    pytest.importorskip("triton")
    source = write_file(tmp_path / "relu_triton.py", """\
        import torch
        import torch.nn as nn
        import triton
        import triton.language as tl

        @triton.jit
        def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)

        class ModelNew(nn.Module):
            def forward(self, x):
                y = torch.empty_like(x)
                n = x.numel()
                relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
                return y
        """)
    run = _run(tmp_path, cuda_reference, {"kind": "module", "backend": "triton",
                                          "source_file": source})
    assert run.result["status"] == "ok", run.result
    for got, want in zip(_outputs(tmp_path, run.result), _expected(cuda_reference)):
        assert torch.equal(got, want)


RELU_CU = """\
    #include <cuda_runtime.h>
    #include "kforge_kernel.h"

    __global__ void relu(const float* x, float* y, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
    }

    extern "C" int kforge_forward(const kforge_tensor* in, int n_in, kforge_tensor* out,
                                  int n_out, void* stream) {
      long long n = kforge_numel(&in[0]);
      relu<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
          (const float*)in[0].data, (float*)out[0].data, n);
      return cudaGetLastError() == cudaSuccess ? 0 : 6;
    }
    """


def _build_relu_so(tmp_path) -> str:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        pytest.skip("nvcc not found")
    source = write_file(tmp_path / "relu.cu", RELU_CU)
    so = str(tmp_path / "relu.so")
    subprocess.run([nvcc, "-O2", "-shared", "-Xcompiler", "-fPIC", "-I", ABI_DIR, source, "-o", so],
                   check=True)
    return so


def test_native_cuda_matches_reference(tmp_path, cuda_reference):
    so = _build_relu_so(tmp_path)
    run = _run(tmp_path, cuda_reference, {"kind": "native", "backend": "cuda", "artifact": so})
    assert run.result["status"] == "ok", run.result
    for got, want in zip(_outputs(tmp_path, run.result), _expected(cuda_reference)):
        assert torch.equal(got, want)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second GPU")
def test_native_cuda_on_the_second_gpu_runs_and_is_timed_there(tmp_path):
    """A job for cuda:1 (a bench placed it there) launches on cuda:1: the runner makes the job's
    device current. Before, the launch went to cuda:0 with cuda:1's buffers and the timing failed
    with an illegal memory access."""
    task = write_file(tmp_path / "relu.py", RELU_TASK)
    ref_job = reference_job(task, tmp_path, device="cuda:1",
                            trials=[{"seed": s, "distribution": "task"} for s in (1, 2)])
    ref = run_runner(ref_job, tmp_path)
    assert ref.result["status"] == "ok", ref.result
    job = candidate_job(ref_job, ref.result, {"kind": "native", "backend": "cuda",
                                              "artifact": _build_relu_so(tmp_path)},
                        tmp_path / "cand")
    job["timing"] = {"min_samples": 5, "min_seconds": 0.05}
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    for got, want in zip(_outputs(tmp_path, run.result), _expected((ref_job, ref.result))):
        assert torch.equal(got, want)
    timing = run.result["timing"]
    assert "error" not in timing, timing
    assert timing["median_s"] > 0, timing
