"""The stream or queue a native candidate receives is the one its backend names in the job.

A SYCL kernel follows the shipped example: it takes `stream` as a `sycl::queue*` and refuses a
NULL one. The runner must hand it the current XPU stream's queue, not NULL (the handle CUDA gets
on a CPU device). No XPU here: torch.xpu's current stream is replaced by one whose queue address
the kernel checks.
"""

import shutil
import subprocess
import sys
import types

import pytest
import torch

from conftest import ABI_DIR, RUNNER_ROOT, write_file

sys.path.insert(0, RUNNER_ROOT)
from kforge_runner import protocol  # noqa: E402
from kforge_runner.native import NativeCandidate, stream_argument  # noqa: E402

QUEUE_ADDRESS = 0x5EC1000

# Copies its input when `stream` is the expected queue address; returns 1 on a NULL stream, as the
# shipped SYCL example does, and 2 on another one.
QUEUE_CHECKING_CPP = f"""\
#include <stdint.h>
#include <string.h>
#include "kforge_kernel.h"

extern "C" int kforge_forward(const kforge_tensor* in, int n_in, kforge_tensor* out, int n_out,
                              void* stream) {{
  if (stream == 0) return 1;
  if ((uintptr_t)stream != {QUEUE_ADDRESS}u) return 2;
  memcpy(out[0].data, in[0].data, sizeof(float) * kforge_numel(&in[0]));
  return 0;
}}
"""


class _FakeXpuStream:
    sycl_queue = QUEUE_ADDRESS


@pytest.fixture
def fake_xpu(monkeypatch):
    xpu = types.SimpleNamespace(current_stream=lambda device=None: _FakeXpuStream())
    monkeypatch.setattr(torch, "xpu", xpu, raising=False)


def _compile(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    src = write_file(tmp_path / "queue.cpp", QUEUE_CHECKING_CPP)
    so = str(tmp_path / "queue.so")
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-I", ABI_DIR, src, "-o", so], check=True)
    return so


def test_sycl_candidate_receives_the_queue(tmp_path, fake_xpu):
    candidate = NativeCandidate(_compile(tmp_path), torch.device("cpu"), [], "sycl-queue")
    x = torch.randn(16)
    outputs, unchanged, problems = candidate.run(
        [x], [protocol.OutputSpec(dtype="float32", shape=[16])])
    assert problems == []
    assert unchanged
    assert torch.equal(outputs[0], x)


def test_stream_arguments_follow_the_handle(fake_xpu):
    cpu = torch.device("cpu")
    assert stream_argument(cpu, "sycl-queue") == QUEUE_ADDRESS
    assert stream_argument(cpu, "none") is None
    assert stream_argument(cpu, None) is None  # a job without a handle: NULL off CUDA devices


def test_job_names_its_stream_handle_and_any_backend():
    spec = protocol._parse_candidate_spec({"candidate": {
        "kind": "native", "backend": "sycl", "artifact": "/x.so", "stream_handle": "sycl-queue"}})
    assert spec.stream_handle == "sycl-queue"
    # A programming model the runner has never heard of needs no runner change.
    spec = protocol._parse_candidate_spec({"candidate": {
        "kind": "module", "backend": "helion", "source_file": "/k.py"}})
    assert spec.backend == "helion" and spec.stream_handle is None
    with pytest.raises(protocol.JobError, match="stream_handle"):
        protocol._parse_candidate_spec({"candidate": {
            "kind": "native", "backend": "sycl", "artifact": "/x.so", "stream_handle": "queue"}})
