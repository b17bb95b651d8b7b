import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Adds two vectors element by element: out = a + b.

    A hand-written problem in KernelBench format, used as the smallest possible task when testing
    the orchestrator end to end (task loading, overrides, every backend's template).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """
        Args:
            a (torch.Tensor): Input vector of shape (n,).
            b (torch.Tensor): Input vector of shape (n,).

        Returns:
            torch.Tensor: a + b, shape (n,).
        """
        return a + b


n = 1 << 20


def get_inputs():
    a = torch.rand(n)
    b = torch.rand(n)
    return [a, b]


def get_init_inputs():
    return []  # No special initialization inputs needed
