"""Protocol edges: version and job errors, tensor file round trips, result channel, error chains."""

import errno
import json
import os
import sys

import pytest
import torch

from conftest import RUNNER_ROOT, kernelbench_source, reference_job, run_runner, write_file

sys.path.insert(0, RUNNER_ROOT)
from kforge_runner import errors, protocol, tensor_files  # noqa: E402


def test_other_protocol_version_is_infra_error(tmp_path):
    run = run_runner({"protocol": 2, "phase": "reference"}, tmp_path)
    assert run.returncode == 0
    assert run.result == {"protocol": 1, "status": "infra_error",
                          "diagnostics": "protocol version 2 not supported"}


def test_malformed_job_is_infra_error_naming_the_field(tmp_path):
    task = write_file(tmp_path / "19.py", kernelbench_source(1, 19))
    job = reference_job(task, tmp_path)
    del job["init_seed"]
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "infra_error"
    assert "init_seed" in run.result["diagnostics"]


def test_reference_outputs_inside_inputs_dir_are_refused(tmp_path):
    task = write_file(tmp_path / "19.py", kernelbench_source(1, 19))
    job = reference_job(task, tmp_path)
    job["outputs_dir"] = os.path.join(job["inputs_dir"], "outputs")
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "infra_error"
    assert not os.path.exists(job["inputs_dir"])


def test_protocol_dtype_names_match_tensor_files():
    assert set(protocol.DTYPE_NAMES) == set(tensor_files.TORCH_DTYPES)


@pytest.mark.parametrize("dtype", list(tensor_files.TORCH_DTYPES.values()))
@pytest.mark.parametrize("shape", [(), (3,), (2, 0, 4), (2, 3, 5)])
def test_tensor_files_round_trip_exactly(tmp_path, dtype, shape):
    source = (torch.randn(shape, dtype=torch.float64) * 50).to(dtype)
    entry = tensor_files.write_tensor(str(tmp_path), "t", source)
    assert entry == {"name": "t", "file": "t.bin", "dtype": tensor_files.dtype_name(dtype),
                     "shape": list(shape)}
    assert os.path.getsize(tmp_path / "t.bin") == source.numel() * source.element_size()
    back = tensor_files.read_tensor(str(tmp_path), entry)
    assert back.dtype == dtype and back.shape == source.shape and torch.equal(back, source)


def test_bfloat16_file_holds_raw_bits_little_endian(tmp_path):
    value = torch.tensor([1.0, -2.0], dtype=torch.bfloat16)
    entry = tensor_files.write_tensor(str(tmp_path), "b", value)
    assert (tmp_path / "b.bin").read_bytes() == bytes([0x80, 0x3F, 0x00, 0xC0])
    assert entry["dtype"] == "bfloat16"


def test_wrong_file_size_is_refused(tmp_path):
    entry = tensor_files.write_tensor(str(tmp_path), "t", torch.zeros(4))
    entry["shape"] = [5]
    with pytest.raises(ValueError, match="holds 4 elements"):
        tensor_files.read_tensor(str(tmp_path), entry)


def test_result_channel_writes_once(tmp_path):
    read_fd, write_fd = os.pipe()
    channel = protocol.ResultChannel(write_fd)
    channel.write({"status": "ok"})
    with pytest.raises(RuntimeError):
        channel.write({"status": "ok"})
    with os.fdopen(read_fd) as f:
        assert json.loads(f.read()) == {"protocol": 1, "status": "ok"}


def test_classification_follows_causes_and_errnos():
    try:
        try:
            raise OSError(errno.EROFS, "Read-only file system")
        except OSError as inner:
            raise RuntimeError("could not cache kernel") from inner
    except RuntimeError as e:
        assert errors.classify(e) == "sandbox_violation"
    assert errors.classify(BlockingIOError(errno.EAGAIN, "fork")) == "resource_limit"
    cuda_oom = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert errors.classify(cuda_oom) == "out_of_memory"
    assert errors.classify(SyntaxError("x"), errors.LoadStage.LOAD) == "compile_error"
    assert errors.classify(SyntaxError("x"), errors.LoadStage.RUN) == "runtime_error"
    assert errors.classify(ValueError("x")) == "runtime_error"


def test_diagnostics_are_bounded():
    try:
        raise ValueError("line\n" * 500)
    except ValueError as e:
        text = errors.format_diagnostics(e, context="trial 0")
    assert text.startswith("trial 0: ValueError: line")
    assert len(text.splitlines()) <= errors.MAX_LINES + 1
    assert len(text.encode()) <= errors.MAX_BYTES + 20
