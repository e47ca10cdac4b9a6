#!/usr/bin/env python3
"""Encode throughput of HF `tokenizers` on the conformance corpus, single
thread, for comparison with tokenizer_bench (docs/perf/tokenizer.md).

    pip install tokenizers==0.23.3
    TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 \
        python3 tests/bench/tokenizer/hf_bench.py [names...]

Per tokenizer: `encode` one string at a time (the comparable number), and
`encode_batch` over the whole corpus with one thread. Inputs are decoded
from bytes to str (invalid UTF-8 replaced) before timing. Times are CPU
time of the process (time.process_time), as Google Benchmark reports for
tokenizer_bench, so that a busy machine distorts neither.
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
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main():
    names = sys.argv[1:] or ["qwen3", "llama3", "mistral-v1", "mistral-v3"]
    raw = corpus()
    texts = [b.decode("utf-8", "replace") for b in raw]
    mb = sum(len(b) for b in raw) / 1e6
    short = [t for t, b in zip(texts, raw) if len(b) <= 10000]
    short_mb = sum(len(b) for b in raw if len(b) <= 10000) / 1e6
    print(f"tokenizers {tokenizers.__version__}, {len(texts)} strings, {mb:.2f} MB")
    for name in names:
        tok = Tokenizer.from_str(lzma.decompress(open(os.path.join(HERE, f"{name}.tokenizer.json.xz"), "rb").read()).decode())
        for label, subset, size in [("all", texts, mb), ("short (<= 10 KB)", short, short_mb)]:
            ntok = sum(len(tok.encode(t, add_special_tokens=False).ids) for t in subset)  # warms the cache
            single = best_of(lambda: [tok.encode(t, add_special_tokens=False) for t in subset])
            batch = best_of(lambda: tok.encode_batch(subset, add_special_tokens=False))
            print(f"{name} {label}: encode {size / single:.2f} MB/s ({ntok / single / 1e6:.2f} M tokens/s), "
                  f"encode_batch (1 thread) {size / batch:.2f} MB/s")
        if name in ("qwen3", "mistral-v1"):
            word = "x" * (1 << 20)
            t = best_of(lambda: tok.encode(word, add_special_tokens=False), repeats=3)
            print(f"{name} one 1 MB word: {t * 1000:.0f} ms")


if __name__ == "__main__":
    main()
