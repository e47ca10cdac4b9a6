#!/usr/bin/env python3
"""Writes tests/golden/expected/<case>.json for the Gated DeltaNet hybrids
(Qwen3-Next, Qwen3.5 dense and MoE; docs/design/hybrid.md): reference logits
and greedy continuations of the synthetic models under tests/golden/models,
computed by transformers' own Qwen3NextForCausalLM, Qwen3_5ForCausalLM and
Qwen3_5MoeForCausalLM in float32 on the CPU, in the case format of
generate.py (docs/golden.md) that tests/e2e/golden/GoldenTest.cpp reads.

The Qwen3.5 models are written in the multimodal layout of the published
checkpoints (config under text_config, tensors under model.language_model.,
a vision tower and an MTP head, BF16 experts stacked); the text-only
…ForCausalLM loads them with the text config, as transformers allows, and
each case records that the multimodal …ForConditionalGeneration loads the
same directory with no missing or unexpected tensors and gives the same
logits.

What differs from generate.py is how the tolerance per position is found.
These models are ill-conditioned where generate.py's families are not: the
gated RMSNorm after the delta rule scales each head's output to unit RMS, so
a head whose output nearly cancels (RMS 1e-3 of its neighbours') turns FP16
rounding of its inputs into percent-level errors. So the reference measures
its own sensitivity: an ensemble of transformers float32 runs with uniform
relative noise of half an FP16 ulp (2^-11) injected where volt rounds to FP16
(every linear layer's output, every RMSNorm's, the conv's output, the
embedding), NOISE_RUNS draws. Per position, the rule of docs/golden.md
(router ties from transformers' own router logits: softmax in FP32, k-th
minus (k+1)-th probability) gives the base tolerance; it is widened to
NOISE_FACTOR times the ensemble's largest deviation where that is larger,
and a position is not compared where the ensemble moves it by more than
NOISE_SKIP (a routing decision FP16 may flip). The greedy prefix volt must
reproduce ends at the first step whose top-2 margin is within NOISE_FACTOR
times the ensemble's deviation. There is no independent FP16 emulation of
these families (fp16_emulation.py covers the four transformer families); the
transformers float16 comparison is kept.
The prompts are long enough that the first prefill spans several 64-token
chunks of transformers' chunked delta rule and several KV blocks.

Versions used for the committed files (PyPI; a mismatch is an error unless
--allow-other-versions is given):

    pip install torch==2.15.0 transformers==5.24.0 safetensors==0.8.0 \\
        tokenizers==0.23.3 numpy==2.4.6

Regenerate (from the repository root):

    python3 tests/golden/generate_hybrid.py --mkmodel build/bin/volt-mkmodel
"""

import argparse
import copy
import json
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate  # noqa: E402  (the case format and helpers)
import nvfp4_decode  # noqa: E402
from tolerance import (TOLERANCE, diff_stats, first_tie, margins, position_rtol,  # noqa: E402
                       robust_prefix, tolerance_check)

SEED_35_MOE, SEED_35_MOE_LONG, SEED_35, SEED_35_MOE_MIXED, SEED_35_MOE_CT_FP8 = 4, 20, 3, 16, 21
PINNED = {k: v for k, v in generate.PINNED.items() if k != "compressed-tensors"}
HERE = Path(__file__).resolve().parent

# name -> (volt-mkmodel --family, --format, --seed, prompt). Each case has its
# own model: random routers make near-ties common (docs/golden.md), and the
# seeds were picked (--scan) for a late first tie: the short cases' greedy
# tokens, the long cases' first 106 (Qwen3-Next) and 77 (Qwen3.5-MoE)
# positions, past the first 64-token chunk; the dense Qwen3.5 has no router.
MODELS = {
    "qwen3-next-bf16": ("qwen3-next", "bf16", 25, "short"),
    "qwen3-next-bf16-long": ("qwen3-next", "bf16", 36, "long"),
    "qwen3.5-moe-bf16": ("qwen3.5-moe", "bf16", SEED_35_MOE, "short"),
    "qwen3.5-moe-bf16-long": ("qwen3.5-moe", "bf16", SEED_35_MOE_LONG, "long"),
    "qwen3.5-bf16-long": ("qwen3.5", "bf16", SEED_35, "long"),
    # NVIDIA's Qwen3.6 NVFP4 layout: FP8 attention and linear-attention
    # projections, NVFP4 experts, shared expert and lm_head, dequantized by
    # nvfp4_decode.py for the reference.
    "qwen3.5-moe-mixed": ("qwen3.5-moe", "modelopt-mixed", SEED_35_MOE_MIXED, "short"),
    # llm-compressor's FP8_DYNAMIC layout: every linear layer (experts too)
    # in FP8 with a BF16 scale per row, but the LM head, routers and gates.
    "qwen3.5-moe-ct-fp8": ("qwen3.5-moe", "compressed-tensors-fp8", SEED_35_MOE_CT_FP8, "short"),
}
NOISE_RUNS = 8
NOISE_FACTOR = 2.0
NOISE_SKIP = 0.05
SHORT_STEPS = 32
LONG_STEPS = 16
PROMPT_MIN_TOKENS = 150  # > 2 chunks of 64 and > 9 KV blocks of 16
LONG_ROW_EVERY = 16


def prompt_text(tok):
    words = ["state", "chunk", "decay", "gate", "head", "value", "key", "token", "layer", "slot"]
    parts, i = [], 0
    while True:
        a, b = words[i % len(words)], words[(i * 3 + 1) % len(words)]
        parts.append("Row %d keeps the %s of %d %ss for the %s." % (i + 1, a, (i * 29) % 500, b,
                                                                    words[(i * 7) % len(words)]))
        text = " ".join(parts)
        if len(tok.encode(text, add_special_tokens=False).ids) >= PROMPT_MIN_TOKENS:
            return text
        i += 1


TEXT_ONLY = {"Qwen3_5ForConditionalGeneration": "Qwen3_5ForCausalLM",
             "Qwen3_5MoeForConditionalGeneration": "Qwen3_5MoeForCausalLM"}


def load(model_dir, multimodal=False):
    """transformers' text-only model of the directory (…ForCausalLM, with the text config
    of a multimodal checkpoint), or with `multimodal` the multimodal model itself."""
    config = transformers.AutoConfig.from_pretrained(str(model_dir))
    arch = config.architectures[0]
    if arch in TEXT_ONLY and not multimodal:
        cls, config = getattr(transformers, TEXT_ONLY[arch]), config.text_config
    else:
        cls = getattr(transformers, arch)
    model, info = cls.from_pretrained(str(model_dir), config=config, dtype=torch.float32,
                                      output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise RuntimeError("%s: transformers loading reported %s" % (model_dir, problems))
    model.eval()
    return model


def is_moe(model):
    return getattr(model.config, "num_experts", 0) > 0


def router_gaps(model, ids):
    """Per token: the smallest k-th minus (k+1)-th routing probability over the MoE layers
    (transformers' own router logits, softmax in FP32); None for a dense model."""
    if not is_moe(model):
        return None
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_router_logits=True)
    k = model.config.num_experts_per_tok
    gaps = []
    for logits in out.router_logits:
        probs = torch.softmax(logits.float(), dim=-1)
        ranked = torch.sort(probs, dim=-1, descending=True).values
        gaps.append(ranked[:, k - 1] - ranked[:, k])
    return torch.stack(gaps).min(0).values.numpy()


def noise_ensemble(model, ids, runs=NOISE_RUNS, seed=0):
    """Per position: the largest |logits - reference| / max|reference row| over `runs`
    float32 forwards with half-ulp FP16 noise at volt's rounding points."""
    mq = sys.modules[type(model).__module__]  # the modeling file's causal_conv1d_fn
    g = torch.Generator().manual_seed(seed)

    def noise(t):
        return t * (1 + (torch.rand(t.shape, generator=g) * 2 - 1) * 2.0 ** -11)

    def hook(mod, args, out):
        return noise(out) if torch.is_tensor(out) else out

    handles = []
    for mod in model.modules():
        if isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)) or type(mod).__name__.endswith(
                ("RMSNorm", "RMSNormGated")):
            handles.append(mod.register_forward_hook(hook))
    conv = mq.causal_conv1d_fn
    mq.causal_conv1d_fn = lambda *a, **k: noise(conv(*a, **k))
    try:
        worst = None
        for _ in range(runs):
            logits = generate.forward_hf(model, ids)
            worst = logits[None] if worst is None else np.concatenate([worst, logits[None]])
    finally:
        mq.causal_conv1d_fn = conv
        for h in handles:
            h.remove()
    return worst


def tolerances(full, gap_min, ensemble, prompt_len, step_logits):
    """sequence_rtol and the greedy robust prefix (the module docstring)."""
    scale = np.abs(full).max(-1)
    dev = (np.abs(ensemble - full[None]).max(-1) / scale[None]).max(0)
    rtol = []
    for p, base in enumerate(position_rtol(gap_min, full.shape[0])):
        if base is None or dev[p] > NOISE_SKIP:
            rtol.append(None)
        else:
            rtol.append(float(max(base, NOISE_FACTOR * dev[p])))
    prefix = robust_prefix(margins(step_logits), gap_min, prompt_len)
    step_margin = margins(step_logits)
    for i in range(prefix):
        p = prompt_len - 1 + i
        if step_margin[i] <= NOISE_FACTOR * dev[p] * scale[p]:
            prefix = i
            break
    return rtol, prefix, dev


def run_case(name, model_dir, model, tok, text, steps, long_case, ref_dir=None):
    prompt_ids = tok.encode(text, add_special_tokens=False).ids
    hf_tok = AutoTokenizer.from_pretrained(str(model_dir))
    if hf_tok(text, add_special_tokens=False)["input_ids"] != prompt_ids:
        raise RuntimeError("%s: tokenizers and transformers' tokenizer disagree" % name)
    generated, step_logits = generate.greedy_hf(model, prompt_ids, steps)
    sequence = prompt_ids + generated[:-1]
    full = generate.forward_hf(model, sequence)
    # The cached decode (recurrent delta rule, conv update) against one full
    # forward (the chunked form over the whole sequence).
    cache_vs_full = float(np.abs(full[len(prompt_ids) - 1:] - step_logits).max())
    gap_min = router_gaps(model, sequence)
    half = copy.deepcopy(model).to(torch.float16)
    half_logits = generate.forward_hf(half, sequence)
    del half
    half_stats = diff_stats(full, half_logits)
    ensemble = noise_ensemble(model, sequence)
    rtol, prefix, dev = tolerances(full, gap_min, ensemble, len(prompt_ids), step_logits)
    half_stats["tolerance_violations_teacher_forced"] = tolerance_check(
        full, gap_min, half_logits, generated, generated, prefix)
    checks = {"sanity": generate.sanity(step_logits[0], generated),
              "kv_cache_vs_full_forward_max_abs": cache_vs_full}
    if type(model).__name__ in TEXT_ONLY.values():
        multimodal = load(ref_dir or model_dir, multimodal=True)
        checks["multimodal_vs_text_only_max_abs"] = float(
            np.abs(generate.forward_hf(multimodal, sequence) - full).max())
        del multimodal
    files = sorted(p.name for p in model_dir.iterdir() if p.is_file())
    rows = list(range(len(prompt_ids)))
    if long_case:
        rows = sorted({p for p in rows if p % LONG_ROW_EVERY == LONG_ROW_EVERY - 1}
                      | {len(prompt_ids) - 1})
    return {
        "case": name,
        "model": str(model_dir.relative_to(generate.REPO)),
        "model_files_sha256": {f: generate.sha256(model_dir / f) for f in files},
        "reference": "transformers %s, torch %s, float32, CPU, attn_implementation=%s, "
                     "Gated DeltaNet through its torch paths (chunked prefill, recurrent decode)"
                     % (transformers.__version__, torch.__version__,
                        model.config._attn_implementation),
        "vocab_size": int(full.shape[1]),
        "prompt_text": text,
        "prompt_ids": prompt_ids,
        "prompt_top1": [int(x) for x in full[:len(prompt_ids)].argmax(-1)],
        "prompt_margins": margins(full[:len(prompt_ids)]),
        "prompt_logit_positions": rows,
        "prompt_logits": full[rows],
        "sequence_router_min_gap": gap_min,
        "generated_ids": generated,
        "step_margins": margins(step_logits),
        "step_logits": step_logits,
        "tolerance": TOLERANCE,
        "sequence_first_router_tie": first_tie(gap_min),
        "sequence_rtol": rtol,
        "sequence_fp16_noise_deviation": dev,
        "noise_ensemble": {"runs": NOISE_RUNS, "factor": NOISE_FACTOR, "skip_above": NOISE_SKIP,
                           "relative_noise": 2.0 ** -11},
        "greedy_robust_prefix": prefix,
        "checks": checks,
        "hf_float16": half_stats,
    }


def scan(family, first, end, mkmodel="build/bin/volt-mkmodel", fmt="bf16"):
    for seed in range(first, end):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp) / "m"
            subprocess.run([mkmodel, "--family", family, "--format", fmt, "--seed",
                            str(seed), "-o", str(d)], check=True, stdout=subprocess.DEVNULL)
            ref = d
            if fmt != "bf16":
                state, _ = nvfp4_decode.dequantize(
                    nvfp4_decode.load_tensors(d, generate.weight_files(d)), fmt)
                (Path(tmp) / "f").mkdir()
                ref = generate.float_model_dir(d, state, Path(tmp) / "f")
            tok = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
            m = load(ref)
            for kind, text, steps in (("short", generate.SHORT_PROMPT, SHORT_STEPS),
                                      ("long", prompt_text(tok), LONG_STEPS)):
                ids = tok.encode(text, add_special_tokens=False).ids
                gen, logits = generate.greedy_hf(m, ids, steps)
                gaps = router_gaps(m, ids + gen[:-1])
                print("seed %d %s: first tie %s, robust prefix %d" % (
                    seed, kind, first_tie(gaps), robust_prefix(margins(logits), gaps, len(ids))),
                    flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mkmodel", help="volt-mkmodel binary: rewrite the models first")
    ap.add_argument("--allow-other-versions", action="store_true")
    ap.add_argument("--only", nargs="+", metavar="CASE", help="regenerate only these cases")
    ap.add_argument("--scan", nargs=3, metavar=("FAMILY", "FIRST", "END"),
                    help="print each seed's first router tie and robust prefix")
    ap.add_argument("--scan-format", default="bf16", help="volt-mkmodel --format of --scan")
    args = ap.parse_args()
    generate.PINNED.clear()
    generate.PINNED.update(PINNED)
    versions = generate.check_versions(args.allow_other_versions)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.scan:
        return scan(args.scan[0], int(args.scan[1]), int(args.scan[2]),
                    args.mkmodel or "build/bin/volt-mkmodel", args.scan_format)
    for name, (family, fmt, seed, kind) in MODELS.items():
        if args.only and name not in args.only:
            continue
        out = generate.MODELS_DIR / name
        if args.mkmodel:
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run([args.mkmodel, "--family", family, "--format", fmt, "--seed", str(seed),
                            "-o", str(out)], check=True)
        model_dir = out
        tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        with tempfile.TemporaryDirectory() as tmp:
            ref_dir = model_dir
            if fmt != "bf16":
                state, _ = nvfp4_decode.dequantize(nvfp4_decode.load_tensors(
                    model_dir, generate.weight_files(model_dir)), fmt)
                ref_dir = generate.float_model_dir(model_dir, state, tmp)
            model = load(ref_dir)
            long_case = kind == "long"
            text = prompt_text(tok) if long_case else generate.SHORT_PROMPT
            result = run_case(name, model_dir, model, tok, text,
                              LONG_STEPS if long_case else SHORT_STEPS, long_case, ref_dir)
        result["volt_mkmodel"] = {"family": family, "format": fmt, "seed": seed}
        result["weights"] = ("checkpoint loaded by transformers as is" if fmt == "bf16" else
                             "NVFP4 and FP8 dequantized by tests/golden/nvfp4_decode.py (numpy)")
        result["versions"] = versions
        size = generate.write_json(generate.EXPECTED_DIR / (name + ".json"), result)
        rt = [r for r in result["sequence_rtol"] if r is not None]
        dev = result["sequence_fp16_noise_deviation"]
        print("%s: %d bytes, %d prompt tokens, robust prefix %d, first router tie %s, "
              "cache vs full %.3g, noise deviation median %.4f max %.4f, rtol > 0.01 at %d "
              "positions (max %.4f), %d not compared, sanity %s" % (
                  name, size, len(result["prompt_ids"]), result["greedy_robust_prefix"],
                  result["sequence_first_router_tie"],
                  result["checks"]["kv_cache_vs_full_forward_max_abs"], float(np.median(dev)),
                  float(dev.max()), sum(r > 0.01 for r in rt), max(rt),
                  result["sequence_rtol"].count(None), result["checks"]["sanity"]), flush=True)
        if not result["checks"]["sanity"]["ok"]:
            sys.exit("%s looks degenerate: %s" % (name, result["checks"]["sanity"]))


if __name__ == "__main__":
    main()
