#!/usr/bin/env bash
# The quickstart's main job on the cpu backend: write a tiny NVFP4 MoE model,
# check its deployment spec, compile it into a plan and generate text with
# it. Called by `make demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
demo=$build/demo
mkdir -p "$demo"
"$build/bin/volt-mkmodel" --family qwen3-moe --format modelopt --seed 1 \
  -o "$demo/tiny-qwen3-moe-nvfp4"
cp examples/tiny-qwen3-moe.yaml "$demo/tiny-qwen3-moe.yaml"
echo
"$build/bin/voltc" check "$demo/tiny-qwen3-moe.yaml"
echo
"$build/bin/voltc" compile "$demo/tiny-qwen3-moe.yaml" -o "$demo/tiny-qwen3-moe.vplan"
echo
"$build/bin/volt-run" "$demo/tiny-qwen3-moe.vplan" --chat "What is the capital of France?" \
  --max-tokens 24
