"""Poisoned memory: output buffers and freed device memory hold NaN (floats) or 0x5A bytes (ints).

A kernel that leaves an output element unwritten, or returns memory it never wrote, then produces
values that can never pass the comparison.
"""

import math
from typing import List

import torch

POISON_BYTE = 0x5A
_FREED_MEMORY_MIN_BYTES = 256 << 20


def filled_tensor(shape: List[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A contiguous ``shape``/``dtype`` tensor on ``device``: NaN for floats, else 0x5A bytes."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    itemsize = torch.empty((), dtype=dtype).element_size()
    raw = torch.full((math.prod(shape) * itemsize,), POISON_BYTE, dtype=torch.uint8, device=device)
    return raw.view(dtype).reshape(shape)


def refill(tensor: torch.Tensor) -> None:
    """Poisons an existing contiguous tensor in place (same address): NaN or 0x5A bytes."""
    if tensor.dtype.is_floating_point:
        tensor.fill_(float("nan"))
    else:
        tensor.view(-1).view(torch.uint8).fill_(POISON_BYTE)


class _DeviceMemory:
    """A raw device range behind ``__cuda_array_interface__`` (no allocation, no ownership)."""

    def __init__(self, address: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes // 4,), "typestr": "<f4",
                                         "data": (address, False), "version": 2}


def poison_freed_cuda_memory(device: torch.device, working_set_bytes: int) -> None:
    """Fills every free block cached by PyTorch's CUDA allocator on ``device`` with NaN.

    First grows the cache by one block (at least 256 MiB or four times the working set, at most half
    of the free device memory) so that the candidate's allocations are served from cached, poisoned
    memory; then walks ``torch.cuda.memory_snapshot()`` and fills each inactive block in place,
    which covers the small-block pool and blocks freed by earlier trials. Does nothing for non-cuda
    devices.
    """
    if device.type != "cuda":
        return
    free_bytes, _ = torch.cuda.mem_get_info(device)
    size = min(max(_FREED_MEMORY_MIN_BYTES, 4 * working_set_bytes), free_bytes // 2)
    grow = torch.empty((size,), dtype=torch.uint8, device=device)
    del grow  # the block stays in the allocator's cache
    torch.cuda.synchronize(device)
    index = device.index if device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(index):
        for segment in torch.cuda.memory_snapshot():
            if segment.get("device", index) != index:
                continue
            address = segment["address"]
            for block in segment["blocks"]:  # contiguous, in address order
                if block["state"] == "inactive" and block["size"] >= 4:
                    torch.as_tensor(_DeviceMemory(address, block["size"]), device=device).fill_(
                        float("nan"))
                address += block["size"]
    torch.cuda.synchronize(device)
