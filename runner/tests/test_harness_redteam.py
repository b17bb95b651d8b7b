"""Red-team module and OpenCL candidates (tests/fixtures/redteam) in the harness, each beside an
honest twin, driven by the fake parent: the harness hands the parent what it needs to catch each
one (the outputs as they were when the call returned, problems, findings, inputs as they are after
the call, timed outputs), and a candidate cannot reach out of its process (seccomp) or take the
harness over by forking. The parent's judgement itself is tested through the real parent
(tests/eval, redteam_test)."""

import os

import pytest
import torch

from conftest import kernelbench_source, write_file
from harness_parent import Session

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REDTEAM = os.path.join(REPO_ROOT, "tests", "fixtures", "redteam")
RELU_OVERRIDES = {"batch_size": 8, "dim": 64}


def fixture(name: str) -> str:
    return os.path.join(REDTEAM, name)


@pytest.fixture(scope="module")
def relu_task(tmp_path_factory):
    folder = tmp_path_factory.mktemp("relu_task")
    return write_file(folder / "19_ReLU.py", kernelbench_source(1, 19))


@pytest.fixture
def session(tmp_path, relu_task):
    opened = []

    def start(source_file, kind="module"):
        s = Session(tmp_path / str(len(opened)), source_file, kind, task_file=relu_task,
                    overrides=RELU_OVERRIDES)
        opened.append(s)
        return s

    yield start
    for s in opened:
        s.close()


def _candidate(tmp_path, name, text):
    return write_file(tmp_path / name, text)


def test_lazy_output_is_a_problem_not_an_output(session):
    s = session(fixture("dynamic/lazy_output.py"))
    reply, out, _ = s.call(torch.randn(8, 64))
    assert reply["ok"] and "lazy output" in reply["problems"][0], reply
    assert reply["output_descs"] == [{"dtype": "float32", "shape": [8, 64]}]
    assert torch.isnan(out).all()  # not written: the region holds poison
    reply, out, _ = s.samples(1)[0]
    assert "lazy output" in reply["problems"][0] and torch.isnan(out).all()


def test_clock_patch_is_a_finding_and_does_not_change_the_clock(session):
    patched = session(fixture("dynamic/timer_patch.py"))
    honest = session(fixture("honest/call_counter.py"))
    reply, out, _ = patched.call(torch.randn(8, 64))
    assert any(f.startswith("[timer-patch] time.perf_counter_ns") for f in reply["findings"])
    for (p, _, _), (h, _, _) in zip(patched.samples(6), honest.samples(6)):
        assert p["findings"] and "findings" not in h
        # The harness reads the clock it bound before the candidate loaded: no 1000x gain.
        assert p["seconds"] > 1e-7
    reply, _, _ = honest.call(torch.randn(8, 64))
    assert "findings" not in reply


def test_late_thread_writes_do_not_reach_the_output(session):
    s = session(fixture("dynamic/thread_late_write.py"))
    x = torch.randn(8, 64)
    reply, out, _ = s.call(x)
    assert reply["ok"] and reply["problems"] == []
    assert not torch.equal(out, torch.relu(x))  # copied when the call returned
    for reply, out, want in s.samples(2):
        assert not torch.equal(out, want)


def test_a_returned_tensor_handed_back_again_reads_as_poison(session):
    cache = session(fixture("dynamic/pointer_cache.py"))
    twin = session(fixture("honest/persistent_output.py"))
    for s, honest in ((cache, False), (twin, True)):
        first = torch.randn(8, 64)
        _, out, _ = s.call(first)
        assert torch.equal(out, torch.relu(first))
        probe = torch.randn(8, 64)
        _, out, _ = s.call(probe, reuse=True)  # the address probe: same buffers, new values
        assert torch.equal(out, torch.relu(probe)) == honest
        checked = [torch.equal(out, want) for _, out, want in s.samples(6)]
        assert all(checked) if honest else not any(checked[2:]), checked


def test_in_place_input_corruption_shows_in_inputs_after(session):
    s = session(fixture("dynamic/inplace_input.py"))
    x = -torch.rand(8, 64)
    reply, out, after = s.call(x)
    assert reply["ok"] and torch.equal(out, torch.zeros(8, 64)) and not torch.equal(after, x)


@pytest.mark.parametrize("exploit", ["dynamic/timed_call_counter.py",
                                     "dynamic/timed_inputs_seen.py"])
def test_timing_phase_recognisers_are_wrong_when_timed(session, exploit):
    s = session(fixture(exploit))
    twin = session(fixture("honest/call_counter.py"))
    for c in (s, twin):
        for _ in range(3):  # trials at fresh addresses: both are right
            x = torch.randn(8, 64)
            reply, out, _ = c.call(x)
            assert reply["ok"] and torch.equal(out, torch.relu(x))
        c.call(torch.randn(8, 64), reuse=True)
    for c in (s, twin):
        for k in range(32):  # a warm-up over both sets, long enough for the call counter
            c.parent.send("sample", set=k % 2)
    assert not any(torch.equal(out, want) for _, out, want in s.samples(4))
    assert all(torch.equal(out, want) for _, out, want in twin.samples(4))


def test_a_pointer_cache_in_the_timing_loop_fails_the_timing_address_probe(session):
    s = session(fixture("dynamic/timed_pointer_cache.py"))
    twin = session(fixture("honest/call_counter.py"))
    for c in (s, twin):
        for k in range(40):
            c.parent.send("sample", set=k % 2)
    # Rotation alone does not see it: each set's buffers get that set's values back.
    assert all(torch.equal(out, want) for _, out, want in s.samples(4))
    for c, honest in ((s, False), (twin, True)):
        reply = c.parent.send("sample", set=0, buffers=1)
        assert reply["ok"], reply
        assert torch.equal(c.parent.get(c.outs[0][0]), torch.relu(c.xs[0])) == honest


@pytest.mark.parametrize("exploit", ["dynamic/timed_call_counter.cl.py",
                                     "dynamic/timed_unpoisoned.cl.py"])
def test_opencl_timing_recognisers(session, exploit):
    pytest.importorskip("pyopencl")
    s = session(fixture(exploit), kind="opencl")
    twin = session(fixture("honest/call_counter.cl.py"), kind="opencl")
    if not s.loaded["ok"] and "no OpenCL platform" in s.loaded.get("diagnostics", ""):
        pytest.skip(s.loaded["diagnostics"])
    for c in (s, twin):
        assert c.loaded["ok"], c.loaded
        x = torch.randn(8, 64)
        reply, out, _ = c.call(x)
        assert reply["ok"] and torch.equal(out, torch.relu(x))
        for _ in range(32):
            c.parent.send("sample", set=1)
    timed = [torch.equal(out, want) for _, out, want in s.samples(4)]
    # The call counter does less and is caught; the unpoisoned-output recogniser never sees
    # an unpoisoned output, so it does all the work.
    assert timed == ([False] * 4 if "counter" in exploit else [True] * 4), timed
    if "counter" in exploit:
        assert all(torch.isnan(out.reshape(-1)[256:]).all() for _, out, _ in s.samples(2))
    assert all(torch.equal(out, want) for _, out, want in twin.samples(4))


def test_candidate_failures_have_their_statuses(session, tmp_path):
    raising = session(_candidate(tmp_path, "raising.py", """\
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                raise ValueError("no luck")
        """))
    reply, _, _ = raising.call(torch.randn(8, 64))
    assert reply["status"] == "runtime_error" and reply["diagnostics"].startswith(
        "call: ValueError: no luck"), reply
    assert raising.samples(1)[0][0]["status"] == "runtime_error"
    broken = session(_candidate(tmp_path, "broken.py", "class ModelNew(:\n"))
    assert broken.loaded["status"] == "compile_error"
    assert broken.loaded["diagnostics"].startswith("loading the candidate: SyntaxError")


def test_reaching_out_is_denied_but_compiler_subprocesses_work(session, tmp_path):
    escape = session(_candidate(tmp_path, "escape.py", """\
        import os
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                os.setsid()  # leave the harness's session and process group
                return torch.relu(x)
        """))
    if not escape.loaded.get("seccomp"):
        pytest.skip(f"no seccomp here: {escape.loaded.get('seccomp_problem')}")
    reply, _, _ = escape.call(torch.randn(8, 64))
    assert reply["status"] == "sandbox_violation", reply
    signal = session(_candidate(tmp_path, "signal.py", """\
        import os, signal
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                os.kill(os.getppid(), signal.SIGSTOP)  # stop the judge
                return torch.relu(x)
        """))
    assert signal.call(torch.randn(8, 64))[0]["status"] == "sandbox_violation"
    compiler = session(_candidate(tmp_path, "compiler.py", """\
        import subprocess
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                # What Triton does at its first launch: run a compiler as a child process;
                # and what ninja (load_inline) does: each compiler in its own process group.
                subprocess.run(["sh", "-c", "echo compiling"], check=True)
                subprocess.run(["sh", "-c", "echo grouped"], check=True, process_group=0)
            def forward(self, x):
                return torch.relu(x)
        """))
    assert compiler.loaded["ok"], compiler.loaded
    x = torch.randn(8, 64)
    reply, out, _ = compiler.call(x)
    assert reply["ok"] and torch.equal(out, torch.relu(x))


def test_a_forked_child_never_answers_for_the_harness(session, tmp_path):
    forking = session(_candidate(tmp_path, "forking.py", """\
        import os
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                os.fork()  # the child returns into harness code too
                return torch.relu(x)
        """))
    for _ in range(3):
        x = torch.randn(8, 64)
        reply, out, _ = forking.call(x)
        assert reply["ok"] and torch.equal(out, torch.relu(x)), reply
    assert all(torch.equal(out, want) for _, out, want in forking.samples(2))
