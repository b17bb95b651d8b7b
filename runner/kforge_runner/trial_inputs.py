"""The input distributions of the reference phase's trials (EVAL-PROTOCOL correctness rule 2).

Every trial starts from the task's own draw: ``torch.manual_seed(seed)`` then ``get_inputs()``.
``task`` keeps it. ``normal`` and ``uniform`` redraw every floating-point tensor (a second
distribution). The others are *shortcut-finding* transformations of the task's draw, each aimed at
a class of kernels that are right only on the task's distribution:

- ``scaled``: floating tensors times SCALE (large magnitudes: a softmax without max subtraction
  overflows; exp(x) overflows fp32 beyond 88);
- ``negative``: floating tensors made all negative (``-|x|``; an exact zero becomes minus the
  tensor's mean magnitude): a max seeded with 0, a ReLU-shaped shortcut;
- ``dominant``: in every row (last dimension) of a floating tensor one element, at a random
  position, becomes ``max + DOMINANT_MARGIN * (max - min + 1)``: a row's maximum dominates (a
  softmax row of rand inputs becomes one-hot to fp32 precision for rows up to ~10^6 long);
- ``sorted``: every tensor (floating, integer, bool) sorted ascending over its flat index, floating
  tensors first scaled as in ``scaled``: the task's values in order of size, a strong dependence on
  position, and magnitudes at which thresholds (clamps, margins, ReLUs) engage in one part of the
  tensor and not in another, so a kernel that reads part of its input (or estimates a mean from a
  sample, or ignores which target goes with which prediction) is visibly wrong (a HingeLoss over
  sorted torch.rand predictions without the scale is 1 wherever it reads);
- ``ties``: floating tensors quantised to TIE_LEVELS values over their range, drawn only when the
  reference returns an integer output (indices): ties must be broken as the reference breaks them;
- ``shape``: the task's draw at a second shape (kforge_runner.size_params), drawn only when the
  task's sizes are parameters.

Transformations keep each tensor's dtype, shape and device. Python scalars are never changed.
"""

from typing import Any, List, Tuple

import torch

from kforge_runner.protocol import SHORTCUT_DISTRIBUTIONS, TASK_DISTRIBUTIONS

TASK_OWN = TASK_DISTRIBUTIONS
SHORTCUTS = SHORTCUT_DISTRIBUTIONS

SCALE = 100.0
DOMINANT_MARGIN = 8.0
TIE_LEVELS = 8


def redraw(inputs: List[Any], distribution: str, seed: int) -> List[Any]:
    """Replaces every floating-point tensor with N(0, 1) or U(-1, 1) samples of its shape and dtype.

    Samples come from a CPU generator seeded with the trial's seed (float32, or float64 for float64
    tensors), so they do not depend on the device.
    """
    generator = torch.Generator().manual_seed(seed)
    redrawn = []
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            draw_dtype = torch.float64 if value.dtype == torch.float64 else torch.float32
            if distribution == "normal":
                sample = torch.randn(value.shape, generator=generator, dtype=draw_dtype)
            else:
                sample = torch.rand(value.shape, generator=generator, dtype=draw_dtype) * 2 - 1
            value = sample.to(value.device).to(value.dtype)
        redrawn.append(value)
    return redrawn


def has_float_tensor(inputs: List[Any]) -> bool:
    return any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in inputs)


def _is_float(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() > 0


def _negative(x: torch.Tensor) -> torch.Tensor:
    magnitude = x.abs()
    fill = magnitude.double().mean().item() or 1.0
    return torch.where(magnitude == 0, torch.full_like(x, fill), magnitude).neg()


def _dominant(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    if x.dim() == 0 or x.shape[-1] < 2:
        return x
    rows = x.reshape(-1, x.shape[-1]).double()
    top, bottom = rows.max(dim=1).values, rows.min(dim=1).values
    spike = top + DOMINANT_MARGIN * (top - bottom + 1)
    where = torch.randint(0, x.shape[-1], (rows.shape[0],), generator=generator)
    rows = rows.clone()
    rows[torch.arange(rows.shape[0], device=rows.device), where.to(rows.device)] = spike
    return rows.reshape(x.shape).to(x.dtype)


def _sorted(x: torch.Tensor) -> torch.Tensor:
    if x.numel() < 2:
        return x
    flat = x.reshape(-1)
    if flat.dtype == torch.bool:
        return flat.to(torch.uint8).sort().values.to(torch.bool).reshape(x.shape)
    return flat.sort().values.reshape(x.shape)


def _ties(x: torch.Tensor) -> torch.Tensor:
    d = x.double()
    low, high = d.min(), d.max()
    if not bool(high > low):
        return x
    steps = TIE_LEVELS - 1
    q = torch.round((d - low) / (high - low) * steps) / steps * (high - low) + low
    return q.to(x.dtype)


def transform(inputs: List[Any], distribution: str, seed: int) -> Tuple[List[Any], str]:
    """The shortcut transformation ``distribution`` of the task's draw ``inputs``; returns the new
    inputs and a note (empty, or why nothing could change: the caller skips such a trial)."""
    generator = torch.Generator().manual_seed(seed ^ 0x5DEECE66D)
    out: List[Any] = []
    changed = False
    for value in inputs:
        new = value
        if distribution == "sorted" and isinstance(value, torch.Tensor) and value.numel() > 1:
            new = _sorted(value * SCALE if _is_float(value) else value)
        elif _is_float(value):
            if distribution == "scaled":
                new = value * SCALE
            elif distribution == "negative":
                new = _negative(value)
            elif distribution == "dominant":
                new = _dominant(value, generator)
            elif distribution == "ties":
                new = _ties(value)
        changed = changed or new is not value
        out.append(new)
    if not changed:
        return inputs, f"no input tensor that {distribution} inputs could change"
    return out, ""
