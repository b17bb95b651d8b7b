"""gpt-oss decode step: attention of one new query token over the KV cache, with learned sinks.

Grouped KV heads (64 query heads share 8 KV heads), scale 1/sqrt(head_dim), a per-head sink logit
that joins the softmax but not the output (transformers' eager_attention_forward for gpt-oss).
A full-attention layer over `context` cached positions. Shapes of gpt-oss-20b; bf16."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
num_heads = 64
num_kv_heads = 8
head_dim = 64
context = 1024


class Model(nn.Module):
    def __init__(self, num_heads, num_kv_heads, head_dim):
        super().__init__()
        self.sinks = nn.Parameter(torch.randn(num_heads, dtype=torch.bfloat16))
        self.groups = num_heads // num_kv_heads
        self.scaling = head_dim ** -0.5

    def forward(self, q, keys, values):
        keys = keys.repeat_interleave(self.groups, dim=1)
        values = values.repeat_interleave(self.groups, dim=1)
        scores = torch.matmul(q, keys.transpose(2, 3)) * self.scaling
        sinks = self.sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[2], -1)
        combined = torch.cat([scores, sinks.to(scores.dtype)], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined, dim=-1, dtype=combined.dtype)[..., :-1]
        return torch.matmul(probs, values)


def get_inputs():
    q = torch.randn(batch_size, num_heads, 1, head_dim, dtype=torch.bfloat16)
    keys = torch.randn(batch_size, num_kv_heads, context, head_dim, dtype=torch.bfloat16)
    values = torch.randn(batch_size, num_kv_heads, context, head_dim, dtype=torch.bfloat16)
    return [q, keys, values]


def get_init_inputs():
    return [num_heads, num_kv_heads, head_dim]
