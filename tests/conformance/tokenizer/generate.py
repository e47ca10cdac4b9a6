#!/usr/bin/env python3
"""Builds the tokenizer.json files, the text corpus and the expected token ids
and decodes that tests/unit/tokenizer/ConformanceTest.cpp compares volt's
tokenizer against. The expectations are computed by Hugging Face `tokenizers`,
not by volt. See docs/tokenizer.md for the provenance of every file.

Inputs (files that PyPI packages ship; nothing else is downloaded):

    pip install tokenizers==0.23.3 transformers==5.24.0 sentencepiece==0.2.3 \
        protobuf==7.36.2 gguf==0.19.0 numpy==2.4.6   # versions used for the committed files
    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d dl
    pip download --no-deps mistral-common==1.13.1 -d dl
    tar xzf dl/llama_cpp_python-0.3.36.tar.gz   # vendor/llama.cpp/models/ggml-vocab-*.gguf
    unzip dl/mistral_common-1.13.1-py3-none-any.whl 'mistral_common/data/*'

    python3 tests/conformance/tokenizer/generate.py \
        --gguf-dir llama_cpp_python-0.3.36/vendor/llama.cpp/models \
        --mistral-dir mistral_common/data --out tests/conformance/tokenizer

Outputs (all xz-compressed):
    <name>.tokenizer.json.xz  for name in qwen3, llama3, mistral-v1, mistral-v3
    corpus.bin.xz             the strings, as raw bytes (some are not UTF-8)
    <name>.expect.bin.xz      per string: ids without and with special tokens,
                              and three decodes
Binary layout: see tests/unit/tokenizer/ConformanceData.h.
"""
import argparse
import json
import lzma
import os
import random
import struct
import sys
import sysconfig

import gguf
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE

# The published pre-tokenizer regexes of the two byte-level families (the
# `Split` pattern of their tokenizer.json files).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Qwen3's added tokens after the 151,643 BPE tokens, as its tokenizer.json
# lists them: (content, special). All are lstrip/rstrip/single_word false and
# normalized false. Qwen1.5, Qwen2, Qwen2.5 and Qwen3 share the BPE vocabulary
# and merges; they differ only in this list.
QWEN3_ADDED = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False),
]


def gguf_vocab(path):
    r = gguf.GGUFReader(path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    merges = r.fields["tokenizer.ggml.merges"].contents()
    return tokens, types, merges


def byte_level_bpe(tokens, merges, n_regular, regex, ignore_merges):
    vocab = {t: i for i, t in enumerate(tokens[:n_regular])}
    pairs = [tuple(m.split(" ")) for m in merges]
    tok = Tokenizer(BPE(vocab=vocab, merges=pairs, dropout=None, unk_token=None,
                        continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                        byte_fallback=False, ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return tok


def build_qwen3(gguf_dir):
    tokens, types, merges = gguf_vocab(os.path.join(gguf_dir, "ggml-vocab-qwen2.gguf"))
    n = 151643
    assert all(t == 1 for t in types[:n]) and tokens[n] == "<|endoftext|>"
    tok = byte_level_bpe(tokens, merges, n, QWEN2_REGEX, ignore_merges=False)
    tok.normalizer = normalizers.NFC()
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.add_tokens([tokenizers.AddedToken(c, special=s, normalized=False) for c, s in QWEN3_ADDED])
    j = json.loads(tok.to_str())
    # Older Qwen files write merges as "a b" strings; keep that format here
    # so that the other files (pairs) cover the newer one.
    j["model"]["merges"] = [" ".join(p) for p in j["model"]["merges"]]
    return j


def build_llama3(gguf_dir):
    tokens, types, merges = gguf_vocab(os.path.join(gguf_dir, "ggml-vocab-llama-bpe.gguf"))
    n = 128000
    assert all(t == 1 for t in types[:n]) and all(t == 3 for t in types[n:])
    tok = byte_level_bpe(tokens, merges, n, LLAMA3_REGEX, ignore_merges=True)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.add_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in tokens[n:]])
    bos = "<|begin_of_text|>"
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos}:1 $B:1",
                                      special_tokens=[(bos, n)]),
    ])
    return json.loads(tok.to_str())


def spm_proto(path):
    from transformers.convert_slow_tokenizer import import_protobuf
    m = import_protobuf().ModelProto()
    with open(path, "rb") as f:
        m.ParseFromString(f.read())
    assert m.trainer_spec.model_type == 2 and m.trainer_spec.byte_fallback  # BPE with byte fallback
    return m


def spm_added_tokens(proto):
    # SentencePiece control pieces (type 3) are special added tokens,
    # user-defined pieces (type 4) are added tokens that are not special.
    return [tokenizers.AddedToken(p.piece, special=p.type in (2, 3), normalized=False)
            for p in proto.pieces if p.type in (2, 3, 4)]


def build_mistral_v1(path):
    """The layout of the published Llama 2 / Mistral-7B-v0.1 tokenizer.json
    files (a Prepend+Replace normalizer, no pre-tokenizer), with the vocabulary
    and the score-ranked merges that transformers' converter derives from the
    SentencePiece model."""
    from transformers.convert_slow_tokenizer import SpmConverter
    proto = spm_proto(path)
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    converted = json.loads(SpmConverter.build_tokenizer_from_spm_proto(proto, vocab, legacy=True).to_str())
    merges = [tuple(m) for m in converted["model"]["merges"]]
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True,
                        dropout=None))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_tokens(spm_added_tokens(proto))
    # LlamaTokenizerFast's default: a BOS before each sequence, no EOS.
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", 1)])
    return json.loads(tok.to_str())


def build_mistral_v3(path):
    """What transformers' converter (SpmConverter, non-legacy) builds from the
    SentencePiece model, plus its added tokens and a BOS template."""
    from transformers.convert_slow_tokenizer import SpmConverter
    proto = spm_proto(path)
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    tok = SpmConverter.build_tokenizer_from_spm_proto(proto, vocab, legacy=False)
    tok.add_tokens(spm_added_tokens(proto))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", 1)])
    return json.loads(tok.to_str())


# ---------------------------------------------------------------- corpus ---

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How's it going? I'm fine, you'll see; they'd've done it.",
    "I'M SHOUTING, DON'T YOU SEE? IT'S LOUD. WE'LL STOP.",
    "我们今天去公园散步，天气非常好。", "机器学习是人工智能的一个分支。", "你好，世界！这是一个测试。",
    "日本語のテキストも含めます。東京は日本の首都です。", "カタカナとひらがなを混ぜる。",
    "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок.",
    "مرحبا بالعالم، هذا نص باللغة العربية.", "नमस्ते दुनिया, यह हिंदी में एक वाक्य है।",
    "안녕하세요 세계! 한국어 문장입니다.", "Xin chào thế giới, đây là tiếng Việt có dấu.",
    "Ελληνικά: Γειά σου Κόσμε, καλημέρα.", "עברית: שלום עולם, מה שלומך?",
    "ภาษาไทย: สวัสดีชาวโลก ยินดีต้อนรับ", "Ünïcödé wïth dïäcrïtïcs: naïve café façade résumé Straße.",
    "Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 🧑🏿‍🚀 ✨🎉",
    "Math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ = ∫₀¹ f(x) dx ≈ 3.14159…",
    "Numbers: 1234567890 3.14159265358979 1,000,000 2024-01-15 0x7fffffff 1e-10",
    "Tabs\tand\tnewlines\nmixed\r\nwith  double  spaces   and    more.",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>",
    "<s>[INST] Tell me a joke [/INST] Why did the chicken cross the road?</s>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<think>\nLet me reason.\n</think>\n\nThe answer is 42.", "<tool_call>{\"name\": \"f\"}</tool_call>",
    "not special: <|im_start and im_end|> and <s > and < /s> and <|endoftext| >",
    "def f(x):\n    return x * 2  # double\n\n\nclass A:\n\tpass\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "https://example.com/path?query=value&other=1#frag",
]

SCRIPTS = [  # (first, last) code point ranges to sample "words" from
    (0x61, 0x7A), (0x41, 0x5A), (0x30, 0x39), (0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF),
    (0x0410, 0x044F), (0x0600, 0x06FF), (0x0900, 0x097F), (0xAC00, 0xD7A3), (0x0E00, 0x0E7F),
    (0x0370, 0x03FF), (0x05D0, 0x05EA), (0x1F300, 0x1F64F), (0x1F900, 0x1F9FF), (0x2000, 0x206F),
    (0x00A0, 0x00FF), (0x0300, 0x036F), (0x1100, 0x11FF), (0x20000, 0x2A6DF), (0xE000, 0xE0FF),
]
WHITESPACE = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "   \n", " \t ", "\u00a0", "\u3000", "\u2003",
              "\u200b", "\r", "\x0b", "\x0c", "\u2028", "\u0085"]
LOOKALIKES = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "[INST]", "[/INST]",
              "<|begin_of_text|>", "<|eot_id|>", "<think>", "</think>", "<tool_call>", "<|fim_prefix|>",
              "<|im_start", "im_end|>", "<|", "|>", "<<s>>", "<|reserved_special_token_5|>", "▁", "▁▁",
              "<0x41>", "[TOOL_CALLS]", "<|file_sep|>", "<|vision_pad|>"]
DECOMPOSED = ["e\u0301", "a\u0308", "o\u0302\u0323", "\u1100\u1161\u11a8", "A\u030a", "\u212b",
              "\u0071\u0307\u0323", "n\u0303", "\uff21\uff22", "\ufb01", "\u00c5", "\u1e0b\u0323"]
ODD = ["\x00", "\x01", "\x7f", "\ufeff", "\ufffd", "\uffff", "\U0010ffff", "\U000e0041", "\u200d",
       "\u202e", "\u0000\u0000", "\ud7ff", "\ue000", "\U0001f3fb"]


def random_word(rng):
    lo, hi = rng.choice(SCRIPTS)
    return "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8)))


def random_mix(rng):
    parts = []
    for _ in range(rng.randint(1, 20)):
        k = rng.random()
        if k < 0.35:
            parts.append(random_word(rng))
        elif k < 0.55:
            parts.append(rng.choice(WHITESPACE))
        elif k < 0.65:
            parts.append(rng.choice(LOOKALIKES))
        elif k < 0.72:
            parts.append(rng.choice(DECOMPOSED))
        elif k < 0.77:
            parts.append(rng.choice(ODD))
        elif k < 0.87:
            parts.append(rng.choice(SENTENCES))
        else:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 15))))
    return "".join(parts)


def random_bytes(rng):
    """Byte strings, most of them not valid UTF-8 (volt replaces invalid
    sequences by U+FFFD as Python's 'replace' error handler does)."""
    pieces = [b"\xff", b"\xc3", b"\xe4\xb8", b"\xf0\x9f\x98", b"\x80", b"\xed\xa0\x80", b"\xc0\xaf",
              b"\xf4\x90\x80\x80", b"\xe0\x80\xaf", "中文".encode(), b"abc", b" ", "😀".encode(),
              b"\xf8\x88\x80\x80\x80", b"\xfe\xfe"]
    return b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))


def source_snippets(rng, count):
    """Lines and blocks of Python's own standard library source."""
    libdir = sysconfig.get_paths()["stdlib"]
    files = sorted(f for f in os.listdir(libdir) if f.endswith(".py"))
    texts = []
    for f in files[:400]:
        with open(os.path.join(libdir, f), encoding="utf-8", errors="replace") as fh:
            texts.append(fh.read())
    out = []
    for _ in range(count):
        t = rng.choice(texts)
        if not t:
            continue
        start = rng.randrange(len(t))
        out.append(t[start:start + rng.choice([20, 80, 300, 1200])])
    return out, texts


def corpus():
    rng = random.Random(20240607)
    items = [s.encode() for s in SENTENCES]
    items += [b"", b" ", b"  ", b"\n", b"\t\t", b" \n \n ", b"a", b"'s", b"'S", b"'ll've", b"\xe2\x96\x81",
              b"  leading", b"trailing  ", b" \xe2\x96\x81 x"]
    items += [t.encode() for t in LOOKALIKES] + [(" " + t + " ").encode() for t in LOOKALIKES]
    items += [t.encode() for t in DECOMPOSED + ODD + WHITESPACE]
    snippets, texts = source_snippets(rng, 3000)
    items += [s.encode() for s in snippets]
    while len(items) < 9500:
        items.append(random_mix(rng).encode())
    items += [random_bytes(rng) for _ in range(500)]
    # Long inputs: up to ~100 KB each.
    items.append("".join(texts[:5]).encode()[:100_000])
    items.append(b"a" * 50_000)
    items.append(b" " * 20_000 + b"x")
    items.append(("中文字符" * 5000).encode())
    items.append(("😀" * 5000).encode())
    items.append(bytes(range(1, 128)) * 100)
    items.append("".join(random_mix(rng) for _ in range(300)).encode())
    return items


# ----------------------------------------------------------- expectations ---

def varint(n, out):
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def put_ids(ids, out):
    varint(len(ids), out)
    for i in ids:
        varint(i, out)


def put_text(text, expected, out):
    """A decode: flag 0 when equal to `expected`, else 1 + the bytes."""
    if text == expected:
        out.append(0)
    else:
        b = text.encode()
        out.append(1)
        varint(len(b), out)
        out += b


def expectations(tok, items):
    out = bytearray()
    for raw in items:
        text = raw.decode("utf-8", "replace")
        plain = tok.encode(text, add_special_tokens=False).ids
        special = tok.encode(text, add_special_tokens=True).ids
        put_ids(plain, out)
        # ids with special tokens: usually the plain ids with some before and
        # after; stored as (before, after) when so, else in full.
        k = next((k for k in range(len(special) - len(plain) + 1)
                  if special[k:k + len(plain)] == plain), None)
        if k is not None:
            out.append(0)
            put_ids(special[:k], out)
            put_ids(special[k + len(plain):], out)
        else:
            out.append(1)
            put_ids(special, out)
        d_plain = tok.decode(plain, skip_special_tokens=False)
        put_text(d_plain, text, out)
        put_text(tok.decode(special, skip_special_tokens=False), d_plain, out)
        put_text(tok.decode(special, skip_special_tokens=True), d_plain, out)
    return bytes(out)


def write_xz(path, data):
    with open(path, "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf-dir", required=True)
    ap.add_argument("--mistral-dir", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    built = {
        "qwen3": build_qwen3(args.gguf_dir),
        "llama3": build_llama3(args.gguf_dir),
        "mistral-v1": build_mistral_v1(os.path.join(args.mistral_dir, "tokenizer.model.v1")),
        "mistral-v3": build_mistral_v3(os.path.join(args.mistral_dir, "mistral_instruct_tokenizer_240323.model.v3")),
    }
    items = corpus()
    blob = bytearray()
    for raw in items:
        blob += struct.pack("<I", len(raw)) + raw
    write_xz(os.path.join(args.out, "corpus.bin.xz"), bytes(blob))
    for name, j in built.items():
        text = json.dumps(j, ensure_ascii=False, indent=None, separators=(",", ":"))
        tok = Tokenizer.from_str(text)  # what the committed file says, as HF reads it
        write_xz(os.path.join(args.out, f"{name}.tokenizer.json.xz"), text.encode())
        write_xz(os.path.join(args.out, f"{name}.expect.bin.xz"), expectations(tok, items))
        print(f"{name}: vocab {tok.get_vocab_size()}, {len(items)} strings", file=sys.stderr)
    print(f"tokenizers {tokenizers.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
