# KForge e2e task GptOssExperts: extracted by `kforge e2e` from gpt_oss_moe.py (configuration real).
# Module class transformers.models.gpt_oss.modeling_gpt_oss.GptOssExperts; 4 instance(s) in the model, e.g. model.layers.0.mlp.experts.
# Shapes and dtypes as seen in the decode workload at batch size 32; kernels must handle other batch sizes too.
# Parameters are drawn around the values seen in the model.

import torch
import torch.nn as nn



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.empty([32, 2880, 5760], dtype=torch.bfloat16))
        nn.init.normal_(self.gate_up_proj, mean=-1.37029e-08, std=0.02)
        self.gate_up_proj_bias = nn.Parameter(torch.empty([32, 5760], dtype=torch.bfloat16))
        nn.init.normal_(self.gate_up_proj_bias, mean=0, std=0.02)
        self.down_proj = nn.Parameter(torch.empty([32, 2880, 2880], dtype=torch.bfloat16))
        nn.init.normal_(self.down_proj, mean=2.57877e-08, std=0.02)
        self.down_proj_bias = nn.Parameter(torch.empty([32, 2880], dtype=torch.bfloat16))
        nn.init.normal_(self.down_proj_bias, mean=0, std=0.02)
        self.alpha = 1.702
        self.hidden_size = 2880
        self.limit = 7.0

    def forward(self, hidden_states, router_indices=None, routing_weights=None):
        """
        When training it is more efficient to just loop over the experts and compute the output for each expert
        as otherwise the memory would explode.

        For inference we can sacrifice some memory and compute the output for all experts at once. By repeating the inputs.

        Args:
            hidden_states (torch.Tensor): (batch_size, seq_len, hidden_size)
            selected_experts (torch.Tensor): (batch_size * token_num, top_k)
            routing_weights (torch.Tensor): (batch_size * token_num, num_experts)
        Returns:
            torch.Tensor
        """
        batch_size = hidden_states.shape[0]
        hidden_states = hidden_states.reshape(-1, self.hidden_size)
        num_experts = routing_weights.shape[1]
        if hidden_states.device.type == 'cpu' or self.training:
            next_states = torch.zeros_like(hidden_states, dtype=hidden_states.dtype, device=hidden_states.device)
            with torch.no_grad():
                expert_mask = torch.nn.functional.one_hot(router_indices, num_classes=num_experts + 1)
                expert_mask = expert_mask.permute(2, 1, 0)
                expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
            for expert_idx in expert_hit[:]:
                expert_idx = expert_idx[0]
                if expert_idx == num_experts:
                    continue
                with torch.no_grad():
                    _, token_idx = torch.where(expert_mask[expert_idx])
                current_state = hidden_states[token_idx]
                gate_up = current_state @ self.gate_up_proj[expert_idx] + self.gate_up_proj_bias[expert_idx]
                gate, up = (gate_up[..., ::2], gate_up[..., 1::2])
                gate = gate.clamp(min=None, max=self.limit)
                up = up.clamp(min=-self.limit, max=self.limit)
                glu = gate * torch.sigmoid(gate * self.alpha)
                gated_output = (up + 1) * glu
                out = gated_output @ self.down_proj[expert_idx] + self.down_proj_bias[expert_idx]
                weighted_output = out * routing_weights[token_idx, expert_idx, None]
                next_states.index_add_(0, token_idx, weighted_output.to(hidden_states.dtype))
            next_states = next_states.view(batch_size, -1, self.hidden_size)
        else:
            hidden_states = hidden_states.repeat(num_experts, 1)
            hidden_states = hidden_states.view(num_experts, -1, self.hidden_size)
            gate_up = torch.bmm(hidden_states, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
            gate, up = (gate_up[..., ::2], gate_up[..., 1::2])
            gate = gate.clamp(min=None, max=self.limit)
            up = up.clamp(min=-self.limit, max=self.limit)
            glu = gate * torch.sigmoid(gate * self.alpha)
            next_states = torch.bmm((up + 1) * glu, self.down_proj)
            next_states = next_states + self.down_proj_bias[..., None, :]
            next_states = next_states.view(num_experts, batch_size, -1, self.hidden_size)
            next_states = next_states * routing_weights.transpose(0, 1).view(num_experts, batch_size, -1)[..., None]
            next_states = next_states.sum(dim=0)
        return next_states


def get_inputs():
    return [torch.randn([32, 1, 2880], dtype=torch.bfloat16), torch.randint(0, 32, [32, 4], dtype=torch.int64), torch.randn([32, 32], dtype=torch.bfloat16) * (torch.rand([32, 32]) >= 0.875).to(torch.bfloat16)]


def get_init_inputs():
    return []
