#!/usr/bin/env bash
# voltc compiles the synthetic model of every family (in each checkpoint
# format) at tensor_parallel_size 1, 2 and 4 for v100-pcie-16gb,
# v100-sxm2-32gb and the cpu backend, through the memory plan; and
# compiling the same inputs twice gives byte-identical plan files and
# weight packs (a cpu plan of every family and format at
# tensor_parallel_size 2, and one GPU plan with its kernels).
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
    targets=cpu
    if [ "$family-$format" = qwen3-moe-modelopt ]; then
      targets="cpu v100-sxm2-32gb"
    fi
    for target in $targets; do
      for run in a b; do
        mkdir -p "$dir/$run-$target"
        if ! out=$("$bin/voltc" compile "$dir/$target-2.yaml" -o "$dir/$run-$target/plan.vplan" 2>&1); then
          echo "FAIL: $family $format $target plan ($run)"; echo "$out"; exit 1
        fi
      done
      for file in plan.vplan weights.rank0.bin weights.rank1.bin; do
        cmp "$dir/a-$target/$file" "$dir/b-$target/$file"
      done
    done
  done
done
echo "voltc compiled $count deployments; plans and packs are byte-identical across runs"
