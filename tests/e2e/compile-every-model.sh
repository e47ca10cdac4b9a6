#!/usr/bin/env bash
# voltc compiles the synthetic model of every family (in each checkpoint
# format) at tensor_parallel_size 1, 2 and 4 for v100-pcie-16gb,
# v100-sxm2-32gb and the cpu backend, through the memory plan; and
# compiling the same inputs twice gives byte-identical output.
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count=0
for family in qwen3-moe qwen2-moe mixtral qwen3 llama; do
  for format in modelopt compressed-tensors bf16; do
    dir=$work/$family-$format
    "$bin/volt-mkmodel" --family "$family" --format "$format" -o "$dir/model" >/dev/null
    for target in v100-pcie-16gb v100-sxm2-32gb cpu; do
      for tp in 1 2 4; do
        spec=$dir/$target-$tp.yaml
        printf 'model: model\ntarget: %s\ntensor_parallel_size: %s\nmax_num_seqs: 8\nmax_num_batched_tokens: 128\n' \
          "$target" "$tp" > "$spec"
        if ! out=$("$bin/voltc" compile "$spec" --emit=memory 2>&1); then
          echo "FAIL: $family $format $target tp=$tp"; echo "$out"; exit 1
        fi
        grep -q "KV cache" <<<"$out"
        count=$((count + 1))
      done
    done
    # Determinism: the same inputs give the same bytes.
    "$bin/voltc" compile "$dir/v100-sxm2-32gb-2.yaml" --emit=vexec > "$dir/a.mlir"
    "$bin/voltc" compile "$dir/v100-sxm2-32gb-2.yaml" --emit=vexec > "$dir/b.mlir"
    cmp "$dir/a.mlir" "$dir/b.mlir"
  done
done
echo "voltc compiled $count deployments"
