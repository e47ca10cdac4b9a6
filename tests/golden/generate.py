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
import tokenizers
import torch
import transformers
from safetensors.numpy import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dequant_checks  # noqa: E402
import fp16_emulation  # noqa: E402
import nvfp4_decode  # noqa: E402
from tolerance import (TOLERANCE, compared_rel_diffs, diff_stats, first_tie,  # noqa: E402
                       margins, position_rtol, robust_prefix, tolerance_check)

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
    "qwen3-moe-modelopt": ("qwen3-moe", "modelopt", 11),
    "qwen3-moe-compressed-tensors": ("qwen3-moe", "compressed-tensors", 11),
    "qwen3-moe-bf16": ("qwen3-moe", "bf16", 11),
    "qwen2-moe-modelopt": ("qwen2-moe", "modelopt", 10),
    "mixtral-modelopt": ("mixtral", "modelopt", 14),
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


def run_case(name, model_dir, state, quantized, hf_model, tok, prompt_text, steps, long_case,
             relative_to=REPO):
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
    emu_logits = emu.logits(sequence).numpy()
    emu_stats = diff_stats(full, emu_logits)
    if gaps32:
        emu_stats["router_gap_max_change"] = float(max(
            (a - b).abs().max() for a, b in zip(gaps32, emu.router_gaps)))
    emu_generated = emu.greedy(prompt_ids, steps)
    agree = next((i for i, (a, b) in enumerate(zip(generated, emu_generated)) if a != b), steps)
    emu_stats["greedy_tokens_equal_before_first_difference"] = agree
    gap_min = torch.stack(gaps32).min(0).values.numpy() if gaps32 else None
    prefix = robust_prefix(margins(step_logits), gap_min, len(prompt_ids))
    (emu_stats["max_rel_compared_before_tie"],
     emu_stats["max_rel_compared_after_tie"]) = compared_rel_diffs(full, gap_min, emu_logits)
    emu_stats["tolerance_violations"] = tolerance_check(full, gap_min, emu_logits, generated,
                                                        emu_generated, prefix)

    half = copy.deepcopy(hf_model).to(torch.float16)  # .to() in place would change hf_model
    half_logits = forward_hf(half, sequence)
    del half
    half_stats = diff_stats(full, half_logits)
    # informative only: transformers rounds at more points than volt does
    half_stats["tolerance_violations_teacher_forced"] = tolerance_check(
        full, gap_min, half_logits, generated, generated, prefix)

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
        "model": str(model_dir.relative_to(relative_to)),
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
        "sequence_router_min_gap": gap_min,
        "generated_ids": generated,
        "step_margins": margins(step_logits),
        "step_logits": step_logits,
        "tolerance": TOLERANCE,
        "sequence_first_router_tie": first_tie(gap_min),
        "sequence_rtol": position_rtol(gap_min, len(sequence)),
        "greedy_robust_prefix": prefix,
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
    """Shortest decimal that gives back the same float32 when parsed as a double and
    rounded to float (what a C++ reader does); 9 significant digits where it would not."""
    x = np.float32(x)
    if not np.isfinite(x):
        raise ValueError("non-finite value in output")
    text = str(x)
    return text if np.float32(float(text)) == x else "%.9g" % x


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

def seed_scan(mkmodel, family, fmt, seeds):
    """For each seed: the first routing tie and the robust prefix of the short case, from the
    independent float32 forward alone (fast; how the committed seeds were picked)."""
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            model_dir = Path(tmp) / str(seed)
            subprocess.run([mkmodel, "--family", family, "--format", fmt, "--seed", str(seed),
                            "-o", str(model_dir)], check=True, stdout=subprocess.DEVNULL)
            state, quantized = nvfp4_decode.dequantize(
                nvfp4_decode.load_tensors(model_dir, weight_files(model_dir)), fmt)
            config = json.loads((model_dir / "config.json").read_text())
            tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            prompt = tok.encode(SHORT_PROMPT, add_special_tokens=False).ids
            f = fp16_emulation.Forward(config, state, fp16=False, quantized_modules=quantized)
            generated = f.greedy(prompt, SHORT_STEPS)
            logits = f.logits(prompt + generated[:-1]).numpy()
            gaps = torch.stack(f.router_gaps).min(0).values.numpy() if f.router_gaps else None
            m = margins(logits[len(prompt) - 1:])
            print("%s %s seed %d: first tie %s, robust prefix %d, min step margin %.4f, distinct %d"
                  % (family, fmt, seed, first_tie(gaps), robust_prefix(m, gaps, len(prompt)),
                     float(m.min()), len(set(generated))), flush=True)


def tolerance_study(mkmodel, seeds):
    """The FP16-emulation and HF float16 differences over more seeds of every family
    (temporary models, nothing written): the spread behind the tolerances in docs/golden.md."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family, fmt in (("qwen3-moe", "modelopt"), ("qwen2-moe", "modelopt"),
                            ("mixtral", "modelopt"), ("qwen3", "modelopt"), ("qwen3-moe", "bf16")):
            for seed in seeds:
                name = "%s-%s-%d" % (family, fmt, seed)
                model_dir = Path(tmp) / name
                subprocess.run([mkmodel, "--family", family, "--format", fmt, "--seed", str(seed),
                                "-o", str(model_dir)], check=True, stdout=subprocess.DEVNULL)
                tensors = nvfp4_decode.load_tensors(model_dir, weight_files(model_dir))
                state, quantized = nvfp4_decode.dequantize(tensors, fmt)
                path = model_dir if fmt == "bf16" else float_model_dir(model_dir, state, tempfile.mkdtemp(dir=tmp))
                tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
                r = run_case(name, model_dir, state, quantized, load_hf(path, state), tok,
                             SHORT_PROMPT, SHORT_STEPS, False, relative_to=Path(tmp))
                e, h = r["fp16_emulation"], r["hf_float16"]
                rows.append((name, e["max_abs"], e["max_rel_to_row_max"], len(e["argmax_flips"]),
                             e["greedy_tokens_equal_before_first_difference"], h["max_abs"],
                             h["max_rel_to_row_max"], len(h["argmax_flips"]),
                             float(r["step_margins"].min()), r["checks"]["sanity"]["ok"],
                             r["greedy_robust_prefix"], e["tolerance_violations"],
                             e["max_rel_compared_before_tie"], e["max_rel_compared_after_tie"],
                             e["max_margin_change"], e.get("router_gap_max_change")))
                print("%-26s emu %.4f (rel %.4f, flips %d, greedy %2d/%d)  hf16 %.4f (rel %.4f, "
                      "flips %d)  min step margin %.4f  sane %s  robust prefix %d  violations %s  "
                      "compared rel before/after tie %s/%s  margin change %.4f  gap change %s"
                      % (rows[-1][:4] + (rows[-1][4], SHORT_STEPS) + rows[-1][5:]), flush=True)
    worst = max(rows, key=lambda r: r[2])
    print("worst FP16-emulation max_rel_to_row_max: %.4f (%s)" % (worst[2], worst[0]))
    print("cases whose FP16 emulation fails the tolerances: %s" % [r[0] for r in rows if r[11]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mkmodel", help="volt-mkmodel binary: rewrite tests/golden/models first")
    ap.add_argument("--only", action="append", help="case name (repeatable)")
    ap.add_argument("--allow-other-versions", action="store_true")
    ap.add_argument("--study-seeds", type=int, default=0, metavar="N",
                    help="with --mkmodel: only run the tolerance study over N more seeds per family")
    ap.add_argument("--scan-seeds", nargs=4, metavar=("FAMILY", "FORMAT", "FIRST", "COUNT"),
                    help="with --mkmodel: only print each seed's first routing tie and robust prefix")
    args = ap.parse_args()
    versions = check_versions(args.allow_other_versions)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    nvfp4_decode.check_e4m3_table_against_torch()
    if args.scan_seeds:
        family, fmt, first, count = args.scan_seeds
        seed_scan(args.mkmodel, family, fmt, range(int(first), int(first) + int(count)))
        return
    if args.study_seeds:
        if not args.mkmodel:
            sys.exit("--study-seeds needs --mkmodel")
        tolerance_study(args.mkmodel, range(1000, 1000 + args.study_seeds))
        return

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
                                        "router_gap_max_change", "max_margin_change",
                                        "max_rel_compared_before_tie", "max_rel_compared_after_tie",
                                        "tolerance_violations")
                                       if k in result["fp16_emulation"]},
                    "greedy_robust_prefix": result["greedy_robust_prefix"],
                    "sequence_first_router_tie": result["sequence_first_router_tie"],
                    "hf_float16": {k: result["hf_float16"][k] for k in
                                   ("max_abs", "max_rel_to_row_max", "argmax_flips")},
                }
                print("%-34s %s" % (case, json.dumps(summary["cases"][case])), flush=True)
                if result["fp16_emulation"]["tolerance_violations"]:
                    sys.exit("%s: the FP16 emulation fails the tolerances: %s"
                             % (case, result["fp16_emulation"]["tolerance_violations"]))
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
            "modelopt_vs_compressed_tensors": dequant_checks.compare_states(mo, ct, mods),
            "modelopt_vs_bf16_source": dequant_checks.compare_states(bf, mo, mods),
            "compressed_tensors_vs_bf16_source": dequant_checks.compare_states(bf, ct, mods),
            "compressed_tensors_library_vs_ours": dequant_checks.library_crosscheck(
                MODELS_DIR / "qwen3-moe-compressed-tensors", ct_tensors, ct,
                PINNED["compressed-tensors"]),
        }
        summary["dequantization"] = crosscheck
        print(json.dumps(crosscheck, indent=1))
        write_json(EXPECTED_DIR / "summary.json", summary)


if __name__ == "__main__":
    main()
