"""Converts a checkpoint written by volt-mkmodel to GGUF with llama.cpp's own
converter (convert_hf_to_gguf.py from a llama.cpp source tree), for
tests/bench/cpu/compare.sh. The converter recognises a tokenizer by hashing
its pre-tokenizer's output; volt-mkmodel's synthetic tokenizer is unknown to
it, so the pre-tokenizer is named here (Qwen2's, which the synthetic one
follows) instead of detected.

    /tmp/golden-venv/bin/python tests/bench/cpu/to_gguf.py LLAMA_CPP_DIR \
        MODEL_DIR OUT.gguf [--outtype bf16]
"""
import argparse
import sys
from pathlib import Path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("llama_cpp")
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--outtype", default="bf16")
    parser.add_argument("--pre", default="qwen2", help="the pre-tokenizer to name")
    args = parser.parse_args()
    root = Path(args.llama_cpp)
    sys.path.insert(0, str(root / "gguf-py"))
    sys.path.insert(0, str(root))
    import convert_hf_to_gguf as convert
    from conversion.base import TextModel

    TextModel.get_vocab_base_pre = lambda self, tokenizer: args.pre
    sys.argv = ["convert_hf_to_gguf.py", args.model, "--outfile", args.out, "--outtype",
                args.outtype]
    convert.main()


if __name__ == "__main__":
    main()
