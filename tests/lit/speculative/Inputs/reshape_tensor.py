"""Reverses the shape of one tensor in a model directory's safetensors files
(the same bytes, a shape its config does not expect): reshape_tensor.py DIR NAME.
The header keeps its length (padded with spaces, as the format allows)."""
import json
import os
import struct
import sys

directory, name = sys.argv[1], sys.argv[2]
for file in sorted(os.listdir(directory)):
    if not file.endswith(".safetensors"):
        continue
    path = os.path.join(directory, file)
    with open(path, "r+b") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        if name not in header:
            continue
        header[name]["shape"] = list(reversed(header[name]["shape"]))
        text = json.dumps(header, separators=(",", ":")).encode()
        if len(text) > length:
            sys.exit(f"{path}: the new header does not fit")
        f.seek(8)
        f.write(text + b" " * (length - len(text)))
        sys.exit(0)
sys.exit(f"{directory}: no tensor {name}")
