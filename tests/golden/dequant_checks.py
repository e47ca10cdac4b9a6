"""Cross-checks of the NVFP4 dequantization: the ModelOpt and compressed-tensors
exports of one seed against each other and against their BF16 source, and
the compressed-tensors package's own decompression against nvfp4_decode.
"""

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

import nvfp4_decode

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


def library_crosscheck(model_dir, tensors, state, package_version):
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
                       % (package_version, transformers.__version__),
            "parameters": sum(len(v) for v in verdicts.values()),
            "by_verdict": {k: (v if len(v) <= 8 else v[:8] + ["... %d in all" % len(v)])
                           for k, v in verdicts.items()}}
