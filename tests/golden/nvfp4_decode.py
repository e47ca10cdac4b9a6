"""Dequantizes NVFP4 checkpoints (ModelOpt and compressed-tensors) to float32
state dicts with plain numpy, from the published formats, so that Hugging Face
transformers can load them as an ordinary float model on the CPU.

Formats (see docs/reference/NVFP4.md):
  - E2M1 codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign.
  - Two codes per byte along K; the element with the even index is the low nibble.
  - One E4M3FN block scale per 16 elements along K (bias 7, no infinities,
    0x7F/0xFF NaN, subnormals m * 2^-9).
  - ModelOpt:           w = e2m1 * e4m3(weight_scale) * weight_scale_2
  - compressed-tensors: w = e2m1 * e4m3(weight_scale) / weight_global_scale

The raw bytes are read through the `safetensors` package (framework "pt":
numpy has no float8 dtype) and decoded here; torch's own float8_e4m3fn
conversion is used only as a cross-check of the E4M3 table.
"""

import numpy as np
import torch
from safetensors import safe_open

E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                        -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32)
BLOCK = 16


def e4m3fn_table():
    """The value of each of the 256 E4M3FN codes, as float32 (NaN for 0x7F, 0xFF)."""
    table = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exp = (code >> 3) & 0xF
        man = code & 0x7
        if exp == 0xF and man == 0x7:
            table[code] = np.nan
        elif exp == 0:
            table[code] = sign * man * 2.0 ** -9
        else:
            table[code] = sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7)
    return table.astype(np.float32)


E4M3_VALUES = e4m3fn_table()


def check_e4m3_table_against_torch():
    """Our E4M3FN table must agree with torch's float8_e4m3fn for every code."""
    codes = torch.arange(256, dtype=torch.uint8)
    theirs = codes.view(torch.float8_e4m3fn).to(torch.float32).numpy()
    same = (theirs == E4M3_VALUES) | (np.isnan(theirs) & np.isnan(E4M3_VALUES))
    if not same.all():
        bad = np.nonzero(~same)[0]
        raise RuntimeError("E4M3 table differs from torch at codes %s" % bad[:8].tolist())


def unpack_e2m1(packed):
    """uint8 [N, K/2] -> float32 [N, K]; the even element is the low nibble."""
    n, half = packed.shape
    codes = np.empty((n, half * 2), dtype=np.uint8)
    codes[:, 0::2] = packed & 0x0F
    codes[:, 1::2] = packed >> 4
    return E2M1_VALUES[codes]


def block_products(packed, scale_codes):
    """e2m1 * e4m3 for every element (exact in float32: at most 6 significant bits)."""
    elems = unpack_e2m1(packed)
    n, k = elems.shape
    if scale_codes.shape != (n, k // BLOCK):
        raise ValueError("block scales have shape %s, expected %s" % (scale_codes.shape, (n, k // BLOCK)))
    scales = E4M3_VALUES[scale_codes]
    if np.isnan(scales).any() or (scales < 0).any():
        raise ValueError("block scales hold NaN or negative values")
    return elems * np.repeat(scales, BLOCK, axis=1)


def raw_bytes(tensor):
    """A torch tensor of a 1-byte dtype as numpy uint8 with the same shape."""
    return tensor.contiguous().view(torch.uint8).numpy()


def load_tensors(model_dir, files):
    """Every tensor of the model's safetensors files, as torch tensors (any dtype)."""
    out = {}
    for name in files:
        with safe_open(str(model_dir / name), framework="pt") as f:
            for key in f.keys():
                out[key] = f.get_tensor(key)
    return out


def dequantize(tensors, fmt):
    """A float32 state dict (numpy arrays) with HF names from an NVFP4 or bf16 tensor table.

    `fmt` is "modelopt", "modelopt-mixed" (NVFP4 and FP8 per layer),
    "compressed-tensors", "compressed-tensors-fp8" (FP8 with a scale per row,
    shape [N, 1]) or "bf16". Quantized linears become `P.weight`
    float32 [N, K]; activation and KV scales are dropped (volt runs
    weight-only); every other tensor is converted to float32. FP8 E4M3
    weights are decoded by the table above times their `weight_scale` (one
    value, one per row, or one per 128 x 128 block).
    Returns (state dict, names of the linears that were quantized).
    """
    state = {}
    quantized = []
    consumed = set()
    modelopt = fmt in ("modelopt", "modelopt-mixed")
    fp8 = modelopt or fmt == "compressed-tensors-fp8"
    for key, t in tensors.items():
        if fp8 and key.endswith(".weight") and t.dtype == torch.float8_e4m3fn:
            module = key[: -len(".weight")]
            values = E4M3_VALUES[raw_bytes(t)]
            scale = tensors[module + ".weight_scale"].to(torch.float32).numpy()
            if scale.size == 1:
                values = values * np.float32(scale.reshape(()))
            elif scale.reshape(-1).shape[0] == values.shape[0]:
                values = values * scale.reshape(-1, 1)
            else:
                rows = np.repeat(np.repeat(scale, 128, axis=0), 128, axis=1)
                values = values * rows[: values.shape[0], : values.shape[1]]
            state[key] = values.astype(np.float32)
            consumed |= {key, module + ".weight_scale", module + ".input_scale"}
            quantized.append(module)
        elif modelopt and key.endswith(".weight") and t.dtype == torch.uint8:
            module = key[: -len(".weight")]
            products = block_products(raw_bytes(t), raw_bytes(tensors[module + ".weight_scale"]))
            g = tensors[module + ".weight_scale_2"]
            if g.dtype != torch.float32 or g.numel() != 1:
                raise ValueError("%s.weight_scale_2: expected one float32" % module)
            state[key] = products * np.float32(g.item())
            consumed |= {key, module + ".weight_scale", module + ".weight_scale_2", module + ".input_scale"}
            quantized.append(module)
        elif fmt == "compressed-tensors" and key.endswith(".weight_packed"):
            module = key[: -len(".weight_packed")]
            products = block_products(raw_bytes(t), raw_bytes(tensors[module + ".weight_scale"]))
            gs = tensors[module + ".weight_global_scale"]
            if gs.dtype != torch.float32 or gs.numel() != 1:
                raise ValueError("%s.weight_global_scale: expected one float32" % module)
            state[module + ".weight"] = products / np.float32(gs.item())
            consumed |= {key, module + ".weight_scale", module + ".weight_global_scale",
                         module + ".input_global_scale"}
            quantized.append(module)
    for key, t in tensors.items():
        if key in consumed:
            continue
        if t.dtype not in (torch.bfloat16, torch.float16, torch.float32):
            raise ValueError("%s: unexpected dtype %s in a %s checkpoint" % (key, t.dtype, fmt))
        state[key] = t.to(torch.float32).numpy()
    for key, v in state.items():
        if not np.isfinite(v).all():
            raise ValueError("%s: non-finite values after dequantization" % key)
        state[key] = v.astype(np.float32, copy=False)
    return state, sorted(quantized)
