"""Element-wise a + b with a Metal kernel compiled by torch.mps.compile_shader; one thread per
element, the tail guarded by the element count."""
import torch
import torch.nn as nn

SHADER = r"""
#include <metal_stdlib>
using namespace metal;

kernel void add_kernel(device const float* a [[buffer(0)]],
                       device const float* b [[buffer(1)]],
                       device float* out [[buffer(2)]],
                       constant long& n [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
  if (long(i) < n) out[i] = a[i] + b[i];
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.lib = torch.mps.compile_shader(SHADER)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = out.numel()
        if n > 0:
            group = 256
            threads = (n + group - 1) // group * group
            self.lib.add_kernel(a, b, out, n, threads=threads, group_size=group)
        return out
