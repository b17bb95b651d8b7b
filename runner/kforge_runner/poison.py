"""Poisoned memory: output buffers and freed device memory hold NaN (floats) or 0x5A bytes (integers).

A kernel that leaves an output element unwritten, or reuses stale memory, then produces values that
can never pass the comparison.
"""

from typing import List

import torch

POISON_BYTE = 0x5A
_FREED_MEMORY_MIN_BYTES = 256 << 20
_SMALL_BLOCK_BYTES = 512 << 10
_SMALL_BLOCKS = 64


def filled_tensor(shape: List[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A contiguous tensor of ``shape``/``dtype`` on ``device``: NaN for floats, 0x5A bytes otherwise."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    itemsize = torch.empty((), dtype=dtype).element_size()
    numel = 1
    for d in shape:
        numel *= d
    raw = torch.full((numel * itemsize,), POISON_BYTE, dtype=torch.uint8, device=device)
    return raw.view(dtype).reshape(shape)


def poison_freed_cuda_memory(device: torch.device, working_set_bytes: int) -> None:
    """Fills memory that PyTorch's caching allocator will hand out next with NaN.

    Allocates one large block (at least 256 MiB or four times the working set, at most half of the
    free memory) and a set of small blocks (the allocator keeps blocks under 1 MiB in a separate
    pool), fills them with NaN and frees them; the cached blocks are then reused by the candidate's
    allocations. Does nothing for non-cuda devices.
    """
    if device.type != "cuda":
        return
    free_bytes, _ = torch.cuda.mem_get_info(device)
    large = min(max(_FREED_MEMORY_MIN_BYTES, 4 * working_set_bytes), free_bytes // 2)
    blocks = [torch.full((large // 4,), float("nan"), dtype=torch.float32, device=device)]
    blocks += [torch.full((_SMALL_BLOCK_BYTES // 4,), float("nan"), dtype=torch.float32, device=device)
               for _ in range(_SMALL_BLOCKS)]
    torch.cuda.synchronize(device)
    del blocks
