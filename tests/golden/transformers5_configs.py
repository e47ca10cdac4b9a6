#!/usr/bin/env python3
"""Writes tests/golden/configs/<family>.json: config.json files as
transformers 5 itself writes them (save_pretrained of a config object), one
per family volt reads (with `architectures` as a model's save_pretrained
sets it), with small shapes and non-default values where a
misread field would go unnoticed (rope_theta, the expert count).
tests/unit/model/ModelConfigTest.cpp (TransformersFiveConfigs) parses each
and checks the values below.

transformers 5 renamed fields: Qwen3-MoE and Mixtral write
num_local_experts (not num_experts), every family writes
rope_parameters {rope_theta, rope_type, ...} instead of rope_theta, and
dtype instead of torch_dtype.

    pip install transformers==5.24.0 torch==2.15.0
    python3 tests/golden/transformers5_configs.py
"""

import json
import sys
import tempfile
from pathlib import Path

import transformers
from transformers import (LlamaConfig, MixtralConfig, Qwen2MoeConfig, Qwen3_5Config,
                          Qwen3_5MoeConfig, Qwen3Config, Qwen3MoeConfig, Qwen3NextConfig)

PINNED = "5.24.0"
OUT = Path(__file__).resolve().parent / "configs"

COMMON = dict(vocab_size=512, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=4096, dtype="bfloat16")
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)

FAMILIES = {
    "qwen3-moe": (Qwen3MoeConfig, dict(head_dim=16, num_experts=12, norm_topk_prob=True,
                                       rope_parameters={"rope_type": "default",
                                                        "rope_theta": 1000000.0}, **MOE)),
    "qwen2-moe": (Qwen2MoeConfig, dict(num_experts=12, shared_expert_intermediate_size=48,
                                       rope_parameters={"rope_type": "default",
                                                        "rope_theta": 1000000.0}, **MOE)),
    "mixtral": (MixtralConfig, dict(num_local_experts=12, num_experts_per_tok=2,
                                    intermediate_size=32,
                                    rope_parameters={"rope_type": "default",
                                                     "rope_theta": 1000000.0})),
    "qwen3": (Qwen3Config, dict(head_dim=16, intermediate_size=128,
                                rope_parameters={"rope_type": "default",
                                                 "rope_theta": 1000000.0})),
    "llama": (LlamaConfig, dict(intermediate_size=128,
                                rope_parameters={"rope_type": "default",
                                                 "rope_theta": 500000.0})),
    "qwen3-next": (Qwen3NextConfig, dict(head_dim=16, num_experts=12,
                                         shared_expert_intermediate_size=32,
                                         linear_num_key_heads=2, linear_num_value_heads=4,
                                         linear_key_head_dim=16, linear_value_head_dim=8,
                                         rope_parameters={"rope_type": "default",
                                                          "rope_theta": 1000000.0,
                                                          "partial_rotary_factor": 0.5},
                                         **MOE)),
}

# Multimodal checkpoints: the language model's config nested under
# text_config (volt runs it), a vision tower's beside it.
LINEAR = dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
              linear_value_head_dim=8)
ROPE_35 = {"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.5,
           "mrope_section": [2, 1, 1], "mrope_interleaved": True}
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64)
MULTIMODAL = {
    "qwen3.5-moe": (Qwen3_5MoeConfig, "Qwen3_5MoeForConditionalGeneration",
                    dict(head_dim=16, num_experts=12, shared_expert_intermediate_size=32,
                         rope_parameters=ROPE_35, **LINEAR, **MOE)),
    "qwen3.5": (Qwen3_5Config, "Qwen3_5ForConditionalGeneration",
                dict(head_dim=16, intermediate_size=128, rope_parameters=ROPE_35, **LINEAR)),
}


def main():
    if transformers.__version__ != PINNED and "--allow-other-versions" not in sys.argv:
        sys.exit(f"transformers {transformers.__version__} found, {PINNED} pinned")
    OUT.mkdir(exist_ok=True)
    for name, (cls, fields) in FAMILIES.items():
        # A model's save_pretrained records its class here; a bare config's
        # leaves it out.
        architecture = cls.__name__.replace("Config", "ForCausalLM")
        config = cls(**COMMON, architectures=[architecture], **fields)
        with tempfile.TemporaryDirectory() as d:
            config.save_pretrained(d)
            text = json.loads((Path(d) / "config.json").read_text())
        (OUT / f"{name}.json").write_text(json.dumps(text, indent=2, sort_keys=True) + "\n")
        print(f"wrote {OUT / (name + '.json')}")
    for name, (cls, architecture, fields) in MULTIMODAL.items():
        config = cls(text_config=dict(COMMON, **fields), vision_config=VISION,
                     architectures=[architecture])
        with tempfile.TemporaryDirectory() as d:
            config.save_pretrained(d)
            text = json.loads((Path(d) / "config.json").read_text())
        (OUT / f"{name}.json").write_text(json.dumps(text, indent=2, sort_keys=True) + "\n")
        print(f"wrote {OUT / (name + '.json')}")


if __name__ == "__main__":
    main()
