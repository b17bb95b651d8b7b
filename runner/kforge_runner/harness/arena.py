"""The harness's mapping of the arena: the parent's memfd at fd 4, shared with the parent.

Tensors in it are C-contiguous little-endian bytes at 64-byte aligned offsets (runner/HARNESS.md,
"Transport"). ``view`` aliases a region as a CPU tensor (no copy): the parent rewrites regions
between commands, so whatever must outlive a command is copied out of it (``read``).
"""

import mmap
import os
from typing import Any, Union

import numpy as np
import torch

from kforge_runner import poison, tensor_files
from kforge_runner.harness.messages import ProtocolError, Region, TensorDesc

ARENA_FD = 4


class Arena:
    def __init__(self, size: int, fd: int = ARENA_FD):
        actual = os.fstat(fd).st_size
        if actual < size:
            raise ProtocolError(f"hello.arena_bytes: {size}, but the arena at fd {fd} holds "
                                f"{actual} bytes")
        self.size = size
        self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) \
            if size else None

    def check(self, region: Region, what: str) -> None:
        if region.offset + region.bytes > self.size:
            raise ProtocolError(f"{what}: region [{region.offset}, {region.offset + region.bytes}) "
                                f"lies outside the arena of {self.size} bytes")

    def view(self, desc: TensorDesc) -> torch.Tensor:
        """The region as a CPU tensor of the descriptor's dtype and shape, aliasing the arena."""
        dtype = tensor_files.torch_dtype(desc.dtype)
        if desc.numel == 0:
            return torch.empty(desc.shape, dtype=dtype)
        return torch.frombuffer(self._map, dtype=dtype, count=desc.numel,
                                offset=desc.region.offset).view(desc.shape)

    def bytes_view(self, region: Region) -> torch.Tensor:
        """The region's bytes as a uint8 CPU tensor aliasing the arena."""
        if region.bytes == 0:
            return torch.empty(0, dtype=torch.uint8)
        return torch.frombuffer(self._map, dtype=torch.uint8, count=region.bytes,
                                offset=region.offset)

    def numpy_view(self, desc: TensorDesc) -> np.ndarray:
        """The region as a writable numpy array (bfloat16 as int16 bit patterns), aliasing it."""
        dtype = np.dtype(tensor_files.NUMPY_DTYPES[desc.dtype])
        if desc.numel == 0:
            return np.empty(desc.shape, dtype=dtype)
        return np.frombuffer(self._map, dtype=dtype, count=desc.numel,
                             offset=desc.region.offset).reshape(desc.shape)

    def read(self, desc: TensorDesc) -> Union[torch.Tensor, int, float]:
        """A private copy of the region: a CPU tensor, or a Python number for a scalar."""
        tensor = self.view(desc).clone()
        if desc.scalar == "int":
            return int(tensor.item())
        if desc.scalar == "float":
            return float(tensor.item())
        return tensor

    def write(self, desc: TensorDesc, value: Any) -> None:
        """Copies a tensor of the descriptor's dtype and shape (on any device), or a Python
        number for a scalar descriptor, into the region."""
        target = self.view(desc)
        if isinstance(value, torch.Tensor):
            target.copy_(value.detach().reshape(target.shape))
        else:
            target.fill_(float(value))

    def write_bytes(self, region: Region, value: torch.Tensor) -> None:
        """Copies the raw bytes of a contiguous tensor of exactly ``region.bytes`` bytes."""
        flat = value.detach().contiguous().reshape(-1)
        self.bytes_view(region).copy_(flat.view(torch.uint8) if flat.numel() else flat)

    def poison(self, desc: TensorDesc) -> None:
        """Fills the region with NaN (floats) or 0x5A bytes (integers, bool)."""
        poison.refill(self.view(desc))
