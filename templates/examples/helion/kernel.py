"""Element-wise a + b with a Helion kernel: one 2-D tile loop, its body on the GPU; a fixed config,
so no autotuning runs at the first call."""
import torch
import torch.nn as nn
import helion
import helion.language as hl


@helion.kernel(config=helion.Config(block_sizes=[4, 1024], num_warps=8), static_shapes=True)
def add_kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    for tile in hl.tile(out.size()):
        out[tile] = a[tile] + b[tile]
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_kernel(a.contiguous(), b.contiguous())
