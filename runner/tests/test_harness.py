"""The harness mode (runner/HARNESS.md) driven by a fake parent (harness_parent.py): hello, empty
samples before load, load, calls, the address probe, timing sets and samples, for module and
OpenCL candidates and for the reference's baselines; parent mistakes answered as infra_error and
candidate failures with their statuses."""

import os
import textwrap

import pytest
import torch

from conftest import POCL_PLATFORM, kernelbench_source, write_file
from harness_parent import FakeParent

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOFTMAX_CL = os.path.join(REPO_ROOT, "tests", "fixtures", "candidates", "softmax", "honest.cl.py")

RELU_NEW = """\
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
"""

LINEAR_TASK = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_out, scale):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.scale = scale

    def forward(self, x, shift):
        return self.fc(x) * self.scale + shift

n_in, n_out = 16, 8

def get_inputs():
    return [torch.randn(4, n_in), 2]

def get_init_inputs():
    return [n_in, n_out, 0.5]
"""


@pytest.fixture(scope="module")
def relu_task(tmp_path_factory):
    folder = tmp_path_factory.mktemp("relu_task")
    return write_file(folder / "19_ReLU.py", kernelbench_source(1, 19))


def _parent(tmp_path, **kw) -> FakeParent:
    # The harness's working folder holds nothing of the judge's: no reference, no job files.
    cwd = tmp_path / "harness-cwd"
    cwd.mkdir(exist_ok=True)
    return FakeParent(cwd=str(cwd), **kw)


def _module_load(parent, source_file, task_file, overrides=None, state=()):
    return parent.send("load", candidate={
        "kind": "module", "backend": "kernelbench", "source_file": source_file,
        "task_file": task_file, "overrides": {"batch_size": 4, "dim": 64} if overrides is None else overrides,
        "init_seed": 7}, state=list(state))


def _call(parent, inputs, out_shapes, reuse=False, dtype="float32"):
    """One ``call``; returns (reply, outputs read back, inputs as they are after the call)."""
    ins = [parent.put(v) for v in inputs]
    outs = [parent.output(dtype, s) for s in out_shapes]
    afters = [parent.empty_like(v) for v in inputs]
    reply = parent.send("call", inputs=ins, outputs=outs,
                        inputs_after=[a["region"] for a in afters], reuse=reuse)
    return reply, [parent.get(o) for o in outs], [parent.get(a) for a in afters]


def _candidate(tmp_path, name, source):
    return write_file(tmp_path / name, textwrap.dedent(source))


def test_lifecycle_of_a_module_candidate(tmp_path, relu_task):
    """hello → empty samples → load → calls → address probe → timing sets → samples → quit."""
    parent = _parent(tmp_path)
    try:
        hello = parent.hello()
        assert hello["ok"] and hello["harness"] == "kforge_runner" and hello["protocol"] == 2
        assert hello["environment"]["device_name"] == "cpu"
        assert set(hello["observed_isolation"]) >= {"network_blocked", "root_read_only", "user"}

        # Before load: empty samples measure the protocol itself; the outputs stay poisoned.
        xs = [torch.randn(4, 64), torch.randn(4, 64) * 3]
        sets = [{"inputs": [parent.put(x)]} for x in xs]
        outs = [[parent.output("float32", [4, 64])] for _ in xs]
        assert parent.send("prepare_timing", sets=sets, outputs=outs, clock="cpu") == {"ok": True}
        for k in range(4):
            reply = parent.send("sample", set=k % 2)
            assert reply["ok"] and reply["problems"] == [] and 0 < reply["seconds"] < 0.1, reply
        assert torch.isnan(parent.get(outs[0][0])).all()

        loaded = _module_load(parent, _candidate(tmp_path, "relu_new.py", RELU_NEW), relu_task)
        assert loaded["ok"] and loaded["state_loaded"], loaded
        assert "seccomp" in loaded

        trial = torch.randn(4, 64)
        reply, (out,), (after,) = _call(parent, [trial], [[4, 64]])
        assert reply == {"ok": True, "output_descs": [{"dtype": "float32", "shape": [4, 64]}],
                         "problems": []}
        assert torch.equal(out, torch.relu(trial)) and torch.equal(after, trial)

        probe = torch.randn(4, 64)
        reply, (out,), _ = _call(parent, [probe], [[4, 64]], reuse=True)
        assert reply["ok"] and torch.equal(out, torch.relu(probe))

        for k in range(6):
            reply = parent.send("sample", set=k % 2, mode="cpu")
            assert reply["ok"] and reply["problems"] == [] and reply["seconds"] > 0, reply
            assert torch.equal(parent.get(outs[k % 2][0]), torch.relu(xs[k % 2]))
    finally:
        assert parent.close() == 0, parent.log()


def test_parent_mistakes_are_infra_errors(tmp_path, relu_task):
    parent = _parent(tmp_path, arena_bytes=1 << 20)
    try:
        assert parent.send("sample", set=0)["status"] == "infra_error"  # before hello
        assert parent.hello()["ok"]
        cases = {
            "unknown": parent.send("bogus"),
            "malformed": parent.send_raw(b"{not json"),
            "unaligned": parent.send("prepare_timing", sets=[{"inputs": [
                {"dtype": "float32", "shape": [1], "region": {"offset": 4, "bytes": 4}}]}],
                outputs=[[]]),
            "outside": parent.send("prepare_timing", sets=[{"inputs": [
                {"dtype": "float32", "shape": [1], "region": {"offset": 1 << 20, "bytes": 4}}]}],
                outputs=[[]]),
            "size": parent.send("prepare_timing", sets=[{"inputs": [
                {"dtype": "float32", "shape": [2], "region": {"offset": 0, "bytes": 4}}]}],
                outputs=[[]]),
            "no set": parent.send("sample", set=3),
            "call before load": parent.send("call", inputs=[], outputs=[]),
            "graph before load": parent.send("graph", set=0, calls=4),
            "second hello": parent.hello(),
            "native": parent.send("load", candidate={"kind": "native", "artifact": "/x.so"}),
        }
        for name, reply in cases.items():
            assert reply["ok"] is False and reply["status"] == "infra_error", (name, reply)
        x = torch.randn(4, 64)
        parent.send("prepare_timing", sets=[{"inputs": [parent.put(x)]}],
                    outputs=[[parent.output("float32", [4, 64])]], clock="cpu")
        assert parent.send("sample", set=0, mode="cold")["status"] == "infra_error"  # no cuda
        assert _module_load(parent, _candidate(tmp_path, "r.py", RELU_NEW), relu_task)["ok"]
        again = _module_load(parent, _candidate(tmp_path, "r2.py", RELU_NEW), relu_task)
        assert again["status"] == "infra_error" and "one" in again["diagnostics"]
        assert parent.send("graph", set=0, calls=4)["status"] == "infra_error"  # cpu: no graphs
        assert parent.send("sample", set=0)["ok"]  # the harness still serves
    finally:
        assert parent.close() == 0, parent.log()


def test_reference_variants_are_timed_by_the_same_commands(tmp_path):
    """The baselines: the task's Model, given the reference state, served like a candidate
    (eager, then a compile variant in the same harness), then no load after a candidate."""
    task = _candidate(tmp_path, "linear_task.py", LINEAR_TASK)
    namespace = {}
    exec(compile(LINEAR_TASK, task, "exec"), namespace)  # the test's own copy of the reference
    torch.manual_seed(7)
    reference = namespace["Model"](*namespace["get_init_inputs"]())
    for p in reference.parameters():  # a state the seed alone would not give
        p.data.uniform_(-1, 1)
    parent = _parent(tmp_path)
    try:
        assert parent.hello()["ok"]
        state = []
        for key, value in reference.state_dict().items():
            desc = parent.put(value)
            desc["key"] = key
            state.append(desc)
        x = torch.randn(4, 16)
        with torch.no_grad():
            want = reference(x, 2)
        spec = {"kind": "reference", "task_file": task, "init_seed": 7}
        assert parent.send("load", candidate={**spec, "variant": "eager"}, state=state)["ok"]
        reply, (out,), (x_after, shift_after) = _call(parent, [x, 2], [[4, 8]])
        assert reply["ok"] and torch.allclose(out, want), reply
        assert torch.equal(x_after, x) and float(shift_after) == 2.0
        sets = [{"inputs": [parent.put(x), parent.put(2)]}]
        outs = [[parent.output("float32", [4, 8])]]
        parent.send("prepare_timing", sets=sets, outputs=outs, clock="cpu")
        for _ in range(3):
            assert parent.send("sample", set=0)["ok"]
            assert torch.allclose(parent.get(outs[0][0]), want)
        compiled = parent.send("load", candidate={**spec, "variant": "compile"}, state=state)
        if hasattr(torch, "compile"):
            assert compiled["ok"], compiled
        else:
            assert compiled["status"] == "runtime_error" and "torch.compile" in \
                compiled["diagnostics"]
        as_candidate = _module_load(parent, _candidate(tmp_path, "lin_new.py", LINEAR_TASK.replace(
            "class Model", "class ModelNew")), task, overrides={}, state=state)
        assert as_candidate["ok"] and as_candidate["state_loaded"], as_candidate
        assert parent.send("load", candidate={**spec, "variant": "eager"},
                           state=state)["status"] == "infra_error"
    finally:
        assert parent.close() == 0, parent.log()


def test_opencl_candidate_calls_and_event_samples(tmp_path):
    pytest.importorskip("pyopencl")
    parent = _parent(tmp_path, env_extra={"POCL_CACHE_DIR": str(tmp_path / "pocl")})
    try:
        hello = parent.hello(opencl_platform=POCL_PLATFORM)
        if not hello["ok"] and "no OpenCL platform" in hello["diagnostics"]:
            pytest.skip(hello["diagnostics"])
        assert hello["ok"] and hello["environment"]["opencl_device"], hello
        xs = [torch.randn(3, 301), torch.randn(3, 301) * 5]
        sets = [{"inputs": [parent.put(x)]} for x in xs]
        outs = [[parent.output("float32", [3, 301])] for _ in xs]
        parent.send("prepare_timing", sets=sets, outputs=outs, clock="opencl-events")
        empty = parent.send("sample", set=0)
        assert empty["ok"] and empty["seconds"] >= 0, empty
        assert torch.isnan(parent.get(outs[0][0])).all()
        loaded = parent.send("load", candidate={"kind": "opencl", "source_file": SOFTMAX_CL})
        assert loaded["ok"] and loaded["environment"]["opencl_device"], loaded
        trial = torch.randn(3, 301)
        reply, (out,), (after,) = _call(parent, [trial], [[3, 301]])
        assert reply["ok"] and torch.allclose(out, torch.softmax(trial, 1), atol=1e-6)
        assert torch.equal(after, trial)
        probe = torch.randn(3, 301)
        reply, (out,), _ = _call(parent, [probe], [[3, 301]], reuse=True)
        assert reply["ok"] and torch.allclose(out, torch.softmax(probe, 1), atol=1e-6)
        for k in range(4):
            reply = parent.send("sample", set=k % 2)
            assert reply["ok"] and reply["seconds"] > 0, reply
            assert torch.allclose(parent.get(outs[k % 2][0]), torch.softmax(xs[k % 2], 1),
                                  atol=1e-6)
        assert parent.send("sample", set=0, mode="cold")["status"] == "infra_error"
    finally:
        assert parent.close() == 0, parent.log()


def test_opencl_build_failure_is_a_compile_error(tmp_path):
    pytest.importorskip("pyopencl")
    broken = _candidate(tmp_path, "broken.cl.py", """\
        SOURCE = "__kernel void k(__global float* x) { x[0] = undefined_name; }"
        def launch(cl, queue, program, inputs, outputs):
            pass
        """)
    parent = _parent(tmp_path, env_extra={"POCL_CACHE_DIR": str(tmp_path / "pocl")})
    try:
        assert parent.hello()["ok"]
        reply = parent.send("load", candidate={"kind": "opencl", "source_file": broken,
                                               "opencl_platform": POCL_PLATFORM})
        assert reply["status"] == "compile_error" and "undefined_name" in reply["diagnostics"]
    finally:
        assert parent.close() == 0, parent.log()


def test_every_reply_echoes_its_commands_id(tmp_path, relu_task):
    """The parent ties each reply to its command by ``id`` (runner/HARNESS.md "Ids"): the reply to
    a good command, to a parent mistake and to a command that fails all carry it."""
    parent = _parent(tmp_path)
    try:
        hello = parent.send("hello", arena_bytes=parent.arena_bytes, device="cpu", protocol=2,
                            id=41)
        assert hello["ok"] and hello["id"] == 41
        early = parent.send("call", inputs=[], outputs=[], inputs_after=[], id=42)
        assert not early["ok"] and early["status"] == "infra_error" and early["id"] == 42
        unknown = parent.send("dance", id=43)
        assert not unknown["ok"] and unknown["id"] == 43
        no_id = parent.send("sample", set=0, mode="cpu")
        assert "id" not in no_id
    finally:
        assert parent.close() == 0, parent.log()
