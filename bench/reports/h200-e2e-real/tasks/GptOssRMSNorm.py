# KForge e2e task GptOssRMSNorm: extracted by `kforge e2e` from gpt_oss_moe.py (configuration real).
# Module class transformers.models.gpt_oss.modeling_gpt_oss.GptOssRMSNorm; 9 instance(s) in the model, e.g. model.layers.0.input_layernorm.
# Shapes and dtypes as seen in the decode workload at batch size 32; kernels must handle other batch sizes too.
# Parameters are drawn around the values seen in the model.

import torch
import torch.nn as nn



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.empty([2880], dtype=torch.bfloat16))
        nn.init.normal_(self.weight, mean=1, std=0.1)
        self.variance_epsilon = 1e-05

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


def get_inputs():
    return [torch.randn([32, 1, 2880], dtype=torch.bfloat16)]


def get_init_inputs():
    return []
