"""gpt-oss decode step: the MoE experts (clamped SwiGLU) and the combine of their outputs.

The reference is transformers' dense inference path: every one of the 32 experts runs on every
token and the outputs are summed, weighted by the routing scores, which are zero except for each
token's top 4 experts. A kernel that reads only the routed experts' weights computes the same
function (for any scores: it must read every expert whose score is non-zero). Shapes of
gpt-oss-20b: hidden 2880, expert width 2880, 32 experts; bf16."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
hidden_size = 2880
expert_dim = 2880
num_experts = 32
top_k = 4


class Model(nn.Module):
    def __init__(self, hidden_size, expert_dim, num_experts):
        super().__init__()
        bf16 = torch.bfloat16
        self.gate_up_proj = nn.Parameter(
            torch.randn(num_experts, hidden_size, 2 * expert_dim, dtype=bf16) * 0.02)
        self.gate_up_proj_bias = nn.Parameter(torch.randn(num_experts, 2 * expert_dim, dtype=bf16) * 0.02)
        self.down_proj = nn.Parameter(
            torch.randn(num_experts, expert_dim, hidden_size, dtype=bf16) * 0.02)
        self.down_proj_bias = nn.Parameter(torch.randn(num_experts, hidden_size, dtype=bf16) * 0.02)
        self.alpha = 1.702
        self.limit = 7.0

    def forward(self, hidden, routing_scores):
        tokens = hidden.shape[0]
        experts = routing_scores.shape[1]
        x = hidden.repeat(experts, 1).view(experts, tokens, -1)
        gate_up = torch.bmm(x, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        out = torch.bmm((up + 1) * glu, self.down_proj) + self.down_proj_bias[..., None, :]
        out = out * routing_scores.transpose(0, 1)[..., None]
        return out.sum(dim=0)


def get_inputs():
    hidden = torch.randn(batch_size, hidden_size, dtype=torch.bfloat16)
    logits = torch.randn(batch_size, num_experts)
    top_value, top_index = torch.topk(logits, top_k, dim=-1)
    scores = torch.zeros(batch_size, num_experts).scatter_(1, top_index, F.softmax(top_value, dim=1))
    return [hidden, scores.to(torch.bfloat16)]


def get_init_inputs():
    return [hidden_size, expert_dim, num_experts]
