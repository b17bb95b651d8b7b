"""Hands candidates clones of their inputs and checks afterwards that the clones are unchanged.

Values are tensors or Python numbers (numbers are immutable and never checked).
"""

from typing import Any, List

import torch


def clones(values: List[Any]) -> List[Any]:
    """Fresh contiguous copies of the tensors in ``values``; numbers pass through."""
    return [v.clone().contiguous() if isinstance(v, torch.Tensor) else v for v in values]


def identical(original: torch.Tensor, seen: torch.Tensor) -> bool:
    """Exact equality of shape, dtype and every element; NaN equals NaN in the same position."""
    if original.shape != seen.shape or original.dtype != seen.dtype:
        return False
    if original.device != seen.device:
        seen = seen.to(original.device)
    same = original == seen
    if original.is_floating_point():
        same |= original.isnan() & seen.isnan()
    return bool(same.all())


def unchanged(originals: List[Any], handed: List[Any]) -> bool:
    """True when every tensor handed to the candidate still equals its original exactly."""
    return all(identical(o, h) for o, h in zip(originals, handed) if isinstance(o, torch.Tensor))
