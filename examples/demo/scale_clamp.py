import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies a matrix by a scalar, then clamps the result to [-limit, limit]."""

    def __init__(self, limit):
        super(Model, self).__init__()
        self.limit = limit

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return torch.clamp(A * s, -self.limit, self.limit)


M = 4096
N = 1024


def get_inputs():
    A = torch.randn(M, N)
    s = 3.14
    return [A, s]


def get_init_inputs():
    return [5.0]
