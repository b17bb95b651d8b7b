"""gpt-oss decode step: rotary position embedding of the new token's queries and keys.

cos/sin from the positions and the YaRN-scaled inverse frequencies (a buffer), applied to the
two halves of each head (transformers' _apply_rotary_emb). Shapes of gpt-oss-20b: 64 query
heads, 8 KV heads, head_dim 64; one new token per sequence; bf16."""
import math
import torch
import torch.nn as nn

batch_size = 128
num_heads = 64
num_kv_heads = 8
head_dim = 64
max_position = 4096


def _yarn_inv_freq(dim, base=150000.0, factor=32.0, original=4096, beta_fast=32.0, beta_slow=1.0):
    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))
    low, high = max(correction_dim(beta_fast), 0), min(correction_dim(beta_slow), dim - 1)
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    keep = 1 - ramp
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - keep) + (1.0 / pos_freqs) * keep
    return inv_freq, 0.1 * math.log(factor) + 1.0


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        inv_freq, self.scaling = _yarn_inv_freq(head_dim)
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, q, k, positions):
        freqs = positions[:, None].float() * self.inv_freq[None, :]
        cos = (freqs.cos() * self.scaling).to(q.dtype)[:, None, None, :]
        sin = (freqs.sin() * self.scaling).to(q.dtype)[:, None, None, :]

        def rotate(x):
            first, second = torch.chunk(x, 2, dim=-1)
            return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
        return rotate(q), rotate(k)


def get_inputs():
    q = torch.randn(batch_size, num_heads, 1, head_dim, dtype=torch.bfloat16)
    k = torch.randn(batch_size, num_kv_heads, 1, head_dim, dtype=torch.bfloat16)
    positions = torch.randint(0, max_position, (batch_size,), dtype=torch.int64)
    return [q, k, positions]


def get_init_inputs():
    return [head_dim]
