"""Element-wise a + b with a CuTe DSL kernel: one thread per element over the flattened
tensors, compiled once with dynamic layouts and reused for every shape."""
import torch
import torch.nn as nn
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < n:
        gC[i] = gA[i] + gB[i]


@cute.jit
def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, n: cutlass.Int32):
    add_kernel(mA, mB, mC, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1),
                                     block=(THREADS, 1, 1))


def _wrap(t: torch.Tensor):
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic()


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self._compiled = None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        shape = a.shape
        a = a.contiguous().view(-1)
        b = b.contiguous().view(-1)
        out = torch.empty_like(a)
        n = out.numel()
        if n > 0:
            args = (_wrap(a), _wrap(b), _wrap(out), cutlass.Int32(n))
            if self._compiled is None:
                self._compiled = cute.compile(add, *args)
            self._compiled(*args)
        return out.view(shape)
