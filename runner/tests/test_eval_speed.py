"""The cheaper paths of the evaluation (bench/RESULTS.md, "cache hit"): each must give exactly the
answer of the rule it shortcuts, and the phases must say where their time went."""

import sys
import time

import torch

from conftest import RUNNER_ROOT, candidate_job, run_runner

sys.path.insert(0, RUNNER_ROOT)
from kforge_runner import degenerate, input_guard, tamper_guard, tensor_files  # noqa: E402
from kforge_runner.protocol import Tolerance  # noqa: E402

STRICT = Tolerance(atol=1e-4, rtol=1e-4)


def test_read_tensor_round_trips_every_dtype_in_one_copy(tmp_path):
    for name, dtype in tensor_files.TORCH_DTYPES.items():
        source = (torch.arange(-6, 6) * 3).to(dtype).reshape(3, 4)
        entry = tensor_files.write_tensor(str(tmp_path), f"t_{name}", source)
        back = tensor_files.read_tensor(str(tmp_path), entry)
        assert back.dtype == dtype and back.shape == source.shape
        assert torch.equal(back, source), name
    empty = tensor_files.write_tensor(str(tmp_path), "empty", torch.zeros(0, 3))
    assert tensor_files.read_tensor(str(tmp_path), empty).shape == (0, 3)


def test_identical_keeps_its_element_rule_beside_the_byte_shortcut():
    a = torch.rand(1000)
    assert input_guard.identical(a, a.clone())
    b = a.clone()
    b[7] = b[7] + 1
    assert not input_guard.identical(a, b)
    nan = torch.tensor([float("nan"), 0.0, 1.0])
    other_nan = torch.tensor([-float("nan"), -0.0, 1.0])  # other bytes, the same by the rule
    assert input_guard.identical(nan, other_nan)
    assert not input_guard.identical(nan, torch.tensor([float("nan"), 0.0, 2.0]))
    assert input_guard.identical(torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool))
    assert not input_guard.identical(torch.ones(3), torch.ones(3, dtype=torch.float64))


def test_within_tolerance_shortcuts_agree_with_the_full_rule():
    t = torch.rand(20000)
    assert degenerate.within_tolerance(t, t.clone(), STRICT)
    with_nan = t.clone()
    with_nan[10] = float("nan")
    # Same bytes, but NaN never matches unless asked to.
    assert not degenerate.within_tolerance(with_nan, with_nan.clone(), STRICT)
    assert degenerate.within_tolerance(with_nan, with_nan.clone(), STRICT, nan_equal=True)
    # A difference only past the first elements looked at is still found.
    late = t.clone()
    late[-1] += 1.0
    assert not degenerate.within_tolerance(late, t, STRICT)
    close = t + 1e-6
    assert degenerate.within_tolerance(close, t, STRICT)


def test_degenerate_flags_see_past_the_probed_elements():
    tol = STRICT
    almost_constant = torch.full((10000,), 2.0)
    almost_constant[-1] = 3.0
    check = degenerate.DegenerateCheck(tol)
    check.add_trial([almost_constant])
    flags = check.flags()
    assert not flags["constant"] and not flags["constant_passes"]
    check = degenerate.DegenerateCheck(tol)
    check.add_trial([torch.full((10000,), 2.0)])
    assert check.flags()["constant"] and check.flags()["constant_passes"]


def test_late_write_delay_counts_from_the_snapshot():
    out = [torch.zeros(4)]
    copies = tamper_guard.snapshot(out)
    since = tamper_guard.now()
    started = time.monotonic()
    assert tamper_guard.late_writes(out, copies, lambda: None, delay_s=0.05, since=since) == []
    assert time.monotonic() - started >= 0.045
    # The delay already passed (the outputs were written meanwhile): no more waiting, same check.
    out[0][1] = 1.0
    started = time.monotonic()
    found = tamper_guard.late_writes(out, copies, lambda: None, delay_s=0.05, since=since - 1.0)
    assert time.monotonic() - started < 0.04
    assert found and found[0].startswith("[output-late-write]")


def test_phases_report_their_step_times(tmp_path, relu_reference):
    job, ref, _ = relu_reference
    steps = ref["steps"]
    for step in ("load_and_construct", "draw_and_run", "degenerate_checks", "write_tensors",
                 "determinism_rerun"):
        assert steps[step] >= 0, steps
    candidate = {"kind": "module", "backend": "kernelbench",
                 "source_file": str(tmp_path / "model_new.py")}
    (tmp_path / "model_new.py").write_text(
        "import torch\nclass ModelNew(torch.nn.Module):\n"
        "    def forward(self, x):\n        return torch.clamp_min(x, 0.0)\n")
    run = run_runner(candidate_job(job, ref, candidate, tmp_path / "cand"), tmp_path)
    assert run.result["status"] == "ok", run.result
    for step in ("read_tensors", "load", "call", "write_tensors", "guards", "address_probe"):
        assert run.result["steps"][step] >= 0, run.result["steps"]
