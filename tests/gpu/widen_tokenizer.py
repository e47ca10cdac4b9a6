#!/usr/bin/env python3
"""Widens a small model's tokenizer.json to VOCAB_SIZE ids with filler
tokens, so that a full-size preset (which has no tokenizer) decodes every
id it can produce; the small model's own tokens keep their ids.

    widen_tokenizer.py SOURCE TARGET VOCAB_SIZE
"""
import json
import sys

source, target, vocab_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
tokenizer = json.load(open(source, encoding="utf-8"))
vocab = tokenizer["model"]["vocab"]
taken = set(vocab.values()) | {t["id"] for t in tokenizer["added_tokens"]}
filler = 0
for token_id in range(vocab_size):
    if token_id in taken:
        continue
    while "\u0120w%d" % filler in vocab:
        filler += 1
    vocab["\u0120w%d" % filler] = token_id
json.dump(tokenizer, open(target, "w", encoding="utf-8"), ensure_ascii=False)
