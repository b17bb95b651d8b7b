"""A gpt-oss-style mixture-of-experts decoder for `kforge e2e` (contract: docs/e2e.md).

Two implementations of the same architecture, both with random weights (nothing is downloaded):

- Hugging Face transformers' ``GptOssForCausalLM`` built from a ``GptOssConfig``, when
  ``transformers`` (with gpt-oss support) is importable and the environment variable
  ``KFORGE_E2E_IMPL`` is not ``inrepo``;
- otherwise the re-implementation below, which runs on torch 1.13: RMSNorm; attention with learned
  sinks, grouped KV heads and alternating sliding-window / full layers; rotary embeddings with
  YaRN scaling; a top-k router over the experts; clamped SwiGLU experts; the MoE finalize as the
  routing-weighted sum of the expert outputs. Module names and parameter layouts follow
  transformers' modeling_gpt_oss.py (model.layers.N.mlp.experts.gate_up_proj, ...), so the same
  kernel sites appear in either.

The workload is greedy decoding: a prompt of ``prompt_len`` random tokens is prefilled, then each
``DecodeSession.step()`` decodes one token for every sequence of the batch.
"""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Named configurations. Architecture fields follow GptOssConfig's names; the others describe the
# workload (docs/e2e.md). `real` has gpt-oss-20b's layer dimensions with 4 of its 24 layers and a
# vocabulary cut to 32k (the 201k-row embedding and head would dominate a 4-layer model).
CONFIGS = {
    "tiny": {
        "hidden_size": 64,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 256,
        "sliding_window": 4,
        "rope_theta": 150000.0,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": False, "original_max_position_embeddings": 4096},
        "rms_norm_eps": 1e-5,
        "swiglu_limit": 7.0,
        "max_position_embeddings": 131072,
        "dtype": "float32",
        "policy": "strict",
        "batch_sizes": [1, 4, 8],
        "task_batch_size": 4,
        "prompt_len": 8,
        "decode_steps": 24,
    },
    "real": {
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": 4,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "vocab_size": 32768,
        "sliding_window": 128,
        "rope_theta": 150000.0,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": False, "original_max_position_embeddings": 4096},
        "rms_norm_eps": 1e-5,
        "swiglu_limit": 7.0,
        "max_position_embeddings": 131072,
        "dtype": "bfloat16",
        "policy": "mixed",
        "batch_sizes": [1, 8, 32, 128],
        "task_batch_size": 32,
        "prompt_len": 32,
        "decode_steps": 32,
    },
}

_ARCH_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "head_dim", "num_local_experts", "num_experts_per_tok",
              "vocab_size", "sliding_window", "rope_theta", "rope_scaling", "rms_norm_eps",
              "swiglu_limit", "max_position_embeddings")


def _transformers_config(config):
    """transformers' GptOssConfig for `config`, or None when transformers cannot provide one."""
    if os.environ.get("KFORGE_E2E_IMPL", "") == "inrepo":
        return None
    try:
        from transformers import GptOssConfig  # noqa: F401
    except Exception:  # absent, or too old for gpt-oss, or incompatible with this torch
        return None
    layers = config["num_hidden_layers"]
    return GptOssConfig(
        **{k: config[k] for k in _ARCH_KEYS},
        layer_types=["sliding_attention" if i % 2 == 0 else "full_attention"
                     for i in range(layers)],
        attention_bias=True, tie_word_embeddings=False, attn_implementation="eager")


def implementation(config):
    """Which implementation build_model() uses, for the report."""
    if _transformers_config(config) is not None:
        import transformers
        return f"transformers {transformers.__version__} GptOssForCausalLM (random weights)"
    return "in-repo re-implementation of GptOssForCausalLM (examples/e2e/gpt_oss_moe.py)"


def build_model(config):
    """The model with random weights from the current torch RNG, in eval mode, on the CPU, in the
    configuration's dtype."""
    dtype = getattr(torch, config["dtype"])
    hf_config = _transformers_config(config)
    if hf_config is not None:
        import transformers
        model = transformers.GptOssForCausalLM(hf_config)
    else:
        model = GptOssForCausalLM(config)
    return model.to(dtype).eval()


def new_session(model, config, batch_size, device, max_new_tokens):
    """A greedy decoding session over a fresh random prompt (seeded by batch size)."""
    generator = torch.Generator().manual_seed(1000 + batch_size)
    prompt = torch.randint(0, config["vocab_size"], (batch_size, config["prompt_len"]),
                           generator=generator).to(device)
    if _transformers_config(config) is not None:
        return _HfSession(model, prompt, max_new_tokens, config.get("kv_cache", "static"))
    return _InRepoSession(model, config, prompt, max_new_tokens)


class _GreedySession:
    """Greedy decoding over a prompt; subclasses give `_forward(tokens)` -> logits [batch, len,
    vocab], which advances their cache and `_position`."""

    def __init__(self, prompt):
        self._position = 0
        self.next_tokens = self._forward(prompt)[:, -1].argmax(-1, keepdim=True)

    def _forward(self, tokens):
        raise NotImplementedError

    def step(self, tokens=None):
        """Decodes one token per sequence, feeding `tokens` [batch, 1] if given (teacher forcing)
        or else the greedy choice of the previous step; returns this step's logits [batch, vocab]
        (float32)."""
        fed = self.next_tokens if tokens is None else tokens.to(self.next_tokens.device)
        logits = self._forward(fed)[:, -1].float()
        self.next_tokens = logits.argmax(-1, keepdim=True)
        return logits


class _HfSession(_GreedySession):
    """Decoding through a transformers cache: `static` (StaticCache of one capacity, CAPACITY
    steps past the prompt unless `max_new_tokens` needs more, positions passed explicitly) or
    `dynamic` (DynamicCache).

    Static is the default because torch.compile keeps one graph with it: a DynamicCache changes
    the cached tensors' shapes and strides every step, and on the H200 (2026-11-29, bench/
    RESULTS.md) dynamo hit its recompile limit and ran the rest eagerly. Both give the same
    logits (within 2.1e-7 on the tiny configuration, fp32, torch 2.11, the CPU)."""

    CAPACITY = 128  # decode steps a static cache holds by default

    def __init__(self, model, prompt, max_new_tokens, kv_cache):
        from transformers import DynamicCache, StaticCache
        self._model = model
        if kv_cache == "static":
            # One capacity for every session (unless one needs more): a new cache length is a
            # new shape, and with the per-layer frames transformers' decoder compiles into, a
            # few lengths were enough to reach dynamo's recompile limit on the CPU.
            capacity = max(max_new_tokens, self.CAPACITY)
            self._cache = StaticCache(config=model.config,
                                      max_cache_len=prompt.shape[1] + capacity + 1)
        elif kv_cache == "dynamic":
            self._cache = DynamicCache()
        else:
            raise ValueError(f"kv_cache {kv_cache!r}: use 'static' or 'dynamic'")
        self._static = kv_cache == "static"
        super().__init__(prompt)

    def _forward(self, tokens):
        kwargs = {}
        if self._static:
            positions = torch.arange(self._position, self._position + tokens.shape[1],
                                     device=tokens.device)
            kwargs = {"cache_position": positions,
                      "position_ids": positions.unsqueeze(0).expand(tokens.shape[0], -1)}
        with torch.no_grad():
            out = self._model(input_ids=tokens, past_key_values=self._cache, use_cache=True,
                              **kwargs)
        self._position += tokens.shape[1]
        return out.logits


class _InRepoSession(_GreedySession):
    """Decoding through a preallocated KV cache."""

    def __init__(self, model, config, prompt, max_new_tokens):
        self._model = model
        inner = model.model if hasattr(model, "model") else model
        batch = prompt.shape[0]
        length = prompt.shape[1] + max_new_tokens + 1
        self._cache = KvCache(config, batch, length, prompt.device,
                              next(inner.parameters()).dtype)
        super().__init__(prompt)

    def _forward(self, tokens):
        with torch.no_grad():
            logits = self._model(tokens, self._cache, self._position)
        self._position += tokens.shape[1]
        return logits


# ---- The in-repo implementation (torch 1.13 and later) ----------------------------------------


class KvCache:
    """Keys and values of every layer, [batch, kv_heads, max_len, head_dim] each."""

    def __init__(self, config, batch, max_len, device, dtype):
        shape = (batch, config["num_key_value_heads"], max_len, config["head_dim"])
        self.keys = [torch.zeros(shape, device=device, dtype=dtype)
                     for _ in range(config["num_hidden_layers"])]
        self.values = [torch.zeros(shape, device=device, dtype=dtype)
                       for _ in range(config["num_hidden_layers"])]


class GptOssRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


class GptOssTopKRouter(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config["num_experts_per_tok"]
        self.num_experts = config["num_local_experts"]
        self.hidden_dim = config["hidden_size"]
        self.weight = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim))
        self.bias = nn.Parameter(torch.empty(self.num_experts))

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states, self.weight, self.bias)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        router_top_value = F.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
        router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices,
                                                                 router_top_value)
        return router_scores, router_indices


class GptOssExperts(nn.Module):
    """Clamped SwiGLU experts and the MoE finalize: every expert runs on every token (the dense
    inference path of transformers), and the outputs are summed weighted by the routing weights,
    which are zero for experts a token was not routed to."""

    def __init__(self, config):
        super().__init__()
        self.intermediate_size = config["intermediate_size"]
        self.num_experts = config["num_local_experts"]
        self.hidden_size = config["hidden_size"]
        self.expert_dim = self.intermediate_size
        self.gate_up_proj = nn.Parameter(
            torch.empty(self.num_experts, self.hidden_size, 2 * self.expert_dim))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(self.num_experts, 2 * self.expert_dim))
        self.down_proj = nn.Parameter(
            torch.empty(self.num_experts, self.expert_dim, self.hidden_size))
        self.down_proj_bias = nn.Parameter(torch.empty(self.num_experts, self.hidden_size))
        self.alpha = 1.702
        self.limit = config["swiglu_limit"]

    def forward(self, hidden_states, routing_weights):
        batch_size = hidden_states.shape[0]
        hidden_states = hidden_states.reshape(-1, self.hidden_size)
        num_experts = routing_weights.shape[1]
        hidden_states = hidden_states.repeat(num_experts, 1)
        hidden_states = hidden_states.view(num_experts, -1, self.hidden_size)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        next_states = torch.bmm(((up + 1) * glu), self.down_proj)
        next_states = next_states + self.down_proj_bias[..., None, :]
        next_states = next_states.view(num_experts, batch_size, -1, self.hidden_size)
        next_states = (next_states
                       * routing_weights.transpose(0, 1).view(num_experts, batch_size, -1)[..., None])
        return next_states.sum(dim=0)


class GptOssMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = GptOssTopKRouter(config)
        self.experts = GptOssExperts(config)

    def forward(self, hidden_states):
        router_scores, _ = self.router(hidden_states)
        return self.experts(hidden_states, routing_weights=router_scores), router_scores


def _yarn_inv_freq(config):
    """Rotary inverse frequencies and attention scale with YaRN scaling (transformers'
    _compute_yarn_parameters, truncate=False)."""
    dim = config["head_dim"]
    base = config["rope_theta"]
    s = config["rope_scaling"]
    factor, original = s["factor"], s["original_max_position_embeddings"]
    attention_factor = 0.1 * math.log(factor) + 1.0

    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = correction_dim(s["beta_fast"])
    high = correction_dim(s["beta_slow"])
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (factor * pos_freqs)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
    return inv_freq, attention_factor


class GptOssRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        inv_freq, self.attention_scaling = _yarn_inv_freq(config)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, positions):
        freqs = positions[:, None].float() * self.inv_freq[None, :]
        cos = (freqs.cos() * self.attention_scaling).to(x.dtype)
        sin = (freqs.sin() * self.attention_scaling).to(x.dtype)
        return cos, sin


def _apply_rotary(x, cos, sin):
    first, second = torch.chunk(x, 2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


class GptOssAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = config["head_dim"]
        self.num_heads = config["num_attention_heads"]
        self.num_kv_heads = config["num_key_value_heads"]
        self.scaling = self.head_dim ** -0.5
        self.sliding_window = config["sliding_window"] if layer_idx % 2 == 0 else None
        hidden = config["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, hidden, bias=True)
        self.sinks = nn.Parameter(torch.empty(self.num_heads))

    def forward(self, hidden_states, cos, sin, cache, position):
        batch, length, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(batch, length, self.num_heads, self.head_dim)
        k = self.k_proj(hidden_states).view(batch, length, self.num_kv_heads, self.head_dim)
        v = self.v_proj(hidden_states).view(batch, length, self.num_kv_heads, self.head_dim)
        q = _apply_rotary(q.transpose(1, 2), cos, sin)
        k = _apply_rotary(k.transpose(1, 2), cos, sin)
        v = v.transpose(1, 2)
        end = position + length
        cache.keys[self.layer_idx][:, :, position:end] = k
        cache.values[self.layer_idx][:, :, position:end] = v
        keys = cache.keys[self.layer_idx][:, :, :end]
        values = cache.values[self.layer_idx][:, :, :end]
        groups = self.num_heads // self.num_kv_heads
        keys = keys.repeat_interleave(groups, dim=1)
        values = values.repeat_interleave(groups, dim=1)
        scores = torch.matmul(q, keys.transpose(2, 3)) * self.scaling
        query_pos = torch.arange(position, end, device=q.device)[:, None]
        key_pos = torch.arange(0, end, device=q.device)[None, :]
        visible = key_pos <= query_pos
        if self.sliding_window is not None:
            visible = visible & (key_pos > query_pos - self.sliding_window)
        scores = scores.masked_fill(~visible, torch.finfo(scores.dtype).min)
        sinks = self.sinks.reshape(1, -1, 1, 1).expand(batch, -1, length, -1).to(scores.dtype)
        combined = torch.cat([scores, sinks], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined, dim=-1, dtype=combined.dtype)[..., :-1]
        out = torch.matmul(probs, values).transpose(1, 2).reshape(batch, length, -1)
        return self.o_proj(out)


class GptOssDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.self_attn = GptOssAttention(config, layer_idx)
        self.mlp = GptOssMLP(config)
        self.input_layernorm = GptOssRMSNorm(config["hidden_size"], config["rms_norm_eps"])
        self.post_attention_layernorm = GptOssRMSNorm(config["hidden_size"],
                                                      config["rms_norm_eps"])

    def forward(self, hidden_states, cos, sin, cache, position):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = residual + self.self_attn(hidden_states, cos, sin, cache, position)
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        mlp_out, _ = self.mlp(hidden_states)
        return residual + mlp_out


class GptOssModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.layers = nn.ModuleList(
            [GptOssDecoderLayer(config, i) for i in range(config["num_hidden_layers"])])
        self.norm = GptOssRMSNorm(config["hidden_size"], config["rms_norm_eps"])
        self.rotary_emb = GptOssRotaryEmbedding(config)

    def forward(self, input_ids, cache, position):
        hidden_states = self.embed_tokens(input_ids)
        positions = torch.arange(position, position + input_ids.shape[1], device=input_ids.device)
        cos, sin = self.rotary_emb(hidden_states, positions)
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin, cache, position)
        return self.norm(hidden_states)


class GptOssForCausalLM(nn.Module):
    """Random initialisation as transformers' GptOssPreTrainedModel._init_weights (std 0.02,
    zero biases, unit norm weights)."""

    def __init__(self, config):
        super().__init__()
        self.model = GptOssModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                nn.init.ones_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, input_ids, cache, position):
        return self.lm_head(self.model(input_ids, cache, position))
