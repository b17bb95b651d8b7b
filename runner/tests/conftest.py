"""Shared helpers: KernelBench task files, job documents, running the runner as a real child.

Every test starts ``python3 -m kforge_runner`` the way the orchestrator does: a pipe's write end is
passed with ``pass_fds`` and its number given as ``--result-fd``.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

RUNNER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABI_DIR = os.path.join(RUNNER_ROOT, "kforge_runner", "abi")
KERNELBENCH_DIR = os.environ.get("KFORGE_KERNELBENCH_DIR", "/work/shared/data/kernelbench")
POCL_PLATFORM = "Portable Computing Language"


class RunnerRun:
    """One finished runner process: its parsed result, exit code, and raw result/log bytes."""

    def __init__(self, result, returncode, raw, log):
        self.result = result
        self.returncode = returncode
        self.raw = raw
        self.log = log


def kernelbench_source(level: int, problem_id: int) -> str:
    path = os.path.join(KERNELBENCH_DIR, f"level{level}.jsonl")
    if not os.path.exists(path):
        pytest.skip(f"KernelBench data not found at {path}")
    with open(path, encoding="utf-8") as f:
        for line in f:
            task = json.loads(line)
            if task["problem_id"] == problem_id:
                return task["code"]
    raise LookupError(f"level {level} has no problem {problem_id}")


def write_file(path, text: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))
    return str(path)


def run_runner(job: dict, workdir, env_extra=None, **popen_kwargs) -> RunnerRun:
    """Writes ``job`` to ``workdir/job.json``, runs the runner, reads the pipe to EOF.

    Asserts that the pipe carried at most one JSON document (one line).
    """
    job_path = os.path.join(str(workdir), "job.json")
    with open(job_path, "w", encoding="utf-8") as f:
        json.dump(job, f)
    read_fd, write_fd = os.pipe()
    env = dict(os.environ)
    env["PYTHONPATH"] = RUNNER_ROOT
    env.update(env_extra or {})
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kforge_runner", "--job", job_path,
             "--result-fd", str(write_fd)],
            pass_fds=(write_fd,), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            **popen_kwargs)
    finally:
        os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        raw = pipe.read()
    log = proc.communicate(timeout=120)[0]
    lines = raw.splitlines()
    assert len(lines) <= 1, f"more than one result document: {raw!r}"
    result = json.loads(lines[0]) if lines else None
    return RunnerRun(result, proc.returncode, raw, log.decode("utf-8", "replace"))


def reference_job(task_file: str, workdir, overrides=None, trials=None, device="cpu",
                  tolerance=1e-4) -> dict:
    trials = trials or [{"seed": 987, "distribution": "task"},
                        {"seed": 654, "distribution": "normal"}]
    return {
        "protocol": 1, "phase": "reference",
        "task": {"name": os.path.basename(task_file), "source_file": task_file,
                 "overrides": overrides or {}},
        "device": device, "init_seed": 123456789, "trials": trials,
        "tolerance": {"atol": tolerance, "rtol": tolerance},
        "inputs_dir": os.path.join(str(workdir), "ref", "inputs"),
        "outputs_dir": os.path.join(str(workdir), "ref", "outputs"),
    }


def candidate_job(ref_job: dict, ref_result: dict, candidate: dict, outputs_dir) -> dict:
    return {
        "protocol": 1, "phase": "candidate", "task": ref_job["task"], "device": ref_job["device"],
        "candidate": candidate, "init_seed": ref_job["init_seed"],
        "inputs_dir": ref_job["inputs_dir"], "outputs_dir": str(outputs_dir),
        "trials": [{"index": t["index"],
                    "outputs": [{"dtype": o["dtype"], "shape": o["shape"]} for o in t["outputs"]]}
                   for t in ref_result["trials"]],
    }


def read_output(directory: str, entry: dict):
    """A written tensor file as a torch tensor (imports the runner's reader in the test process)."""
    sys.path.insert(0, RUNNER_ROOT)
    from kforge_runner import tensor_files
    return tensor_files.read_tensor(directory, entry)


@pytest.fixture(scope="session")
def relu_reference(tmp_path_factory):
    """Reference phase of KernelBench level 1 #19 (ReLU) at batch_size=4, dim=64, three trials."""
    workdir = tmp_path_factory.mktemp("relu")
    task = write_file(workdir / "19_ReLU.py", kernelbench_source(1, 19))
    job = reference_job(task, workdir, overrides={"batch_size": 4, "dim": 64},
                        trials=[{"seed": 11, "distribution": "task"},
                                {"seed": 22, "distribution": "normal"},
                                {"seed": 33, "distribution": "uniform"}])
    run = run_runner(job, workdir)
    assert run.returncode == 0, run.log
    assert run.result["status"] == "ok", run.result
    return job, run.result, workdir
