"""A second, independent forward pass of the supported families written from
their published semantics (docs/reference/MODELS.md) in plain torch, used
for two things:

  1. with rounding off, it must reproduce transformers' float32 logits to
     float32 noise: a check that the reference and the model semantics agree;
  2. with rounding on, it rounds to FP16 exactly where volt's cpu backend
     does (docs/design/cpu-backend.md: FP16 activations, FP16 KV cache, FP16
     residual stream, FP32 router and LM-head logits, FP32 inside each op):
     the difference from the float32 reference is what an FP16
     implementation of the same model can be expected to show.

Only single-sequence, full-recompute forward passes: the models are tiny.
"""

import math

import torch

FAMILIES = {
    "Qwen3MoeForCausalLM": "qwen3-moe",
    "Qwen2MoeForCausalLM": "qwen2-moe",
    "MixtralForCausalLM": "mixtral",
    "Qwen3ForCausalLM": "qwen3",
}


class Forward:
    """Logits of a token sequence for one model (config dict + float32 state dict)."""

    def __init__(self, config, state, fp16, quantized_modules=()):
        self.c = config
        self.family = FAMILIES[config["architectures"][0]]
        self.fp16 = fp16
        self.hidden = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads") or self.heads
        self.head_dim = config.get("head_dim") or self.hidden // self.heads
        self.eps = config["rms_norm_eps"]
        self.theta = config.get("rope_theta", 10000.0)
        self.qk_norm = self.family in ("qwen3-moe", "qwen3")
        quantized = set(quantized_modules)
        self.router_gaps = []
        self.w = {}
        for key, value in state.items():
            t = torch.from_numpy(value).to(torch.float32)
            # volt stores dense weights, norms and biases as FP16; an NVFP4
            # weight keeps its exact e2m1 * e4m3 * global value.
            module = key.rsplit(".", 1)[0]
            if fp16 and module not in quantized:
                t = t.to(torch.float16).to(torch.float32)
            self.w[key] = t
        if config.get("tie_word_embeddings", False) and "lm_head.weight" not in self.w:
            self.w["lm_head.weight"] = self.w["model.embed_tokens.weight"]

    def r16(self, x):
        """Rounding to FP16 at one of volt's rounding points (identity in float32 mode)."""
        return x.to(torch.float16).to(torch.float32) if self.fp16 else x

    def linear(self, x, module):
        y = x @ self.w[module + ".weight"].T
        bias = self.w.get(module + ".bias")
        return y + bias if bias is not None else y

    def rms_norm(self, x, weight):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x * r) * weight

    def is_moe_layer(self, i):
        if self.family == "mixtral":
            return True
        if self.family == "qwen3":
            return False
        step = self.c.get("decoder_sparse_step", 1)
        return (i not in self.c.get("mlp_only_layers", [])
                and self.c.get("num_experts", 0) > 0 and (i + 1) % step == 0)

    def rope(self, positions):
        d = self.head_dim
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        freqs = positions.float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def attention(self, x, p, cos, sin):
        t = x.shape[0]
        a = p + "self_attn."
        q = self.r16(self.linear(x, a + "q_proj")).view(t, self.heads, self.head_dim)
        k = self.r16(self.linear(x, a + "k_proj")).view(t, self.kv_heads, self.head_dim)
        v = self.r16(self.linear(x, a + "v_proj")).view(t, self.kv_heads, self.head_dim)
        if self.qk_norm:  # kept in FP32 up to the RoPE output
            q = self.rms_norm(q, self.w[a + "q_norm.weight"])
            k = self.rms_norm(k, self.w[a + "k_norm.weight"])
        half = self.head_dim // 2

        def rotate(z):
            z1, z2 = z[..., :half], z[..., half:]
            c, s = cos[:, None, :half], sin[:, None, :half]
            return torch.cat((z1 * c - z2 * s, z2 * c + z1 * s), dim=-1)

        q, k = self.r16(rotate(q)), self.r16(rotate(k))  # k, v are the FP16 KV cache
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * (1.0 / math.sqrt(self.head_dim))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        o = self.r16(torch.einsum("hqk,khd->qhd", probs, v).reshape(t, -1))
        return self.r16(self.linear(o, a + "o_proj"))

    def gated_mlp(self, x, prefix, gate, up, down):
        g = self.linear(x, prefix + gate)
        u = self.linear(x, prefix + up)
        act = self.r16(torch.nn.functional.silu(g) * u)  # SiluMul epilogue: one rounding
        return self.r16(self.linear(act, prefix + down))

    def moe(self, x, p):
        mixtral = self.family == "mixtral"
        m = p + ("block_sparse_moe." if mixtral else "mlp.")
        names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
        logits = self.linear(x, m + "gate")  # FP32 router logits
        probs = torch.softmax(logits, dim=-1)
        top_k = self.c["num_experts_per_tok"]
        weights, experts = torch.topk(probs, top_k, dim=-1)
        ranked = torch.sort(probs, dim=-1, descending=True).values
        self.router_gaps.append(ranked[:, top_k - 1] - ranked[:, top_k])
        if mixtral or self.c.get("norm_topk_prob", False):
            weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for t in range(x.shape[0]):
            acc = torch.zeros(x.shape[1])
            for slot in range(top_k):
                e = int(experts[t, slot])
                y = self.gated_mlp(x[t:t + 1], "%sexperts.%d." % (m, e), *names)[0]
                acc = acc + weights[t, slot] * y
            out[t] = acc
        out = self.r16(out)
        if m + "shared_expert_gate.weight" in self.w:
            shared = self.gated_mlp(x, m + "shared_expert.", "gate_proj", "up_proj", "down_proj")
            gate = torch.sigmoid(self.linear(x, m + "shared_expert_gate"))
            out = self.r16(out + gate * shared)
        return out

    @torch.no_grad()
    def logits(self, ids):
        """float32 logits [len(ids), vocab] of the sequence `ids` (positions 0..len-1)."""
        ids = torch.as_tensor(ids, dtype=torch.int64)
        self.router_gaps = []  # per MoE layer: k-th minus (k+1)-th routing probability per token
        cos, sin = self.rope(torch.arange(ids.shape[0]))
        res = self.r16(self.w["model.embed_tokens.weight"][ids])
        for i in range(self.c["num_hidden_layers"]):
            p = "model.layers.%d." % i
            h = self.r16(self.rms_norm(res, self.w[p + "input_layernorm.weight"]))
            res = self.r16(res + self.attention(h, p, cos, sin))
            h = self.r16(self.rms_norm(res, self.w[p + "post_attention_layernorm.weight"]))
            if self.is_moe_layer(i):
                mlp = self.moe(h, p)
            else:
                mlp = self.gated_mlp(h, p + "mlp.", "gate_proj", "up_proj", "down_proj")
            res = self.r16(res + mlp)
        h = self.r16(self.rms_norm(res, self.w["model.norm.weight"]))
        return h @ self.w["lm_head.weight"].T  # FP32 LM-head logits

    def greedy(self, prompt_ids, steps):
        """Greedy continuation by full recomputation; returns the generated ids."""
        ids = list(prompt_ids)
        for _ in range(steps):
            ids.append(int(torch.argmax(self.logits(ids)[-1])))
        return ids[len(prompt_ids):]
