"""Faults raised by candidate code: status classification; forked children kept from the result.

The PermissionError and fork-EAGAIN cases need an unprivileged process (root may write / and
ignores RLIMIT_NPROC): when the tests run as root, the runner is started as uid/gid 65534 on a
world-readable copy of the reference.
"""

import os
import shutil
import socket
import tempfile

import pytest

from conftest import candidate_job, kernelbench_source, reference_job, run_runner, write_file

MODEL_NEW = """\
import errno
import os
import resource
import socket

import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        {body}
        return torch.relu(x)
"""


def _module(tmp_path, reference, body, **kwargs):
    job, ref = reference[0], reference[1]
    source = MODEL_NEW.replace("{body}", body)
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(os.path.join(str(tmp_path), "model_new.py"), source)}
    out_dir = os.path.join(str(tmp_path), "cand")
    os.makedirs(out_dir, exist_ok=True)
    os.chmod(out_dir, 0o777)
    return run_runner(candidate_job(job, ref, candidate, out_dir), tmp_path, **kwargs)


def test_memory_error_is_out_of_memory(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, "bytearray(1 << 62)")
    assert run.result["status"] == "out_of_memory", run.result
    assert "MemoryError" in run.result["diagnostics"]


def test_refused_connection_is_sandbox_violation(tmp_path, relu_reference):
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = _module(tmp_path, relu_reference,
                  f"socket.create_connection(('127.0.0.1', {port}), timeout=2)")
    assert run.result["status"] == "sandbox_violation", run.result
    assert "ConnectionRefusedError" in run.result["diagnostics"]


def test_forked_child_never_writes_a_result(tmp_path, relu_reference):
    marker = os.path.join(str(tmp_path), "child_status")
    body = f"""pid = os.fork()
        if pid == 0:
            return x  # the child returns into runner code
        _, status = os.waitpid(pid, 0)
        with open({marker!r}, "w") as f:
            f.write(str(os.waitstatus_to_exitcode(status)))"""
    run = _module(tmp_path, relu_reference, body)
    assert run.returncode == 0, run.log
    assert run.result["status"] == "ok", run.result  # run_runner asserts a single document
    with open(marker) as f:
        assert f.read() == "70"


@pytest.fixture(scope="module")
def shared_reference():
    """A ReLU reference in a world-readable directory; Popen arguments for an unprivileged run."""
    workdir = tempfile.mkdtemp(prefix="kforge-runner-test-")
    os.chmod(workdir, 0o755)
    task = write_file(os.path.join(workdir, "19_ReLU.py"), kernelbench_source(1, 19))
    job = reference_job(task, workdir, overrides={"batch_size": 4, "dim": 64})
    run = run_runner(job, workdir)
    assert run.result["status"] == "ok", run.result
    kwargs = {}
    if os.geteuid() == 0:
        kwargs = {"user": 65534, "group": 65534, "extra_groups": [],
                  "env_extra": {"HOME": workdir}}
    yield job, run.result, workdir, kwargs
    shutil.rmtree(workdir, ignore_errors=True)


def _unprivileged_case(shared_reference, name, body):
    job, ref, workdir, kwargs = shared_reference
    case_dir = os.path.join(workdir, name)
    os.makedirs(case_dir)
    os.chmod(case_dir, 0o777)
    return _module(case_dir, (job, ref), body, **kwargs)


def test_permission_error_writing_root_is_sandbox_violation(shared_reference):
    run = _unprivileged_case(shared_reference, "write_root",
                             "open('/kforge_runner_test_escape', 'w').write('x')")
    assert not os.path.exists("/kforge_runner_test_escape")
    assert run.result["status"] == "sandbox_violation", run.result
    assert "PermissionError" in run.result["diagnostics"]


def test_fork_eagain_is_resource_limit(shared_reference):
    body = """resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # as a sandbox's pids limit would
        os.fork()"""
    run = _unprivileged_case(shared_reference, "fork_limit", body)
    assert run.result["status"] == "resource_limit", run.result
    assert "BlockingIOError" in run.result["diagnostics"]


def test_runner_failures_caused_by_the_candidate_are_its_status():
    from kforge_runner import errors
    import errno as e
    assert errors.classify_runner_failure(OSError(e.EMFILE, "Too many open files")) == \
        "resource_limit"
    assert errors.classify_runner_failure(OSError(e.ENOSPC, "No space left")) == "resource_limit"
    assert errors.classify_runner_failure(PermissionError(e.EACCES, "denied")) == \
        "sandbox_violation"
    assert errors.classify_runner_failure(MemoryError()) == "out_of_memory"
    assert errors.classify_runner_failure(ValueError("a runner bug")) is None


def test_descriptors_exhausted_by_the_candidate_are_resource_limit(tmp_path, relu_reference):
    # The call itself succeeds; the runner then cannot open the output files (was infra_error).
    body = """self.held = []
        try:
            while True:
                self.held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass"""
    run = _module(tmp_path, relu_reference, body)
    assert run.result["status"] == "resource_limit", run.result
    assert "Too many open files" in run.result["diagnostics"]


def test_scratch_made_unwritable_by_the_candidate_is_sandbox_violation(shared_reference):
    job, ref, workdir, kwargs = shared_reference
    case_dir = os.path.join(workdir, "chmod_scratch")
    out_dir = os.path.join(case_dir, "cand")
    os.makedirs(out_dir)
    os.chmod(case_dir, 0o777)
    if os.geteuid() == 0:
        os.chown(out_dir, 65534, 65534)  # the candidate's own folder, as in the sandbox
    source = MODEL_NEW.replace("{body}", f"os.chmod({out_dir!r}, 0)")
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(os.path.join(case_dir, "model_new.py"), source)}
    run = run_runner(candidate_job(job, ref, candidate, out_dir), case_dir, **kwargs)
    os.chmod(out_dir, 0o755)
    assert run.result["status"] == "sandbox_violation", run.result
    assert "Permission denied" in run.result["diagnostics"]
