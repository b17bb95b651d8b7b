"""gpt-oss decode step: the final RMSNorm and the LM head (logits over the vocabulary).

Shapes of gpt-oss-20b: hidden 2880, vocabulary 201088 (the head's weight is 1.16 GB in bf16: a
memory-bound matrix-vector product at small batches); bf16 storage, fp32 math in the norm."""
import torch
import torch.nn as nn

batch_size = 128
hidden_size = 2880
vocab_size = 201088
eps = 1e-5


class Model(nn.Module):
    def __init__(self, hidden_size, vocab_size, eps):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.randn(hidden_size, dtype=torch.bfloat16) * 0.1 + 1.0)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False, dtype=torch.bfloat16)
        self.eps = eps

    def forward(self, hidden):
        x = hidden.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        x = self.norm_weight * x.to(torch.bfloat16)
        return self.lm_head(x)


def get_inputs():
    return [torch.randn(batch_size, hidden_size, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden_size, vocab_size, eps]
