"""Reference phase: files, distributions and fallback, degenerate flags, reference errors."""

import json
import os

import torch

from conftest import kernelbench_source, read_output, reference_job, run_runner, write_file


def test_relu_reference_writes_inputs_state_and_outputs_apart(relu_reference):
    job, result, _ = relu_reference
    assert result["protocol"] == 1 and result["phase"] == "reference"
    assert [t["distribution"] for t in result["trials"]] == ["task", "normal", "uniform"]
    assert result["init_inputs"] == [] and result["state"] == []
    assert result["environment"]["torch"] == torch.__version__
    for trial in result["trials"]:
        in_dir = os.path.join(job["inputs_dir"], f"trial_{trial['index']}")
        out_dir = os.path.join(job["outputs_dir"], f"trial_{trial['index']}")
        assert trial["inputs"] == [{"name": "input_0", "file": "input_0.bin", "dtype": "float32",
                                    "shape": [4, 64]}]
        assert trial["outputs"][0]["shape"] == [4, 64]
        assert sorted(os.listdir(in_dir)) == ["input_0.bin", "manifest.json"]
        assert sorted(os.listdir(out_dir)) == ["manifest.json", "output_0.bin"]
        x = read_output(in_dir, trial["inputs"][0])
        y = read_output(out_dir, trial["outputs"][0])
        assert torch.equal(torch.relu(x), y)
    # No reference output anywhere under inputs_dir.
    names = [n for _, _, files in os.walk(job["inputs_dir"]) for n in files]
    assert not any(n.startswith("output") for n in names)
    with open(os.path.join(job["inputs_dir"], "init.json")) as f:
        assert json.load(f) == {"init_inputs": [], "state": []}


def test_distributions_draw_from_their_ranges(relu_reference):
    job, result, _ = relu_reference
    x_task, x_normal, x_uniform = (
        read_output(os.path.join(job["inputs_dir"], f"trial_{k}"), result["trials"][k]["inputs"][0])
        for k in range(3))
    assert x_task.min() >= 0 and x_task.max() < 1          # the task's torch.rand
    assert x_normal.min() < -1 and x_normal.max() > 1      # N(0, 1) over 256 samples
    assert x_uniform.min() >= -1 and x_uniform.min() < 0 and x_uniform.max() < 1
    assert result["degenerate"] == {"all_zero": False, "mostly_zero": False, "constant": False,
                                    "constant_passes": False, "nondeterministic": False,
                                    "reasons": []}


def test_same_seed_gives_same_inputs(relu_reference, tmp_path):
    job, result, _ = relu_reference
    again = dict(job, inputs_dir=str(tmp_path / "in"), outputs_dir=str(tmp_path / "out"))
    run = run_runner(again, tmp_path)
    assert run.result["status"] == "ok"
    for k in range(3):
        a = read_output(os.path.join(job["inputs_dir"], f"trial_{k}"),
                        result["trials"][k]["inputs"][0])
        b = read_output(str(tmp_path / "in" / f"trial_{k}"), run.result["trials"][k]["inputs"][0])
        assert torch.equal(a, b)


def test_non_finite_redraw_falls_back_to_task_distribution(tmp_path):
    task = write_file(tmp_path / "log_task.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.log(x)

        n = 32

        def get_inputs():
            return [torch.rand(n) + 0.5]

        def get_init_inputs():
            return []
        """)
    job = reference_job(task, tmp_path, trials=[{"seed": 1, "distribution": "normal"},
                                                {"seed": 2, "distribution": "task"}])
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    first = run.result["trials"][0]
    assert first["distribution"] == "task"
    assert "fell back" in first["notes"]
    x = read_output(os.path.join(job["inputs_dir"], "trial_0"), first["inputs"][0])
    assert x.min() >= 0.5


def test_all_zero_task_is_flagged(tmp_path):
    # level 2 #83: min(x, 0) then clamp(0, 1) is identically zero (dropout is off in eval mode).
    task = write_file(tmp_path / "83.py", kernelbench_source(2, 83))
    job = reference_job(task, tmp_path,
                        overrides={"batch_size": 2, "depth": 4, "height": 6, "width": 6})
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    assert run.result["degenerate"] == {
        "all_zero": True, "mostly_zero": True, "constant": True, "constant_passes": True,
        "nondeterministic": False,
        "reasons": ["all_zero: every output element of every trial is 0"]}
    keys = [e["key"] for e in run.result["state"]]
    assert keys == ["conv.weight", "conv.bias", "norm.weight", "norm.bias"]
    assert run.result["init_inputs"] == [3, 16, 3, 8, 0.0, 1.0, 0.2]


def test_dropout_task_is_flagged_nondeterministic(tmp_path):
    # A training-mode dropout inside forward: eval() cannot switch it off, so two runs differ.
    task = write_file(tmp_path / "dropout.py", """\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.p = p

            def forward(self, x):
                return torch.softmax(F.dropout(x, p=self.p, training=True), dim=1)

        batch_size, features = 8, 32

        def get_inputs():
            return [torch.rand(batch_size, features)]

        def get_init_inputs():
            return [0.5]
        """)
    run = run_runner(reference_job(task, tmp_path), tmp_path)
    assert run.result["status"] == "ok", run.result
    flags = run.result["degenerate"]
    assert flags["nondeterministic"] is True
    assert flags["all_zero"] is False and flags["constant"] is False


def test_scalar_inputs_are_stored_as_float64_scalars(tmp_path):
    task = write_file(tmp_path / "scale.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, s, k):
                return (x * s + k, x.sum())

        def get_inputs():
            return [torch.rand(3, 5), 2.5, 3]

        def get_init_inputs():
            return []
        """)
    job = reference_job(task, tmp_path)
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    inputs = run.result["trials"][0]["inputs"]
    assert inputs[1] == {"name": "input_1", "file": "input_1.bin", "dtype": "float64", "shape": [],
                         "scalar": "float"}
    assert inputs[2]["scalar"] == "int" and inputs[2]["shape"] == []
    trial_dir = os.path.join(job["inputs_dir"], "trial_0")
    assert read_output(trial_dir, inputs[1]).item() == 2.5
    outputs = run.result["trials"][0]["outputs"]
    assert [o["shape"] for o in outputs] == [[3, 5], []]


def test_failing_reference_is_reference_error_with_task_frames(tmp_path):
    task = write_file(tmp_path / "broken.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x @ torch.ones(7, 7)

        def get_inputs():
            return [torch.rand(3, 5)]

        def get_init_inputs():
            return []
        """)
    run = run_runner(reference_job(task, tmp_path), tmp_path)
    assert run.returncode == 0
    assert run.result["status"] == "reference_error"
    diagnostics = run.result["diagnostics"]
    assert diagnostics.startswith("trial 0: RuntimeError")
    assert "broken.py" in diagnostics and "x @ torch.ones(7, 7)" in diagnostics


def test_bad_override_is_reference_error(tmp_path):
    task = write_file(tmp_path / "19.py", kernelbench_source(1, 19))
    run = run_runner(reference_job(task, tmp_path, overrides={"dimm": 3}), tmp_path)
    assert run.result["status"] == "reference_error"
    assert "override 'dimm'" in run.result["diagnostics"]


def test_mostly_zero_outputs_are_flagged(tmp_path):
    """KernelBench level 2 #9's shape of problem: relu of values that are almost all negative."""
    task = write_file(tmp_path / "mostly_zero.py", """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x - 3.0)


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
""")
    run = run_runner(reference_job(task, tmp_path), tmp_path)
    assert run.result["status"] == "ok", run.result
    flags = run.result["degenerate"]
    assert flags["mostly_zero"] is True and flags["all_zero"] is False
