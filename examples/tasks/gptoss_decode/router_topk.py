"""gpt-oss decode step: the MoE router (linear + top-k + softmax over the chosen logits).

Returns the dense routing scores (zero except the top-k experts of each token) and the chosen
experts' indices, as transformers' GptOssTopKRouter does. Shapes of gpt-oss-20b: hidden 2880,
32 experts, top 4; bf16."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
hidden_size = 2880
num_experts = 32
top_k = 4


class Model(nn.Module):
    def __init__(self, hidden_size, num_experts, top_k):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_experts, hidden_size, dtype=torch.bfloat16) * 0.02)
        self.bias = nn.Parameter(torch.randn(num_experts, dtype=torch.bfloat16) * 0.02)
        self.top_k = top_k

    def forward(self, hidden):
        logits = F.linear(hidden, self.weight, self.bias)
        top_value, top_index = torch.topk(logits, self.top_k, dim=-1)
        top_value = F.softmax(top_value, dim=1, dtype=top_value.dtype)
        scores = torch.zeros_like(logits).scatter_(1, top_index, top_value)
        return scores, top_index


def get_inputs():
    return [torch.randn(batch_size, hidden_size, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden_size, num_experts, top_k]
