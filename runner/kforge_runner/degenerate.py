"""Degenerate-task checks on reference outputs (EVAL-PROTOCOL correctness rule 4).

A task whose output is all zero, almost all zero, constant, well approximated by its mean, or not
reproducible would reward trivial or lucky candidates; the flags are reported next to its
results, with one line per rule that fired (``reasons``). "Mostly zero" (at least MOSTLY_ZERO of
all output elements exactly 0, e.g. KernelBench level 2 #9, whose ReLU sees almost only negative
values) is flagged even though an all-zero candidate would fail on the few other elements: the
task barely exercises the computation.

An output of one element (the level-1 losses) is never constant merely for having one element:
for it, "constant" means the same value in every trial, and "constant passes" that one fixed
value (the mean over the trials) passes every trial. The checks see the trials of the task's own
distributions only (task, normal, uniform): a shortcut trial may legitimately make a task's output
all zero (a ReLU of all-negative inputs).
"""

from typing import Any, Dict, List, Tuple

import torch

from kforge_runner import input_guard
from kforge_runner.protocol import Tolerance

MOSTLY_ZERO = 0.99


# Elements looked at first by the all-elements predicates below: one failing element there settles
# the answer (False) without a pass over the whole tensor; otherwise the whole tensor is checked.
_PROBE_ELEMENTS = 4096


def within_tolerance(candidate: torch.Tensor, reference: torch.Tensor, tolerance: Tolerance,
                     nan_equal: bool = False) -> bool:
    """The orchestrator's rule: every ``|a - b| <= atol + rtol * |b|``, equal infinities match.

    NaN never matches unless ``nan_equal`` (used only to compare the reference with itself).
    Identical bytes match at once (with ``nan_equal``, or when no element is NaN).
    """
    if candidate.shape != reference.shape:
        return False
    if candidate.dtype == reference.dtype and candidate.numel() > 0 and \
            input_guard.same_bytes(candidate, reference):
        if nan_equal or not candidate.is_floating_point():
            return True
        return not bool(candidate.isnan().any())
    a, b = candidate.reshape(-1), reference.reshape(-1)
    if a.numel() > _PROBE_ELEMENTS and \
            not _close(a[:_PROBE_ELEMENTS], b[:_PROBE_ELEMENTS], tolerance, nan_equal):
        return False
    return _close(a, b, tolerance, nan_equal)


def _close(a: torch.Tensor, b: torch.Tensor, tolerance: Tolerance, nan_equal: bool) -> bool:
    a, b = a.double(), b.double()
    ok = ((a - b).abs() <= tolerance.atol + tolerance.rtol * b.abs()) | (a == b)
    if nan_equal:
        ok |= a.isnan() & b.isnan()
    return bool(ok.all())


def _is_constant(t: torch.Tensor) -> bool:
    if t.numel() == 0:
        return True
    flat = t.reshape(-1)
    if not bool((flat[:_PROBE_ELEMENTS] == flat[0]).all()):
        return False
    return bool((flat == flat[0]).all())


def _mean_passes(t: torch.Tensor, tolerance: Tolerance) -> bool:
    """Whether the output's mean, as a constant tensor, would pass the comparison."""
    mean = t.double().mean() if t.numel() else torch.tensor(0.0, dtype=torch.float64)
    flat = t.reshape(-1)
    constant = mean.to(flat.device).expand(flat.shape)
    return within_tolerance(constant, flat, tolerance)


class DegenerateCheck:
    """Accumulates output statistics trial by trial; ``flags()`` gives the ``degenerate`` object.

    ``nondeterministic`` is set by the caller from a second run of the reference on trial 0's inputs
    (``record_rerun``).
    """

    def __init__(self, tolerance: Tolerance):
        self._tolerance = tolerance
        self._trials = 0
        self._all_zero = True
        self._nondeterministic = False
        self._zeros = 0
        self._elements = 0
        # Per output position: still constant / still passing as a constant (outputs of more
        # than one element), or the values seen in each trial (one-element outputs).
        self._constant: Dict[int, bool] = {}
        self._constant_passes: Dict[int, bool] = {}
        self._scalars: Dict[int, List[float]] = {}

    def add_trial(self, outputs: List[torch.Tensor]) -> None:
        # Each flag needs every trial to hold; once one trial breaks it, later trials skip the
        # (full-tensor) check.
        self._trials += 1
        for m, t in enumerate(outputs):
            t = t.detach()
            zeros = int((t == 0).sum())
            self._zeros += zeros
            self._elements += t.numel()
            self._all_zero = self._all_zero and zeros == t.numel()
            if t.numel() == 1:
                self._scalars.setdefault(m, []).append(float(t.double().item()))
                continue
            self._constant[m] = self._constant.get(m, True) and _is_constant(t)
            self._constant_passes[m] = self._constant_passes.get(m, True) and \
                _mean_passes(t, self._tolerance)

    def record_rerun(self, first: List[torch.Tensor], second: List[torch.Tensor]) -> None:
        same = len(first) == len(second) and all(
            a.dtype == b.dtype and within_tolerance(b, a, self._tolerance, nan_equal=True)
            for a, b in zip(first, second))
        self._nondeterministic = not same

    def _per_output(self) -> Tuple[Dict[int, bool], Dict[int, bool]]:
        constant, passes = dict(self._constant), dict(self._constant_passes)
        for m, values in self._scalars.items():
            if len(values) < 2:  # one trial cannot tell a fixed answer from a computed one
                constant[m] = passes[m] = False
                continue
            constant[m] = all(v == values[0] for v in values)
            mean = torch.tensor(sum(values) / len(values), dtype=torch.float64)
            passes[m] = all(within_tolerance(mean.reshape(1),
                                             torch.tensor([v], dtype=torch.float64),
                                             self._tolerance) for v in values)
        return constant, passes

    def flags(self) -> Dict[str, Any]:
        seen = self._trials > 0 and self._elements > 0
        mostly_zero = seen and self._zeros >= MOSTLY_ZERO * self._elements
        constant_by, passes_by = self._per_output()
        constant = seen and bool(constant_by) and all(constant_by.values())
        passes = seen and bool(passes_by) and all(passes_by.values())
        reasons = []
        if seen and self._all_zero:
            reasons.append("all_zero: every output element of every trial is 0")
        elif mostly_zero:
            reasons.append(f"mostly_zero: {self._zeros} of {self._elements} output elements are "
                           "exactly 0")
        all_zero = seen and self._all_zero
        if constant and not all_zero:
            reasons.append("constant: " + "; ".join(
                f"output {m} is " + ("the same value in every trial" if m in self._scalars
                                     else "one repeated value") for m in sorted(constant_by)))
        elif passes and not all_zero:
            reasons.append("constant_passes: " + "; ".join(
                f"output {m}: " + ("one fixed value passes every trial" if m in self._scalars
                                   else "its mean, as a constant tensor, passes")
                for m in sorted(passes_by)))
        if self._nondeterministic:
            reasons.append("nondeterministic: a second run on trial 0's inputs does not match "
                           "the first")
        return {"all_zero": all_zero,
                "mostly_zero": mostly_zero,
                "constant": constant,
                "constant_passes": passes,
                "nondeterministic": self._nondeterministic,
                "reasons": reasons}
