"""Run-time defences against red-team exploits (docs/redteam.md): the result seal, tampering
findings (timer patch, candidate threads, late output writes), lazy outputs, fresh addresses per
trial and the address probe. The end-to-end cases are tests/fixtures/redteam/dynamic.toml."""

import json
import os
import subprocess
import sys

import torch

from conftest import RUNNER_ROOT, candidate_job, read_output, run_runner, write_file

MODEL = """\
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
{body}
"""


def _module(tmp_path, reference, body, header=""):
    job, ref = reference[0], reference[1]
    source = header + MODEL.format(body="\n".join("        " + line for line in body.splitlines()))
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "model_new.py", source)}
    return run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path)


def test_honest_module_has_no_findings_and_a_correct_probe(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference, "return torch.clamp_min(x, 0.0)")
    assert run.result["status"] == "ok", run.result
    assert run.result["tampering"] == []
    probe = run.result["address_probe"]
    job, ref, _ = relu_reference
    assert probe["index"] == 1 and probe["problems"] == [] and probe["inputs_unchanged"]
    got = read_output(str(tmp_path / "cand" / "address_probe"), probe["outputs"][0])
    want = read_output(os.path.join(job["outputs_dir"], "trial_1"), ref["trials"][1]["outputs"][0])
    assert torch.equal(got, want)


def test_pointer_keyed_cache_answers_the_probe_with_the_old_result(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference,
                  "memo = self.__dict__.setdefault('memo', {})\n"
                  "return memo.setdefault(x.data_ptr(), torch.clamp_min(x, 0.0))")
    assert run.result["status"] == "ok", run.result
    job, ref, _ = relu_reference
    # Fresh addresses per trial: every trial is right (no trial saw an earlier trial's address) ...
    for trial, ref_trial in zip(run.result["trials"], ref["trials"]):
        got = read_output(str(tmp_path / "cand" / f"trial_{trial['index']}"), trial["outputs"][0])
        want = read_output(os.path.join(job["outputs_dir"], f"trial_{trial['index']}"),
                           ref_trial["outputs"][0])
        assert torch.equal(got, want)
    # ... and the probe, same buffers with trial 1's data, gets trial 0's answer back.
    probe = run.result["address_probe"]
    got = read_output(str(tmp_path / "cand" / "address_probe"), probe["outputs"][0])
    want = read_output(os.path.join(job["outputs_dir"], "trial_1"), ref["trials"][1]["outputs"][0])
    assert not torch.equal(got, want)


def test_candidate_thread_alive_after_the_call_is_found(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference,
                  "y = torch.empty_like(x)\n"
                  "threading.Thread(target=_late, args=(x, y), daemon=True).start()\n"
                  "return y",
                  header="import threading, time\n"
                         "def _late(x, y):\n    time.sleep(0.005)\n    y.copy_(x.clamp_min(0))\n")
    findings = run.result["tampering"]
    assert any(f.startswith("[thread-injection]") for f in findings), findings


def test_output_written_after_return_is_found(tmp_path, relu_reference):
    # No Python thread of the candidate's file: a timer thread from the standard library.
    run = _module(tmp_path, relu_reference,
                  "y = torch.zeros_like(x)\n"
                  "threading.Timer(0.002, y.copy_, args=(x.clamp_min(0),)).start()\n"
                  "return y",
                  header="import threading\n")
    findings = run.result["tampering"]
    assert any(f.startswith("[output-late-write] output 0") for f in findings), findings


def test_tensor_subclass_output_is_a_problem_and_not_written(tmp_path, relu_reference):
    run = _module(tmp_path, relu_reference,
                  "return Lazy._make_subclass(Lazy, x.clamp_min(0))",
                  header="import torch\nclass Lazy(torch.Tensor):\n    pass\n")
    trial = run.result["trials"][0]
    assert any("torch.Tensor subclass (lazy output)" in p for p in trial["problems"]), trial
    assert trial["outputs"] == []


def test_seal_is_read_from_stdin_and_put_into_the_result(tmp_path, relu_reference):
    job, ref, _ = relu_reference
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "m.py", MODEL.format(
                     body="        import sys\n        assert sys.stdin.read() == ''\n"
                          "        return torch.clamp_min(x, 0.0)"))}
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(candidate_job(job, ref, candidate, tmp_path / "cand")))
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, PYTHONPATH=RUNNER_ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "kforge_runner", "--job", str(job_path),
                             "--result-fd", str(write_fd), "--seal-stdin"],
                            pass_fds=(write_fd,), env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.close(write_fd)
    proc.stdin.write(b"0123456789abcdef\n")
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again
    with os.fdopen(read_fd, "rb") as pipe:
        raw = pipe.read()
    log = proc.communicate(timeout=120)[0]
    result = json.loads(raw)
    assert result["seal"] == "0123456789abcdef", log
    # The candidate found stdin at end of file (/dev/null), not the orchestrator's pipe.
    assert result["status"] == "ok", result


def test_time_call_reads_the_clock_bound_before_candidates_load(monkeypatch):
    import time as time_module
    sys.path.insert(0, RUNNER_ROOT)
    from kforge_runner import timing
    monkeypatch.setattr(time_module, "perf_counter_ns", lambda: 0)
    seconds, _ = timing.time_call(torch.device("cpu"), lambda: time_module.sleep(0.01))
    assert seconds >= 0.009


def test_replaced_clocks_are_timer_patch_findings_and_void_the_timing(tmp_path, relu_reference):
    job, ref = relu_reference[0], relu_reference[1]
    source = ("import time\nimport kforge_runner.timing as t\n"
              "time.perf_counter_ns = lambda: 0\nt.measure = lambda *a, **k: {}\n"
              + MODEL.format(body="        return torch.clamp_min(x, 0.0)"))
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": write_file(tmp_path / "model_new.py", source)}
    cand = candidate_job(job, ref, candidate, tmp_path / "cand")
    cand["timing"] = {"min_samples": 2, "min_seconds": 0, "max_seconds": 1, "warmup_seconds": 0}
    run = run_runner(cand, tmp_path)
    findings = run.result["tampering"]
    assert any(f.startswith("[timer-patch] time.perf_counter_ns") for f in findings), findings
    assert any("kforge_runner.timing.measure" in f for f in findings), findings
    assert "error" in run.result["timing"], run.result["timing"]


def test_outputs_are_written_as_new_files_not_through_planted_links(tmp_path, relu_reference):
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"untouched")
    link = tmp_path / "cand" / "trial_1" / "output_0.bin"
    run = _module(tmp_path, relu_reference,
                  f"os.makedirs({str(link.parent)!r}, exist_ok=True)\n"
                  f"if not os.path.lexists({str(link)!r}):\n"
                  f"    os.symlink({str(victim)!r}, {str(link)!r})\n"
                  "return torch.clamp_min(x, 0.0)",
                  header="import os\n")
    assert run.result["status"] == "ok", run.result
    assert victim.read_bytes() == b"untouched"
    assert link.is_file() and not link.is_symlink()
