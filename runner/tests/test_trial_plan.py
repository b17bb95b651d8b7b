"""Reference phase: the shortcut-finding trials, the second shape, timing sets and float64 truth."""

import os

import pytest
import torch

from conftest import kernelbench_source, read_output, reference_job, run_runner, write_file

SHORTCUTS = ["scaled", "negative", "dominant", "sorted", "ties", "shape"]


def _trials(*distributions, purpose="trial", first_seed=100):
    return [{"seed": first_seed + i, "distribution": d, "purpose": purpose}
            for i, d in enumerate(distributions)]


def _inputs(job, trial, folder="trial"):
    d = os.path.join(job["inputs_dir"], f"{folder}_{trial['index']}")
    return [read_output(d, e) for e in trial["inputs"]]


def _outputs(job, trial, key="outputs", folder="trial"):
    d = os.path.join(job["outputs_dir"], f"{folder}_{trial['index']}")
    return [read_output(d, e) if e is not None else None for e in trial[key]]


@pytest.fixture(scope="module")
def softmax_run(tmp_path_factory):
    """KernelBench level 1 #23 (softmax over rand inputs) at 8 x 33, every distribution, truth."""
    workdir = tmp_path_factory.mktemp("softmax")
    task = write_file(workdir / "23_Softmax.py", kernelbench_source(1, 23))
    job = reference_job(task, workdir, overrides={"batch_size": 8, "dim": 33},
                        trials=_trials("task", "normal", *SHORTCUTS) +
                        _trials("task", "normal", purpose="timing", first_seed=900))
    job["truth"] = True
    run = run_runner(job, workdir)
    assert run.result["status"] == "ok", run.result
    return job, run.result


def test_shortcut_trials_transform_the_task_draw(softmax_run):
    job, result = softmax_run
    by = {t["distribution"]: t for t in result["trials"]}
    # ties needs an integer output: softmax has none, so it is skipped, not written.
    assert [s["distribution"] for s in result["skipped"]] == ["ties"]
    assert "no integer output" in result["skipped"][0]["reason"]
    assert list(by) == ["task", "normal", "scaled", "negative", "dominant", "sorted", "shape"]
    assert [t["index"] for t in result["trials"]] == list(range(7))  # consecutive folders
    scaled = _inputs(job, by["scaled"])[0]
    assert scaled.max() > 50 and scaled.min() >= 0          # 100 x torch.rand
    negative = _inputs(job, by["negative"])[0]
    assert bool((negative < 0).all())
    dominant = _inputs(job, by["dominant"])[0]
    top = dominant.max(dim=1).values
    rest = dominant.sort(dim=1).values[:, -2]
    assert bool((top > rest + 3).all())                      # one element per row dominates
    flat = _inputs(job, by["sorted"])[0].reshape(-1)
    assert torch.equal(flat, flat.sort().values)
    assert flat.max() > 50 and flat.min() >= 0              # 100 x torch.rand, in order
    # The softmax of dominant rows is nearly one-hot, of scaled rows finite: both well defined.
    assert _outputs(job, by["dominant"])[0].max(dim=1).values.min() > 0.99


def test_second_shape_grows_every_size_parameter(softmax_run):
    job, result = softmax_run
    shape = next(t for t in result["trials"] if t["distribution"] == "shape")
    assert shape["inputs"][0]["shape"] == [9, 37]            # v + max(1, v // 8), made odd
    assert shape["notes"] == "batch_size 8 -> 9, dim 33 -> 37"


def test_truth_is_float64_and_beside_the_outputs(softmax_run):
    job, result = softmax_run
    assert result["truth"] == {"available": True, "device": "cpu", "reason": ""}
    for trial in result["trials"]:
        (truth,) = _outputs(job, trial, "truth")
        (ref,) = _outputs(job, trial)
        x = _inputs(job, trial)[0]
        assert truth.dtype == torch.float64 and ref.dtype == torch.float32
        assert torch.allclose(truth, torch.softmax(x.double(), dim=1), rtol=0, atol=0)
        assert (truth - ref.double()).abs().max() < 1e-6
    names = sorted(os.listdir(os.path.join(job["outputs_dir"], "trial_0")))
    assert names == ["manifest.json", "output_0.bin", "truth_0.bin"]
    # Nothing of the truth or the outputs under inputs_dir.
    files = [n for _, _, fs in os.walk(job["inputs_dir"]) for n in fs]
    assert not any(n.startswith(("output", "truth")) for n in files)


def test_timing_sets_are_apart_from_the_trials(softmax_run):
    job, result = softmax_run
    sets = result["timing_sets"]
    assert [s["distribution"] for s in sets] == ["task", "normal"]
    assert [s["index"] for s in sets] == [0, 1]
    assert os.path.isdir(os.path.join(job["inputs_dir"], "timing_0"))
    assert _outputs(job, sets[0], "truth", folder="timing")[0].dtype == torch.float64
    trial0 = _inputs(job, result["trials"][0])[0]
    assert not torch.equal(_inputs(job, sets[0], folder="timing")[0], trial0)  # own seeds


def test_ties_only_where_indices_are_returned(tmp_path):
    task = write_file(tmp_path / "argmax.py", kernelbench_source(1, 51))
    job = reference_job(task, tmp_path, overrides={"batch_size": 4, "dim1": 16, "dim2": 15},
                        trials=_trials("task", "ties"))
    job["truth"] = True
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    ties = run.result["trials"][1]
    assert ties["distribution"] == "ties" and run.result["skipped"] == []
    x = _inputs(job, ties)[0]
    assert x.unique().numel() <= 8                           # quantised: many equal values
    (out,) = _outputs(job, ties)
    assert out.dtype == torch.int64 and ties["truth"] == [None]   # indices: judged exactly
    assert torch.equal(out, torch.argmax(x, dim=1))


def test_non_finite_shortcut_trials_are_skipped_not_written(tmp_path):
    task = write_file(tmp_path / "exp_task.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.exp(x)

        n = 16

        def get_inputs():
            return [torch.rand(n)]

        def get_init_inputs():
            return []
        """)
    job = reference_job(task, tmp_path, trials=_trials("task", "scaled", "negative"))
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    assert [t["distribution"] for t in run.result["trials"]] == ["task", "negative"]
    (skip,) = run.result["skipped"]
    assert skip == {"position": 1, "distribution": "scaled", "purpose": "trial",
                    "reason": "the reference output is not finite on scaled inputs"}
    assert not os.path.exists(os.path.join(job["outputs_dir"], "trial_2"))


def test_second_shape_needs_a_size_parameter(tmp_path):
    # Level 1 #2 reads M, K, N in get_inputs only: all three are size parameters.
    task = write_file(tmp_path / "matmul.py", kernelbench_source(1, 2))
    job = reference_job(task, tmp_path, overrides={"M": 8, "K": 16, "N": 4},
                        trials=_trials("task", "shape"))
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    shape = run.result["trials"][1]
    assert [e["shape"] for e in shape["inputs"]] == [[9, 19], [19, 5]]
    assert shape["notes"] == "M 8 -> 9, K 16 -> 19, N 4 -> 5"
    # A task whose only size is a constructor argument has none.
    fixed = write_file(tmp_path / "fixed.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, features):
                super().__init__()
                self.linear = nn.Linear(features, features)
            def forward(self, x):
                return self.linear(x)

        features = 8

        def get_inputs():
            return [torch.rand(4, features)]

        def get_init_inputs():
            return [features]
        """)
    job = reference_job(fixed, tmp_path / "f", trials=_trials("task", "shape"))
    os.makedirs(tmp_path / "f")
    run = run_runner(job, tmp_path / "f")
    assert run.result["status"] == "ok", run.result
    assert [t["distribution"] for t in run.result["trials"]] == ["task"]
    assert "no size parameter" in run.result["skipped"][0]["reason"]


def test_a_model_that_cannot_run_in_float64_has_no_truth(tmp_path):
    task = write_file(tmp_path / "casts.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, y):
                if x.dtype == torch.float64:
                    raise TypeError("float32 only")
                return x + y, (x * y).float()

        def get_inputs():
            return [torch.rand(4), torch.rand(4)]

        def get_init_inputs():
            return []
        """)
    job = reference_job(task, tmp_path, trials=_trials("task", "normal"))
    job["truth"] = True
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    assert run.result["truth"]["available"] is False
    assert "cannot run in float64: TypeError: float32 only" in run.result["truth"]["reason"]
    assert all(t["truth"] == [None, None] for t in run.result["trials"])


def test_an_output_the_float64_run_casts_has_no_truth(tmp_path):
    task = write_file(tmp_path / "cast_one.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x * 2, (x * 3).to(torch.float32)

        def get_inputs():
            return [torch.rand(4)]

        def get_init_inputs():
            return []
        """)
    job = reference_job(task, tmp_path, trials=_trials("task"))
    job["truth"] = True
    run = run_runner(job, tmp_path)
    trial = run.result["trials"][0]
    assert run.result["truth"]["available"] is True
    assert trial["truth"][0] is not None and trial["truth"][1] is None
    assert "output 1: the float64 run returned float32" in trial["notes"]


def test_scalar_losses_are_not_degenerate_for_having_one_element(tmp_path):
    # KernelBench level 1 #100 (HingeLoss): one output element, different in every trial.
    task = write_file(tmp_path / "hinge.py", kernelbench_source(1, 100))
    job = reference_job(task, tmp_path, overrides={"batch_size": 64, "input_shape": [64]},
                        trials=_trials("task", "normal", "task"))
    run = run_runner(job, tmp_path)
    assert run.result["status"] == "ok", run.result
    assert run.result["trials"][0]["outputs"][0]["shape"] == []
    flags = run.result["degenerate"]
    assert flags["constant"] is False and flags["constant_passes"] is False, flags
    assert flags["reasons"] == []


def test_a_scalar_output_that_never_changes_is_constant(tmp_path):
    task = write_file(tmp_path / "fixed_loss.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return (x * 0).sum() + 1.5

        def get_inputs():
            return [torch.rand(16)]

        def get_init_inputs():
            return []
        """)
    run = run_runner(reference_job(task, tmp_path, trials=_trials("task", "normal")), tmp_path)
    flags = run.result["degenerate"]
    assert flags["constant"] is True and flags["constant_passes"] is True
    assert flags["reasons"] == ["constant: output 0 is the same value in every trial"]
