"""gpt-oss decode step: greedy sampling, the index of the largest logit of each sequence.

The first index wins a tie (torch.argmax). Vocabulary of gpt-oss-20b (201088); bf16 logits."""
import torch
import torch.nn as nn

batch_size = 128
vocab_size = 201088


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits):
        return torch.argmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, vocab_size, dtype=torch.bfloat16) * 3]


def get_init_inputs():
    return []
