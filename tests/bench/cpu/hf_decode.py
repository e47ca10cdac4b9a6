"""HF transformers' eager decode of a checkpoint on the CPU, for
tests/bench/cpu/compare.sh: a prompt of the given token ids, then greedy
tokens one at a time through the KV cache, bf16, on `--threads` threads.
Prints one line: `hf prompt_ms=<prefill ms> decode_tps=<tokens/s> ids=<first
8 generated ids>`, the best of `--repeats` runs after a warm-up.

    /tmp/golden-venv/bin/python tests/bench/cpu/hf_decode.py MODEL_DIR \
        --prompt-ids 100,101,... --tokens 64 --threads 2
"""
import argparse
import time

import torch
from transformers import AutoModelForCausalLM


def run(model, prompt, tokens):
    with torch.inference_mode():
        start = time.perf_counter()
        out = model(input_ids=prompt, use_cache=True)
        first = time.perf_counter()
        past = out.past_key_values
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        ids = [int(token)]
        for _ in range(tokens - 1):
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            past = out.past_key_values
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            ids.append(int(token))
        end = time.perf_counter()
    return (first - start) * 1e3, (tokens - 1) / (end - first), ids


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--prompt-ids", required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16)
    model.eval()
    prompt = torch.tensor([[int(t) for t in args.prompt_ids.split(",")]])
    run(model, prompt, 4)  # warm-up
    best = None
    for _ in range(args.repeats):
        result = run(model, prompt, args.tokens)
        if best is None or result[1] > best[1]:
            best = result
    prompt_ms, tps, ids = best
    print("hf prompt_ms=%.1f decode_tps=%.2f ids=%s" % (prompt_ms, tps, ",".join(map(str, ids[:8]))))


if __name__ == "__main__":
    main()
