"""The harness mode on a CUDA device (runner/HARNESS.md): module and Triton candidates, the
reference baselines through torch.compile, the cold/warm/host clocks and the N-call graph, freed
memory poisoning and the CUDA red-team fixtures, driven by the fake parent. Skipped where no CUDA
device is present (it runs on the H200: bench/h200_harness.sh)."""

import os
import statistics
import time

import pytest
import torch

from conftest import write_file
from harness_parent import FakeParent, Session

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO_ROOT, "tests", "fixtures")
SHAPE = (256, 1024)
RELU_TASK = f"""\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

rows, cols = {SHAPE[0]}, {SHAPE[1]}

def get_inputs():
    return [torch.randn(rows, cols)]

def get_init_inputs():
    return []
"""


def fixture(path: str) -> str:
    return os.path.join(FIXTURES, path)


@pytest.fixture(scope="module")
def relu_task(tmp_path_factory):
    return write_file(tmp_path_factory.mktemp("cuda_relu") / "relu.py", RELU_TASK)


@pytest.fixture
def session(tmp_path, relu_task):
    opened = []

    def start(source_file, **kw):
        s = Session(tmp_path / str(len(opened)), source_file, task_file=relu_task,
                    device="cuda:0", shape=SHAPE, **kw)
        opened.append(s)
        return s

    yield start
    for s in opened:
        s.close()


def _right(taken):
    return [torch.equal(out, want) for _, out, want in taken]


def test_module_candidate_on_every_cuda_clock_and_the_graph(session):
    s = session(fixture("candidates/relu/honest.triton.py") if _has_triton() else
                fixture("redteam/honest/call_counter.py"))
    assert s.loaded["ok"] and s.loaded["seccomp"], s.loaded
    x = torch.randn(*SHAPE)
    reply, out, after = s.call(x)
    assert reply["ok"] and torch.equal(out, torch.relu(x)) and torch.equal(after, x)
    for mode in ("cold", "warm", "host", "cpu"):
        taken = s.samples(6, mode=mode, spin_s=2e-4)
        assert all(r["ok"] and r["seconds"] > 0 for r, _, _ in taken), taken[0][0]
        assert all(_right(taken)), mode
        if mode == "cold":
            assert all(r["sm_mhz"] >= 0 and r["enqueue_s"] > 0 for r, _, _ in taken)
    graph = s.parent.send("graph", set=0, calls=50)
    assert graph["ok"] and graph["seconds_per_call"] > 0, graph
    cold = statistics.median(r["seconds"] for r, _, _ in s.samples(20, mode="cold",
                                                                    spin_s=2e-4))
    print(f"relu {SHAPE}: cold {cold * 1e6:.2f} us, graph {graph['seconds_per_call'] * 1e6:.2f}"
          " us per call")


def test_empty_samples_before_load_cost_what_a_sample_costs_besides_the_call(tmp_path):
    parent = FakeParent(cwd=str(tmp_path), arena_bytes=64 << 20)
    try:
        assert parent.hello(device="cuda:0")["ok"]
        xs = [torch.randn(*SHAPE), torch.randn(*SHAPE)]
        outs = [[parent.output("float32", list(SHAPE))] for _ in xs]
        parent.send("prepare_timing", sets=[{"inputs": [parent.put(x)]} for x in xs],
                    outputs=outs, clock="cold")
        walls, seconds = [], []
        for k in range(60):
            start = time.perf_counter()
            reply = parent.send("sample", set=k % 2, spin_s=1e-4)
            walls.append(time.perf_counter() - start)
            assert reply["ok"], reply
            seconds.append(reply["seconds"])
        assert torch.isnan(parent.get(outs[0][0])).all()
        print(f"empty cold sample: child {statistics.median(seconds) * 1e6:.2f} us (the event "
              f"pair), parent {statistics.median(walls) * 1e6:.1f} us round trip")
        assert statistics.median(seconds) < 50e-6
    finally:
        assert parent.close() == 0, parent.log()


def test_freed_memory_is_poisoned_for_stale_outputs(session):
    s = session(fixture("redteam/dynamic/stale_output_empty.py"))
    reply, out, _ = s.call(torch.randn(*SHAPE))
    assert reply["ok"] and torch.isnan(out).all()
    assert all(torch.isnan(out).all() for _, out, _ in s.samples(4))


def test_event_patch_is_a_finding(session):
    s = session(fixture("redteam/dynamic/timer_patch_event.py"))
    taken = s.samples(4, mode="warm")
    assert all(any("torch.cuda.Event.elapsed_time" in f for f in r["findings"])
               for r, _, _ in taken), taken[0][0]
    twin = session(fixture("redteam/honest/call_counter.py"))
    honest = statistics.median(r["seconds"] for r, _, _ in twin.samples(8, mode="warm"))
    patched = statistics.median(r["seconds"] for r, _, _ in s.samples(8, mode="warm"))
    # The harness calls the elapsed_time it bound before the candidate loaded: no 100x gain.
    assert patched > honest / 10, (patched, honest)


def test_late_work_and_timing_recognisers_on_cuda(session):
    late = session(fixture("redteam/dynamic/thread_late_write.py"))
    reply, out, _ = late.call(torch.randn(*SHAPE))
    assert reply["ok"] and torch.isnan(out).all()
    counter = session(fixture("redteam/dynamic/timed_call_counter.py"))
    twin = session(fixture("redteam/honest/call_counter.py"))
    for c in (counter, twin):
        c.samples(40, spin_s=1e-4)
    assert not any(_right(counter.samples(4, spin_s=1e-4)))
    assert all(_right(twin.samples(4, spin_s=1e-4)))


def test_side_stream_work_shows_between_warm_and_host(session):
    if not _has_triton():
        pytest.skip("no Triton")
    side = session(fixture("redteam/stream_side.triton.py"))
    warm = statistics.median(r["seconds"] for r, _, _ in side.samples(10, mode="warm"))
    host = statistics.median(r["seconds"] for r, _, _ in side.samples(10, mode="host"))
    print(f"side stream: warm events {warm * 1e6:.2f} us, host {host * 1e6:.2f} us")
    assert host > warm


def test_a_candidate_using_torch_compile_works_under_the_syscall_filter(session, tmp_path):
    """Inductor compiles in worker processes (fork, exec): the seccomp filter must allow them."""
    if not hasattr(torch, "compile"):
        pytest.skip("no torch.compile")
    source = write_file(tmp_path / "compiled.py", """\
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.compile(lambda x: torch.clamp_min(x, 0.0))

    def forward(self, x):
        return self.f(x)
""")
    s = session(source)
    assert s.loaded["ok"] and s.loaded["seccomp"], s.loaded
    x = torch.randn(*SHAPE)
    reply, out, _ = s.call(x)
    assert reply["ok"] and torch.equal(out, torch.relu(x)), reply
    assert all(_right(s.samples(4, spin_s=1e-4)))


@pytest.mark.parametrize("variant", ["eager", "compile", "compile-max-autotune"])
def test_reference_variants_on_cuda(tmp_path, relu_task, variant):
    if variant != "eager" and not hasattr(torch, "compile"):
        pytest.skip("no torch.compile")
    parent = FakeParent(cwd=str(tmp_path), arena_bytes=64 << 20)
    try:
        assert parent.hello(device="cuda:0")["ok"]
        xs = [torch.randn(*SHAPE), torch.randn(*SHAPE)]
        outs = [[parent.output("float32", list(SHAPE))] for _ in xs]
        parent.send("prepare_timing", sets=[{"inputs": [parent.put(x)]} for x in xs],
                    outputs=outs, clock="cold")
        loaded = parent.send("load", candidate={"kind": "reference", "task_file": relu_task,
                                                "variant": variant})
        assert loaded["ok"], loaded
        for k in range(10):  # warm-up: compiles and autotunes
            assert parent.send("sample", set=k % 2, spin_s=1e-4, timeout=900)["ok"]
        for k in range(6):
            assert parent.send("sample", set=k % 2, spin_s=1e-4)["ok"]
            assert torch.equal(parent.get(outs[k % 2][0]), torch.relu(xs[k % 2]))
        graph = parent.send("graph", set=0, calls=20)
        print(f"{variant}: graph {graph}")
        assert graph["ok"] or graph["status"] == "runtime_error"
    finally:
        assert parent.close() == 0, parent.log()


def _has_triton() -> bool:
    try:
        import triton  # noqa: F401
        return True
    except ImportError:
        return False
