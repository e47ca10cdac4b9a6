#!/usr/bin/env bash
# The quickstart's main job on the cpu backend: write a tiny NVFP4 MoE model
# and check its deployment spec with voltc. Called by `make demo`.
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
