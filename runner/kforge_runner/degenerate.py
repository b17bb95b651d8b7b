"""Degenerate-task checks on reference outputs (EVAL-PROTOCOL correctness rule 4).

A task whose output is all zero, almost all zero, constant, well approximated by its mean, or not
reproducible would reward trivial or lucky candidates; the flags are reported next to its
results. "Mostly zero" (at least MOSTLY_ZERO of all output elements exactly 0, e.g. KernelBench
level 2 #9, whose ReLU sees almost only negative values) is flagged even though an all-zero
candidate would fail on the few other elements: the task barely exercises the computation.
"""

from typing import Dict, List

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
        self._seen = False
        self._all_zero = True
        self._constant = True
        self._constant_passes = True
        self._nondeterministic = False
        self._zeros = 0
        self._elements = 0

    def add_trial(self, outputs: List[torch.Tensor]) -> None:
        # Each flag needs every trial to hold; once one trial breaks it, later trials skip the
        # (full-tensor) check.
        for t in outputs:
            t = t.detach()
            self._seen = True
            zeros = int((t == 0).sum())
            self._zeros += zeros
            self._elements += t.numel()
            self._all_zero = self._all_zero and zeros == t.numel()
            self._constant = self._constant and _is_constant(t)
            self._constant_passes = self._constant_passes and _mean_passes(t, self._tolerance)

    def record_rerun(self, first: List[torch.Tensor], second: List[torch.Tensor]) -> None:
        same = len(first) == len(second) and all(
            a.dtype == b.dtype and within_tolerance(b, a, self._tolerance, nan_equal=True)
            for a, b in zip(first, second))
        self._nondeterministic = not same

    def flags(self) -> Dict[str, bool]:
        mostly_zero = self._elements > 0 and self._zeros >= MOSTLY_ZERO * self._elements
        return {"all_zero": self._seen and self._all_zero,
                "mostly_zero": self._seen and mostly_zero,
                "constant": self._seen and self._constant,
                "constant_passes": self._seen and self._constant_passes,
                "nondeterministic": self._nondeterministic}
