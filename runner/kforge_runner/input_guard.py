"""Hands candidates clones of their inputs and checks afterwards that the clones are unchanged.

Values are tensors or Python numbers (numbers are immutable and never checked).
"""

from typing import Any, Callable, List, Optional, Set

import torch

_MAX_REALLOCATIONS = 8


def at_new_address(make: Callable[[], torch.Tensor], used: Optional[Set[int]]) -> torch.Tensor:
    """``make()``, repeated (holding the earlier results meanwhile) until the tensor starts at an
    address not in ``used``, which then records it. Trials of one phase so never share buffer
    addresses: a result cached by address cannot be handed back by a later trial."""
    tensor = make()
    if used is None or tensor.numel() == 0:
        return tensor
    held = []
    while tensor.data_ptr() in used and len(held) < _MAX_REALLOCATIONS:
        held.append(tensor)
        tensor = make()
    used.add(tensor.data_ptr())
    return tensor


def clones(values: List[Any], used: Optional[Set[int]] = None) -> List[Any]:
    """Fresh contiguous copies of the tensors in ``values``; numbers pass through. With ``used``,
    each copy lies at an address not used before (at_new_address)."""
    return [at_new_address(lambda v=v: v.clone().contiguous(), used)
            if isinstance(v, torch.Tensor) else v for v in values]


def identical(original: torch.Tensor, seen: torch.Tensor) -> bool:
    """Exact equality of shape, dtype and every element; NaN equals NaN in the same position."""
    if original.shape != seen.shape or original.dtype != seen.dtype:
        return False
    if original.device != seen.device:
        seen = seen.to(original.device)
    if original.is_contiguous() and seen.is_contiguous() and original.numel() > 0:
        # Same bytes is the common answer and the cheapest to establish (one pass, no temporaries);
        # otherwise the element rule below decides (-0.0 equals 0.0, NaN equals NaN).
        if same_bytes(original, seen):
            return True
    same = original == seen
    if original.is_floating_point():
        same |= original.isnan() & seen.isnan()
    return bool(same.all())


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as integers of its element size (bool as uint8)."""
    size = t.element_size()
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(size)
    if as_int is None:
        return t
    return t.reshape(-1).view(as_int)


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two contiguous tensors of one dtype, shape and device hold the same bytes."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        _bits(a.contiguous()), _bits(b.contiguous()))


def unchanged(originals: List[Any], handed: List[Any]) -> bool:
    """True when every tensor handed to the candidate still equals its original exactly."""
    return all(identical(o, h) for o, h in zip(originals, handed) if isinstance(o, torch.Tensor))
