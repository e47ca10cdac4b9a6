#!/usr/bin/env python3
"""Encode throughput of HF `tokenizers` on the conformance corpus, single
thread, for comparison with tokenizer_bench (docs/perf/tokenizer.md).

    pip install tokenizers==0.23.3
    TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 \
        python3 tests/bench/tokenizer/hf_bench.py [names...]

Per tokenizer: `encode` one string at a time (the comparable number), and
`encode_batch` over the whole corpus with one thread. Inputs are decoded
from bytes to str (invalid UTF-8 replaced) before timing.
"""
import lzma
import os
import struct
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conformance", "tokenizer")


def corpus():
    blob = lzma.decompress(open(os.path.join(HERE, "corpus.bin.xz"), "rb").read())
    items, pos = [], 0
    while pos + 4 <= len(blob):
        (n,) = struct.unpack_from("<I", blob, pos)
        items.append(blob[pos + 4:pos + 4 + n])
        pos += 4 + n
    return items


def best_of(fn, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    names = sys.argv[1:] or ["qwen3", "llama3", "mistral-v1", "mistral-v3"]
    raw = corpus()
    texts = [b.decode("utf-8", "replace") for b in raw]
    mb = sum(len(b) for b in raw) / 1e6
    print(f"tokenizers {tokenizers.__version__}, {len(texts)} strings, {mb:.2f} MB")
    for name in names:
        tok = Tokenizer.from_str(lzma.decompress(open(os.path.join(HERE, f"{name}.tokenizer.json.xz"), "rb").read()).decode())
        ntok = sum(len(tok.encode(t, add_special_tokens=False).ids) for t in texts)  # also warms the cache
        single = best_of(lambda: [tok.encode(t, add_special_tokens=False) for t in texts])
        batch = best_of(lambda: tok.encode_batch(texts, add_special_tokens=False))
        print(f"{name}: encode {mb / single:.2f} MB/s ({ntok / single / 1e6:.2f} M tokens/s), "
              f"encode_batch (1 thread) {mb / batch:.2f} MB/s")


if __name__ == "__main__":
    main()
