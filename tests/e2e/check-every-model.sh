#!/usr/bin/env bash
# voltc check succeeds on every family x format volt-mkmodel writes, single
# file and sharded, on a V100 SKU and the cpu backend at tensor_parallel_size
# 1, 2 and 4, and on config-only directories (planning before the download).
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count=0
for family in qwen3-moe qwen2-moe mixtral qwen3 llama; do
  for format in modelopt compressed-tensors bf16; do
    for shards in 1 2; do
      dir=$work/$family-$format-$shards
      "$bin/volt-mkmodel" --family "$family" --format "$format" --shards "$shards" \
        --seed "$shards" -o "$dir/model" >/dev/null
      for target in v100-pcie-16gb cpu; do
        for tp in 1 2 4; do
          printf 'model: model\ntarget: %s\ntensor_parallel_size: %s\n' "$target" "$tp" \
            > "$dir/deploy.yaml"
          if ! out=$("$bin/voltc" check --verify-data "$dir/deploy.yaml" 2>&1); then
            echo "FAIL: $family $format shards=$shards $target tp=$tp"; echo "$out"; exit 1
          fi
          grep -q ': valid$' <<<"$out"
          count=$((count + 1))
        done
      done
    done
    # The same model from its config files alone.
    dir=$work/$family-$format-config
    "$bin/volt-mkmodel" --family "$family" --format "$format" --config-only -o "$dir/model" >/dev/null
    printf 'model: model\ntarget: v100-sxm2-32gb\ntensor_parallel_size: 2\n' > "$dir/deploy.yaml"
    "$bin/voltc" check "$dir/deploy.yaml" | grep -q 'no weight files (config only)'
    count=$((count + 1))
  done
done
echo "voltc check passed $count checks"
