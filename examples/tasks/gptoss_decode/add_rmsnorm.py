"""gpt-oss decode step: the residual add and the RMSNorm that follows it (post-attention norm).

Returns the normalised hidden states and the new residual stream, as the decoder layer uses
both. bf16 storage, fp32 math inside the norm (transformers' GptOssRMSNorm). Shapes of
gpt-oss-20b: hidden 2880; `batch_size` tokens decoded at once (1 and 128 in the suite)."""
import torch
import torch.nn as nn

batch_size = 128
hidden_size = 2880
eps = 1e-5


class Model(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, dtype=torch.bfloat16) * 0.1 + 1.0)
        self.eps = eps

    def forward(self, hidden, residual):
        residual = residual + hidden
        x = residual.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return (self.weight * x.to(torch.bfloat16)), residual


def get_inputs():
    return [torch.randn(batch_size, hidden_size, dtype=torch.bfloat16),
            torch.randn(batch_size, hidden_size, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden_size, eps]
