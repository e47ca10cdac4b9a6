#!/usr/bin/env python3
"""Writes tests/golden/ops/gated_deltanet.json: the Gated DeltaNet mixer's
two computations (causal conv1d + SiLU; the gated delta rule with its gated
RMSNorm) computed by transformers' own torch functions from
models/qwen3_next/modeling_qwen3_next.py, in float32 on the CPU, over a
schedule of steps like volt's engine runs them: several sequences, a first
prefill that spans more than one 64-token chunk, a continued prefill and
single-token decodes that carry the conv and recurrent state. The volt side
is tests/unit/cpu/GatedDeltaNetTest.cpp (runtime/cpu/GatedDeltaNet.h).

transformers picks the path the model itself takes: causal_conv1d_fn for a
sequence's first step, causal_conv1d_update after; the chunked form
(torch_chunk_gated_delta_rule) for steps of more than one token, the
recurrent form for single tokens with a state.

Versions used for the committed file (PyPI; a mismatch is an error unless
--allow-other-versions is given):

    pip install torch==2.15.0 transformers==5.24.0 numpy==2.4.6

Regenerate (from the repository root):

    python3 tests/golden/gated_deltanet_ops.py
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers.models.qwen3_next import modeling_qwen3_next as m

PINNED = {"torch": "2.15.0", "transformers": "5.24.0", "numpy": "2.4.6"}
OUT = Path(__file__).resolve().parent / "ops" / "gated_deltanet.json"

# A rank's shapes: value heads a multiple of key heads, dk != dv so a
# transposed state cannot pass.
HK, HV, DK, DV, K = 2, 4, 16, 12, 4
CONV = 2 * HK * DK + HV * DV
EPS = 1e-6
# (sequence, tokens) per step; every sequence starts at step 0.
STEPS = [
    [(0, 75), (1, 5), (2, 2)],  # first prefill: 75 spans two chunks; 2 < K - 1
    [(0, 1), (1, 1), (2, 3)],   # decodes, and a continued prefill
    [(0, 1), (2, 1)],           # decodes (sequence 1 is not in this step)
]


def f16(a):
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


def flat(a):
    """Float32 values, each written with the fewest digits that read back
    the same float32."""
    return [float(str(x)) for x in np.asarray(a, dtype=np.float32).reshape(-1)]


def flat16(a):
    """FP16-exact values, written as short as FP16 allows."""
    return [float(str(x)) for x in np.asarray(a, dtype=np.float16).reshape(-1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--allow-other-versions", action="store_true")
    args = ap.parse_args()
    have = {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__,
            "numpy": np.__version__}
    if have != PINNED and not args.allow_other_versions:
        sys.exit(f"versions {have} differ from the pinned {PINNED} (--allow-other-versions)")
    torch.manual_seed(0)
    rng = np.random.default_rng(2026)

    # Weights, perturbed so the reference can tell right from wrong: decays
    # spread over (0.02, 0.999), norm weights away from 1.
    conv_w = f16(rng.normal(0.0, 0.5, (CONV, K)))
    a_log = np.log(rng.uniform(0.02, 1.5, HV)).astype(np.float32)
    dt_bias = rng.uniform(-2.0, 1.0, HV).astype(np.float32)
    norm_w = f16(1.0 + rng.normal(0.0, 0.3, DV))

    norm = m.Qwen3NextRMSNormGated(DV, eps=EPS)
    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(norm_w))

    seqs = {s for step in STEPS for s, _ in step}
    conv_state = {s: None for s in seqs}  # [1, C, K - 1] after a sequence's first step
    rec_state = {s: None for s in seqs}   # [1, HV, DK, DV]
    out_steps = []
    for step in STEPS:
        entries = []
        for s, n in step:
            x = f16(rng.normal(0.0, 1.0, (n, CONV)))
            z = f16(rng.normal(0.0, 1.0, (n, HV * DV)))
            b = f16(rng.normal(0.0, 1.5, (n, HV)))
            a = f16(rng.normal(0.0, 1.0, (n, HV)))
            xt = torch.from_numpy(x).T.unsqueeze(0).contiguous()  # [1, C, n]
            w = torch.from_numpy(conv_w)
            if conv_state[s] is None:
                conv = m.causal_conv1d_fn(xt, w, None, activation="silu")
                padded = torch.cat([torch.zeros(1, CONV, K - 1), xt], dim=-1)
                conv_state[s] = padded[:, :, -(K - 1):].clone()
            else:
                conv = m.causal_conv1d_update(xt, conv_state[s], w, None, "silu")
            conv = conv[0].T.numpy()  # [n, C]
            # The delta rule's input is the conv output as volt stores it (FP16).
            qkv = f16(conv)
            q = torch.from_numpy(qkv[:, :HK * DK]).reshape(1, n, HK, DK)
            k = torch.from_numpy(qkv[:, HK * DK:2 * HK * DK]).reshape(1, n, HK, DK)
            v = torch.from_numpy(qkv[:, 2 * HK * DK:]).reshape(1, n, HV, DV)
            beta = torch.from_numpy(b).unsqueeze(0).sigmoid()
            g = -torch.from_numpy(a_log).exp() * F.softplus(torch.from_numpy(a).unsqueeze(0)
                                                            + torch.from_numpy(dt_bias))
            if rec_state[s] is not None and n == 1:
                core, rec = m.torch_recurrent_gated_delta_rule(
                    q, k, v, g=g, beta=beta, initial_state=rec_state[s], output_final_state=True,
                    use_qk_l2norm_in_kernel=True)
            else:
                core, rec = m.torch_chunk_gated_delta_rule(
                    q, k, v, g=g, beta=beta, initial_state=rec_state[s], output_final_state=True,
                    use_qk_l2norm_in_kernel=True)
            rec_state[s] = rec
            with torch.no_grad():
                out = norm(core.reshape(-1, DV), torch.from_numpy(z).reshape(-1, DV))
            entries.append({
                "seq": s, "tokens": n,
                "conv_in": flat16(x), "conv_out": flat(conv), "conv_state": flat16(conv_state[s][0].T),
                "qkv": flat16(qkv), "b": flat16(b), "a": flat16(a), "z": flat16(z),
                "out": flat(out.reshape(n, HV * DV)), "state": flat(rec[0]),
            })
        out_steps.append(entries)

    doc = {
        "reference": {"torch": have["torch"], "transformers": have["transformers"],
                      "functions": "transformers.models.qwen3_next.modeling_qwen3_next: "
                                   "causal_conv1d_fn, causal_conv1d_update, "
                                   "torch_chunk_gated_delta_rule, "
                                   "torch_recurrent_gated_delta_rule, Qwen3NextRMSNormGated",
                      "dtype": "float32"},
        "shapes": {"key_heads": HK, "value_heads": HV, "key_dim": DK, "value_dim": DV,
                   "kernel": K, "conv_dim": CONV, "norm_eps": EPS},
        "layouts": {"conv_in": "[n, C]", "conv_state": "[K - 1, C] oldest first",
                    "qkv": "[n, C]: q | k | v", "b": "[n, Hv]", "a": "[n, Hv]",
                    "z": "[n, Hv * dv]", "out": "[n, Hv * dv]", "state": "[Hv, dk, dv]"},
        "weights": {"conv_weight": flat16(conv_w), "a_log": flat(a_log), "dt_bias": flat(dt_bias),
                    "norm_weight": flat16(norm_w)},
        "steps": out_steps,
    }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
