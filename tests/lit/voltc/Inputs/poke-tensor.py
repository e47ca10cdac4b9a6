"""Overwrites bytes of one tensor of a safetensors file, in place.

usage: poke-tensor.py FILE TENSOR ELEMENT HEXBYTES
Writes HEXBYTES (e.g. 7f, or 807f for a little-endian BF16 infinity) at
element ELEMENT of TENSOR, so that tests can plant NaN, infinity or a
negative scale where a reader must find it.
"""
import json
import struct
import sys

path, name, element, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), bytes.fromhex(sys.argv[4])
with open(path, "r+b") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(length))
    entry = header[name]
    size = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}[entry["dtype"]]
    begin, end = entry["data_offsets"]
    offset = 8 + length + begin + element * size
    assert offset + len(data) <= 8 + length + end, "past the tensor's end"
    f.seek(offset)
    f.write(data)
