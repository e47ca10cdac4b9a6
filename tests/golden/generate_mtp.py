#!/usr/bin/env python3
"""Writes tests/golden/expected/mtp-<case>.json: what a checkpoint's
multi-token-prediction head (mtp.*) drafts, computed from the head's
description (docs/design/speculative.md, "MTP"; vLLM's qwen3_5_mtp /
qwen3_next_mtp), for tests/e2e/golden/MtpHeadTest.cpp.

transformers does not run the head (it skips the mtp.* tensors), so this
script writes it from the description, in float32, with transformers' own
pieces where they are the same thing: the target model (…ForCausalLM, its
hidden states after the final norm and its LM head), the shared embedding,
the rotary embedding, and a full-attention decoder layer of the model's
class loaded with the mtp.layers.0 weights. What is written here is only
what the description says:

  x_p = mtp.fc( [ pre_fc_norm_embedding(embed(token_(p+1))) | pre_fc_norm_hidden(h_p) ] )
  g_p = mtp.norm( mtp.layers.0(x_p) )           (causal attention over p' <= p)
  draft logits at p = lm_head(g_p)              (the token at p + 2)

with the model's zero-centred RMSNorm x̂·(1 + w). For the prompt's n tokens
t_0..t_(n-1), with h_p the target's normed hidden state and t_n its greedy
next token, the case holds the draft logits of positions 0..n-1 (the engine's
catch-up step after a prefill) and of one chained step at position n, which
pairs g_(n-1) with the greedy draft d_1 = argmax of position n-1's row.

It also computes the same rows with the concatenation's halves swapped
([hidden | embedding], a plausible mistake) and records how far those are
from the right ones, so that the test can check its tolerance tells the two
apart.

Versions used for the committed files (PyPI):
    pip install torch==2.15.0 transformers==5.24.0 safetensors==0.8.0 \\
        tokenizers==0.23.3 numpy==2.4.6
Run from the repository root:
    /tmp/golden-venv/bin/python tests/golden/generate_mtp.py
"""

import argparse
import json
import pathlib

import numpy as np
import safetensors.torch
import torch
import transformers
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as qwen3_5_moe

ROOT = pathlib.Path(__file__).resolve().parent
# name -> (model directory under tests/golden/models, decoder layer class)
CASES = {
    "qwen3.5-moe-bf16": ("qwen3.5-moe-bf16", qwen3_5_moe.Qwen3_5MoeDecoderLayer),
}
PROMPT = "Four-bit weights keep the model small; what is the capital of France?"


def load_target(model_dir):
    """The text-only model of a multimodal checkpoint, float32, eager attention."""
    config = transformers.AutoConfig.from_pretrained(str(model_dir)).text_config
    model, info = transformers.Qwen3_5MoeForCausalLM.from_pretrained(
        str(model_dir), config=config, dtype=torch.float32, attn_implementation="eager",
        output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise RuntimeError("%s: transformers loading reported %s" % (model_dir, problems))
    model.eval()
    return model


def rms_norm(x, w, eps):
    """The model's zero-centred RMSNorm, x̂·(1 + w), in float32."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


class MtpHead:
    """The head as described, over whole sequences from position 0."""

    def __init__(self, model, model_dir, layer_class):
        self.model = model
        config = model.config
        self.eps = config.rms_norm_eps
        tensors = safetensors.torch.load_file(str(model_dir / "model.safetensors"))
        self.w = {k[len("mtp."):]: v.float() for k, v in tensors.items() if k.startswith("mtp.")}
        if not self.w:
            raise RuntimeError("%s: no mtp.* tensors" % model_dir)
        # A full-attention layer of the model's own class (the index only
        # picks the block type).
        layer = layer_class(config, config.layer_types.index("full_attention")).float()
        state = {k[len("layers.0."):]: v for k, v in self.w.items() if k.startswith("layers.0.")}
        layer.load_state_dict(state, strict=True)
        layer.eval()
        self.layer = layer

    def __call__(self, tokens, hidden, swap=False):
        """Draft logits and normed states of positions 0..len(tokens)-1:
        tokens[p] is the token after position p, hidden[p] the state there."""
        text = self.model.model
        t = len(tokens)
        e = text.embed_tokens(torch.tensor([tokens]))[0]
        halves = [rms_norm(e, self.w["pre_fc_norm_embedding.weight"], self.eps),
                  rms_norm(hidden, self.w["pre_fc_norm_hidden.weight"], self.eps)]
        if swap:
            halves.reverse()
        x = torch.cat(halves, -1) @ self.w["fc.weight"].T
        positions = torch.arange(t).view(1, 1, -1).expand(4, 1, -1)
        rope = text.rotary_emb(x[None], positions[1:])
        mask = torch.full((t, t), float("-inf")).triu(1)[None, None]
        y = self.layer(x[None], position_embeddings=rope, attention_mask=mask,
                       position_ids=positions[0])[0]
        g = rms_norm(y, self.w["norm.weight"], self.eps)
        return self.model.lm_head(g), g


def run_case(name, model_dir, layer_class):
    model = load_target(model_dir)
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"))
    prompt = tok(PROMPT, add_special_tokens=False)["input_ids"]
    head = MtpHead(model, model_dir, layer_class)
    with torch.no_grad():
        out = model.model(input_ids=torch.tensor([prompt]))
        hidden = out.last_hidden_state[0]  # after the final norm
        target_next = int(model.lm_head(hidden[-1]).argmax())
        # Catch-up over the prompt: position p pairs h_p with token p + 1.
        tokens = prompt[1:] + [target_next]
        logits, g = head(tokens, hidden)
        d1 = int(logits[-1].argmax())
        # One chained step: g_(n-1) stands in for h_n, paired with d_1.
        chain_logits, _ = head(tokens + [d1], torch.cat([hidden, g[-1:]]))
        swapped, _ = head(tokens, hidden, swap=True)
        swapped_chain, _ = head(tokens + [d1], torch.cat([hidden, g[-1:]]), swap=True)
    rows = logits.numpy()
    chain = chain_logits[-1].numpy()
    wrong = max(float(np.abs(swapped.numpy() - rows).max()),
                float(np.abs(swapped_chain[-1].numpy() - chain).max()))
    case = {
        "case": name,
        "model": "tests/golden/models/" + model_dir.name,
        "generator": "tests/golden/generate_mtp.py",
        "versions": {"torch": torch.__version__.split("+")[0],
                     "transformers": transformers.__version__},
        "prompt_text": PROMPT,
        "prompt_ids": prompt,
        "target_next": target_next,
        "draft_tokens": tokens,
        "draft_logits": [[round(float(v), 6) for v in r] for r in rows],
        "draft_top1": [int(r.argmax()) for r in rows],
        "chain_token": d1,
        "chain_logits": [round(float(v), 6) for v in chain],
        "swapped_concat_max_diff": round(wrong, 6),
    }
    out_path = ROOT / "expected" / ("mtp-%s.json" % name)
    out_path.write_text(json.dumps(case, indent=1) + "\n")
    print("%s: %d positions + 1 chained, |logits| <= %.3f, swapped halves differ by %.3f"
          % (out_path, len(rows), float(np.abs(rows).max()), wrong))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    args = parser.parse_args()
    for name in args.case or sorted(CASES):
        directory, layer_class = CASES[name]
        run_case(name, ROOT / "models" / directory, layer_class)


if __name__ == "__main__":
    main()
