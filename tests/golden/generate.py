#!/usr/bin/env python3
"""Writes tests/golden/expected/*.json: reference logits and greedy
continuations of the synthetic models under tests/golden/models, computed by
Hugging Face transformers in float32 on the CPU (an outside reference, not
volt's code). See docs/golden.md for the file format and the tolerances.

Versions used for the committed files (PyPI; checked at start, a mismatch is
an error unless --allow-other-versions is given):

    pip install torch==2.15.0 transformers==5.24.0 safetensors==0.8.0 \
        tokenizers==0.23.3 numpy==2.4.6 compressed-tensors==0.20.1

Regenerate (from the repository root):

    python3 tests/golden/generate.py --mkmodel build/bin/volt-mkmodel   # rewrite the models too
    python3 tests/golden/generate.py                                    # models as committed

NVFP4 checkpoints are dequantized by nvfp4_decode.py (numpy, from the
published formats) into a float32 checkpoint with the same config.json less
`quantization_config`, which transformers then loads as an ordinary model.
The compressed-tensors package's own decompression is run as a cross-check.
"""

import argparse
import copy
import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
import torch
import transformers
from safetensors.numpy import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fp16_emulation  # noqa: E402
import nvfp4_decode  # noqa: E402

PINNED = {
    "torch": "2.15.0",
    "transformers": "5.24.0",
    "safetensors": "0.8.0",
    "tokenizers": "0.23.3",
    "numpy": "2.4.6",
    "compressed-tensors": "0.20.1",
}

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODELS_DIR = HERE / "models"
EXPECTED_DIR = HERE / "expected"

# name -> (volt-mkmodel --family, --format, --seed). Same seed for the three
# qwen3-moe formats: they quantize the same values.
MODELS = {
    "qwen3-moe-modelopt": ("qwen3-moe", "modelopt", 101),
    "qwen3-moe-compressed-tensors": ("qwen3-moe", "compressed-tensors", 101),
    "qwen3-moe-bf16": ("qwen3-moe", "bf16", 101),
    "qwen2-moe-modelopt": ("qwen2-moe", "modelopt", 202),
    "mixtral-modelopt": ("mixtral", "modelopt", 303),
    "qwen3-modelopt": ("qwen3", "modelopt", 404),
}

SHORT_PROMPT = "Four-bit weights keep the model small; what is the capital of France?"
SHORT_STEPS = 32
LONG_MIN_TOKENS = 600
LONG_STEPS = 16
LONG_ROW_EVERY = 64  # long case: full logit rows at positions 63, 127, ... and the last

# Sanity thresholds: tiny random models must still give informative logits.
MIN_LOGIT_STD = 0.1
MIN_DISTINCT_GENERATED = 4
# Cases known to fail the sanity check, with the reason (see docs/golden.md);
# any other failure is an error.
KNOWN_DEGENERATE = {
    "qwen3-modelopt": "tied embeddings of spread 1 dominate the residual stream: "
                      "the model predicts its last input token again",
}


def check_versions(allow_other):
    import importlib.metadata as md
    found = {}
    for pkg, want in PINNED.items():
        try:
            found[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            found[pkg] = None
    wrong = {p: v for p, v in found.items() if v is None or v.split("+")[0] != PINNED[p]}
    if wrong and not allow_other:
        sys.exit("package versions differ from the pinned ones: %s (pinned: %s); "
                 "pass --allow-other-versions to run anyway" % (wrong, PINNED))
    return found


def long_prompt_text(tok):
    """A deterministic text of at least LONG_MIN_TOKENS tokens, built sentence by sentence."""
    words = ["server", "client", "token", "expert", "model", "cache", "block", "weight",
             "prompt", "answer", "request", "layer"]
    parts = []
    i = 0
    while True:
        a, b = words[i % len(words)], words[(i * 5 + 3) % len(words)]
        parts.append("Step %d: the %s sends %d values to the %s, and %d of them are new."
                     % (i + 1, a, (i * 37) % 1000, b, (i * 11) % 97))
        text = " ".join(parts)
        if len(tok.encode(text, add_special_tokens=False).ids) >= LONG_MIN_TOKENS:
            return text
        i += 1


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def weight_files(model_dir):
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        return sorted(set(json.loads(index.read_text())["weight_map"].values()))
    return sorted(p.name for p in model_dir.glob("*.safetensors"))


def margins(rows):
    """top-1 minus top-2 logit of each row."""
    top2 = np.sort(rows, axis=-1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


def float_model_dir(model_dir, state, tmp):
    """A float32 checkpoint of the dequantized state: config.json less quantization_config."""
    config = json.loads((model_dir / "config.json").read_text())
    config.pop("quantization_config", None)
    out = Path(tmp) / model_dir.name
    out.mkdir()
    (out / "config.json").write_text(json.dumps(config, indent=2))
    save_file(state, str(out / "model.safetensors"))
    return out


def load_hf(path, state):
    model, info = AutoModelForCausalLM.from_pretrained(
        str(path), dtype=torch.float32, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise RuntimeError("%s: transformers loading reported %s" % (path, problems))
    model.eval()
    # Every value of the checkpoint must have arrived (transformers may fuse
    # per-expert tensors into 3-D parameters, so compare sums of squares).
    tied = model.config.tie_word_embeddings
    theirs = sum(float(p.detach().double().pow(2).sum()) for n, p in model.named_parameters()
                 if not (tied and n == "lm_head.weight"))
    ours = sum(float(np.square(v, dtype=np.float64).sum()) for v in state.values())
    if not math.isclose(theirs, ours, rel_tol=1e-9):
        raise RuntimeError("%s: parameters hold %r, the checkpoint %r (sum of squares)"
                           % (path, theirs, ours))
    return model


def greedy_hf(model, prompt_ids, steps):
    gc = GenerationConfig(do_sample=False, max_new_tokens=steps, eos_token_id=None,
                          pad_token_id=model.config.pad_token_id, bos_token_id=None,
                          return_dict_in_generate=True, output_logits=True)
    model.generation_config.eos_token_id = None
    ids = torch.tensor([prompt_ids])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gc)
    generated = out.sequences[0, len(prompt_ids):].tolist()
    step_logits = torch.stack(out.logits)[:, 0, :].float().numpy()
    if len(generated) != steps:
        raise RuntimeError("generate stopped after %d of %d tokens" % (len(generated), steps))
    if generated != step_logits.argmax(-1).tolist():
        raise RuntimeError("a generated token is not the argmax of its step's logits")
    return generated, step_logits


def forward_hf(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float().numpy()


def diff_stats(ref, other):
    """Max abs / rel difference of logit rows, and where the argmax disagrees."""
    d = np.abs(other.astype(np.float64) - ref.astype(np.float64))
    scale = np.abs(ref).max(axis=-1)
    flips = np.nonzero(ref.argmax(-1) != other.argmax(-1))[0]
    ref_margin = margins(ref)
    return {
        "max_abs": float(d.max()),
        "max_rel_to_row_max": float((d.max(axis=-1) / scale).max()),
        "rms_abs": float(np.sqrt((d ** 2).mean())),
        "logit_std": float(ref.std()),
        "argmax_flips": [int(p) for p in flips],
        "margins_at_flips": [float(ref_margin[p]) for p in flips],
    }


def sanity(last_row, generated):
    std = float(last_row.std())
    distinct = len(set(generated))
    run, longest = 1, 1
    for a, b in zip(generated, generated[1:]):
        run = run + 1 if a == b else 1
        longest = max(longest, run)
    ok = std > MIN_LOGIT_STD and distinct >= MIN_DISTINCT_GENERATED
    return {"last_logit_std": std, "distinct_generated": distinct,
            "longest_repeat_run": longest, "ok": ok}


def run_case(name, model_dir, state, quantized, hf_model, tok, prompt_text, steps, long_case):
    config = json.loads((model_dir / "config.json").read_text())
    prompt_ids = tok.encode(prompt_text, add_special_tokens=False).ids
    hf_tok = AutoTokenizer.from_pretrained(str(model_dir))
    if hf_tok(prompt_text, add_special_tokens=False)["input_ids"] != prompt_ids:
        raise RuntimeError("%s: tokenizers and transformers' tokenizer disagree" % name)

    generated, step_logits = greedy_hf(hf_model, prompt_ids, steps)
    sequence = prompt_ids + generated[:-1]  # every position whose logits were used
    full = forward_hf(hf_model, sequence)
    prompt_logits = full[:len(prompt_ids)]
    cache_vs_full = float(np.abs(full[len(prompt_ids) - 1:] - step_logits).max())

    ours32 = fp16_emulation.Forward(config, state, fp16=False, quantized_modules=quantized)
    independent = float(np.abs(ours32.logits(sequence).numpy() - full).max())
    gaps32 = ours32.router_gaps
    if independent > 1e-3 * max(1.0, float(np.abs(full).max())):
        raise RuntimeError("%s: the independent float32 forward differs from transformers by %g"
                           % (name, independent))

    emu = fp16_emulation.Forward(config, state, fp16=True, quantized_modules=quantized)
    emu_stats = diff_stats(full, emu.logits(sequence).numpy())
    if gaps32:
        emu_stats["router_gap_max_change"] = float(max(
            (a - b).abs().max() for a, b in zip(gaps32, emu.router_gaps)))
    emu_generated = emu.greedy(prompt_ids, steps)
    agree = next((i for i, (a, b) in enumerate(zip(generated, emu_generated)) if a != b), steps)
    emu_stats["greedy_tokens_equal_before_first_difference"] = agree

    half = copy.deepcopy(hf_model).to(torch.float16)  # .to() in place would change hf_model
    half_stats = diff_stats(full, forward_hf(half, sequence))
    del half

    if long_case:
        rows = [p for p in range(len(prompt_ids)) if p % LONG_ROW_EVERY == LONG_ROW_EVERY - 1]
        rows.append(len(prompt_ids) - 1)
        rows = sorted(set(rows))
    else:
        rows = list(range(len(prompt_ids)))
    files = sorted(p.name for p in model_dir.iterdir() if p.is_file())
    check = sanity(step_logits[0], generated)
    if name in KNOWN_DEGENERATE:
        check["known_degenerate"] = KNOWN_DEGENERATE[name]
    return {
        "case": name,
        "model": str(model_dir.relative_to(REPO)),
        "model_files_sha256": {f: sha256(model_dir / f) for f in files},
        "reference": "transformers %s, torch %s, float32, CPU, attn_implementation=%s"
                     % (transformers.__version__, torch.__version__,
                        hf_model.config._attn_implementation),
        "vocab_size": int(full.shape[1]),
        "prompt_text": prompt_text,
        "prompt_ids": prompt_ids,
        "prompt_top1": [int(x) for x in prompt_logits.argmax(-1)],
        "prompt_margins": margins(prompt_logits),
        "prompt_logit_positions": rows,
        "prompt_logits": prompt_logits[rows],
        "sequence_router_min_gap": (torch.stack(gaps32).min(0).values.numpy() if gaps32 else None),
        "generated_ids": generated,
        "step_margins": margins(step_logits),
        "step_logits": step_logits,
        "checks": {
            "sanity": check,
            "kv_cache_vs_full_forward_max_abs": cache_vs_full,
            "independent_float32_forward_max_abs": independent,
        },
        "fp16_emulation": emu_stats,
        "hf_float16": half_stats,
    }


# ---- JSON output: one logit row per line, float32 values in shortest form ----

def fmt_float(x):
    x = np.float32(x)
    if not np.isfinite(x):
        raise ValueError("non-finite value in output")
    return str(x)


def dump(obj, indent=0):
    pad = "  " * (indent + 1)
    if isinstance(obj, dict):
        items = ["%s%s: %s" % (pad, json.dumps(k), dump(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(obj, np.ndarray) and obj.ndim == 2:
        return "[\n" + ",\n".join(pad + dump(r, indent + 1) for r in obj) + "\n" + "  " * indent + "]"
    if isinstance(obj, np.ndarray):
        return "[" + ", ".join(fmt_float(v) for v in obj) + "]"
    if isinstance(obj, list) and all(isinstance(v, (int, float)) for v in obj):
        return "[" + ", ".join(json.dumps(v) for v in obj) + "]"
    if isinstance(obj, list):
        return "[" + ", ".join(dump(v, indent + 1) for v in obj) + "]"
    return json.dumps(obj)


def write_json(path, obj):
    text = dump(obj) + "\n"
    json.loads(text)  # well-formed
    path.write_text(text)
    return len(text)


# ---- the dequantization cross-checks ----

def compare_states(a, b, modules):
    """Max abs / rel difference over the weights of `modules` between two state dicts,
    tensors split into those equal up to float32 rounding and those that differ more."""
    rounding, differ = [], []
    worst_abs, worst_rel, rounding_abs = 0.0, 0.0, 0.0
    for m in modules:
        x, y = a[m + ".weight"].astype(np.float64), b[m + ".weight"].astype(np.float64)
        d = np.abs(x - y)
        rel = float((d / np.maximum(np.abs(x), 1e-30)).max())
        worst_abs = max(worst_abs, float(d.max()))
        worst_rel = max(worst_rel, float(d.max() / np.abs(x).max()))
        if rel <= 2.0 ** -22:  # a couple of float32 ulps
            rounding.append(m)
            rounding_abs = max(rounding_abs, float(d.max()))
        else:
            differ.append(m)
    return {"tensors_compared": len(modules), "max_abs": worst_abs,
            "max_abs_rel_to_tensor_max": worst_rel,
            "equal_up_to_float32_rounding": len(rounding),
            "max_abs_among_those": rounding_abs,
            "differing_beyond_rounding": differ}


def library_crosscheck(model_dir, tensors, state):
    """compressed-tensors' own decompression (run through transformers) against ours.

    transformers fuses per-expert linears into 3-D parameters, so those are
    compared after stacking ours the same way. Each parameter is classified by
    which of our values it equals exactly."""
    from transformers.utils.quantization_config import CompressedTensorsConfig
    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch.float32,
        quantization_config=CompressedTensorsConfig(run_compressed=False))

    def bf16(x):
        return torch.from_numpy(np.ascontiguousarray(x)).to(torch.bfloat16).float().numpy()

    def products(module):  # e2m1 * e4m3 without the global scale
        return nvfp4_decode.block_products(
            nvfp4_decode.raw_bytes(tensors[module + ".weight_packed"]),
            nvfp4_decode.raw_bytes(tensors[module + ".weight_scale"]))

    verdicts = {}
    for key, p in model.named_parameters():
        theirs = p.detach().float().numpy()
        if key in state:
            ours = state[key]
            no_global = products(key[:-len(".weight")]) if key[:-len(".weight")] + ".weight_packed" in tensors else None
        else:
            base, what = key.rsplit(".", 1)
            parts = ["gate_proj", "up_proj"] if what == "gate_up_proj" else ["down_proj"]
            experts = range(theirs.shape[0])
            ours = np.stack([np.concatenate([state["%s.%d.%s.weight" % (base, e, q)] for q in parts])
                             for e in experts])
            no_global = np.stack([np.concatenate([products("%s.%d.%s" % (base, e, q)) for q in parts])
                                  for e in experts])
        if np.array_equal(theirs, ours):
            verdict = "identical"
        elif np.array_equal(theirs, bf16(ours)):
            verdict = "identical after rounding ours to bfloat16"
        elif no_global is not None and np.array_equal(theirs, bf16(no_global)):
            verdict = "equals e2m1*e4m3 WITHOUT the global scale (library result wrong)"
        else:
            verdict = "different (max abs %g)" % float(np.abs(theirs - ours).max())
        verdicts.setdefault(verdict, []).append(key)
    return {"package": "compressed-tensors %s via transformers %s (run_compressed=False)"
                       % (PINNED["compressed-tensors"], transformers.__version__),
            "parameters": sum(len(v) for v in verdicts.values()),
            "by_verdict": {k: (v if len(v) <= 8 else v[:8] + ["... %d in all" % len(v)])
                           for k, v in verdicts.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mkmodel", help="volt-mkmodel binary: rewrite tests/golden/models first")
    ap.add_argument("--only", action="append", help="case name (repeatable)")
    ap.add_argument("--allow-other-versions", action="store_true")
    args = ap.parse_args()
    versions = check_versions(args.allow_other_versions)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    nvfp4_decode.check_e4m3_table_against_torch()

    if args.mkmodel:
        for name, (family, fmt, seed) in MODELS.items():
            out = MODELS_DIR / name
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run([args.mkmodel, "--family", family, "--format", fmt,
                            "--seed", str(seed), "-o", str(out)], check=True)

    EXPECTED_DIR.mkdir(exist_ok=True)
    states, quantized_of = {}, {}
    summary = {"versions": versions, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (family, fmt, seed) in MODELS.items():
            model_dir = MODELS_DIR / name
            tensors = nvfp4_decode.load_tensors(model_dir, weight_files(model_dir))
            state, quantized = nvfp4_decode.dequantize(tensors, fmt)
            states[name], quantized_of[name] = state, quantized
            if fmt == "compressed-tensors":
                ct_tensors = tensors
            path = model_dir if fmt == "bf16" else float_model_dir(model_dir, state, tmp)
            tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            cases = [(name, SHORT_PROMPT, SHORT_STEPS, False)]
            if name == "qwen3-moe-modelopt":
                cases.append((name + "-long", long_prompt_text(tok), LONG_STEPS, True))
            hf_model = None
            for case, prompt, steps, long_case in cases:
                if args.only and case not in args.only:
                    continue
                if hf_model is None:
                    hf_model = load_hf(path, state)
                result = run_case(case, model_dir, state, quantized, hf_model, tok, prompt,
                                  steps, long_case)
                result["volt_mkmodel"] = {"family": family, "format": fmt, "seed": seed}
                result["weights"] = ("checkpoint loaded by transformers as is" if fmt == "bf16" else
                                     "NVFP4 dequantized by tests/golden/nvfp4_decode.py (numpy)")
                size = write_json(EXPECTED_DIR / (case + ".json"), result)
                summary["cases"][case] = {
                    "bytes": size, "prompt_tokens": len(result["prompt_ids"]),
                    "sanity": result["checks"]["sanity"],
                    "min_step_margin": float(result["step_margins"].min()),
                    "min_router_gap": (float(result["sequence_router_min_gap"].min())
                                       if result["sequence_router_min_gap"] is not None else None),
                    "fp16_emulation": {k: result["fp16_emulation"][k] for k in
                                       ("max_abs", "max_rel_to_row_max", "rms_abs", "argmax_flips",
                                        "greedy_tokens_equal_before_first_difference",
                                        "router_gap_max_change") if k in result["fp16_emulation"]},
                    "hf_float16": {k: result["hf_float16"][k] for k in
                                   ("max_abs", "max_rel_to_row_max", "argmax_flips")},
                }
                print("%-34s %s" % (case, json.dumps(summary["cases"][case])), flush=True)
                if not result["checks"]["sanity"]["ok"]:
                    if case not in KNOWN_DEGENERATE:
                        sys.exit("%s looks degenerate: %s" % (case, result["checks"]["sanity"]))
                    print("note: %s is degenerate as expected (%s)" % (case, KNOWN_DEGENERATE[case]))

    if not args.only:
        mo, ct, bf = (states["qwen3-moe-" + f] for f in ("modelopt", "compressed-tensors", "bf16"))
        mods = quantized_of["qwen3-moe-modelopt"]
        if mods != quantized_of["qwen3-moe-compressed-tensors"]:
            raise RuntimeError("ModelOpt and compressed-tensors quantize different linears")
        crosscheck = {
            "modelopt_vs_compressed_tensors": compare_states(mo, ct, mods),
            "modelopt_vs_bf16_source": compare_states(bf, mo, mods),
            "compressed_tensors_vs_bf16_source": compare_states(bf, ct, mods),
            "compressed_tensors_library_vs_ours": library_crosscheck(
                MODELS_DIR / "qwen3-moe-compressed-tensors", ct_tensors, ct),
        }
        summary["dequantization"] = crosscheck
        print(json.dumps(crosscheck, indent=1))
        write_json(EXPECTED_DIR / "summary.json", summary)


if __name__ == "__main__":
    main()
