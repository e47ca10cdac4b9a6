#!/usr/bin/env python3
"""Rewrites a volt-mkmodel Qwen3.5 / Qwen3.6 BF16 checkpoint (one
safetensors file, multimodal layout) so that its MTP head agrees with the
target model most of the time, without training, for the MTP benchmark:

- every layer but the last adds nothing to the residual stream (its
  o_proj / linear_attn.out_proj and its experts' and shared expert's down
  projections are zeros), though it is still computed, at its full cost;
- the last layer (full attention) is a copy of mtp.layers.0, and the final
  norm is mtp.norm;
- embedding rows are scaled to RMS 1, mtp.pre_fc_norm_embedding is 0
  (the zero-centred norm's scale 1) and mtp.fc is [I | 0], so that the
  head's x is the next token's embedding, as the target's last layer sees
  it.

The head at position p then computes what the target computes at p + 1,
except that its attention lacks the sequence's first token: its greedy
draft is usually the target's next token. Standard library only.
    agreeing_mtp.py MODEL_DIR
"""

import json
import math
import pathlib
import struct
import sys


def bf16_to_float(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def float_to_bf16(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even


def main(model_dir):
    path = pathlib.Path(model_dir) / "model.safetensors"
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", None)
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        if info["dtype"] != "BF16":
            raise SystemExit("%s: %s is %s; expected a BF16 checkpoint" % (path, name, info["dtype"]))
        tensors[name] = bytearray(data[begin:end])

    config = json.loads((pathlib.Path(model_dir) / "config.json").read_text())
    text = config.get("text_config", config)
    layers = text["num_hidden_layers"]
    if text["layer_types"][-1] != "full_attention":
        raise SystemExit("the last layer must be full attention")
    prefix = "model.language_model."
    last = prefix + "layers.%d." % (layers - 1)
    hidden = text["hidden_size"]

    for name in tensors:
        if not name.startswith(prefix + "layers.") or name.startswith(last):
            continue
        if name.endswith(("self_attn.o_proj.weight", "linear_attn.out_proj.weight",
                          "mlp.experts.down_proj", "shared_expert.down_proj.weight")):
            tensors[name] = bytearray(len(tensors[name]))
    for name in [k for k in tensors if k.startswith(last)]:
        del tensors[name]
    for name in [k for k in tensors if k.startswith("mtp.layers.0.")]:
        tensors[last + name[len("mtp.layers.0."):]] = bytearray(tensors[name])
        header[last + name[len("mtp.layers.0."):]] = dict(header[name])
    for name in [k for k in header if k.startswith(last) and k not in tensors]:
        del header[name]
    tensors[prefix + "norm.weight"] = bytearray(tensors["mtp.norm.weight"])

    embed = tensors[prefix + "embed_tokens.weight"]
    for row in range(len(embed) // (2 * hidden)):
        at = row * 2 * hidden
        values = [bf16_to_float(h) for h in struct.unpack_from("<%dH" % hidden, embed, at)]
        rms = math.sqrt(sum(v * v for v in values) / hidden) or 1.0
        struct.pack_into("<%dH" % hidden, embed, at, *[float_to_bf16(v / rms) for v in values])
    tensors["mtp.pre_fc_norm_embedding.weight"] = bytearray(2 * hidden)
    fc = bytearray(2 * hidden * 2 * hidden)
    for i in range(hidden):
        struct.pack_into("<H", fc, 2 * (i * 2 * hidden + i), 0x3F80)  # 1.0
    if len(fc) != len(tensors["mtp.fc.weight"]):
        raise SystemExit("mtp.fc.weight is not [hidden, 2 * hidden]")
    tensors["mtp.fc.weight"] = fc

    out_header, offset, chunks = {}, 0, []
    for name in sorted(tensors):
        info = dict(header[name])
        info["data_offsets"] = [offset, offset + len(tensors[name])]
        out_header[name] = info
        chunks.append(bytes(tensors[name]))
        offset += len(tensors[name])
    if meta is not None:
        out_header["__metadata__"] = meta
    head = json.dumps(out_header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(chunks))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[-1].strip())
    main(sys.argv[1])
