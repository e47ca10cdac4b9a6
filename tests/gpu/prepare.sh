#!/usr/bin/env bash
# Builds everything the GPU machine runs into one folder (well under 64 MiB):
# the GPU test and benchmark programs, the shared libraries they need that a
# GPU machine may lack, every kernel they launch (compiled here by NVRTC
# 11.8 for sm_70: cubin and PTX), and pairs of plans (cpu / GPU) of small
# synthetic models for the end-to-end test, and volt-serve, volt-bench and
# the plan of a full-size Qwen3-30B-A3B without its weights (served there
# with --synthetic-weights). See README.md.
#
#   tests/gpu/prepare.sh [build dir] [bundle dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=${2:-$build/gpu-bundle}
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/lib-fallback" "$out/kernels" "$out/plans"

cmake --build "$build" --target gpu_kernels_test gpu_e2e_test gpu_bench volt-serve volt-bench \
  volt-run voltc volt-mkmodel -j2
cp "$build/bin/gpu_kernels_test" "$build/bin/gpu_e2e_test" "$build/bin/gpu_bench" \
  "$build/bin/volt-serve" "$build/bin/volt-bench" "$build/bin/volt-run" "$out/bin/"
# Libraries the GPU machine may lack, except the C library itself, in lib/.
# The C++ runtime goes to lib-fallback/ instead, which run.sh uses only when
# the programs do not start with the machine's own: this machine's
# libstdc++ needs glibc 2.36, newer than some GPU machines have, and the
# programs themselves need only glibc 2.34 and GLIBCXX_3.4.30.
for lib in $(ldd "$out"/bin/* | awk '/=> \// {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) ;;
    libstdc++*|libgcc_s*) cp -L "$lib" "$out/lib-fallback/" ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done

"$out/bin/gpu_kernels_test" --prepare "$out/kernels"

# Each family compiled for the cpu backend and for a V100 (whose sm_70 PTX
# the driver of a newer GPU compiles), one GPU.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# qwen3.5-moe: the Gated DeltaNet hybrid, its linear-attention heads 32 x 16
# so that the prefill step runs the chunked kernel.
for family in qwen3-moe qwen2-moe qwen3 qwen3.5-moe; do
  shape=()
  [ "$family" = qwen3.5-moe ] && shape=(--linear-key-head-dim 32 --linear-value-head-dim 16)
  "$build/bin/volt-mkmodel" --family "$family" "${shape[@]}" -o "$work/$family/model" > /dev/null
  for target in cpu gpu; do
    sku=$([ "$target" = cpu ] && echo cpu || echo v100-sxm2-32gb)
    dir="$out/plans/$family/$target"
    mkdir -p "$dir"
    printf 'model: %s\ntarget: %s\ntensor_parallel_size: 1\nmax_num_seqs: 4\nmax_num_batched_tokens: 64\nmax_model_len: 512\n' \
      "$work/$family/model" "$sku" > "$work/$family/$target.yaml"
    VOLT_KERNEL_CACHE="$out/kernels" "$build/bin/voltc" compile "$work/$family/$target.yaml" \
      -o "$dir/plan.vplan" > /dev/null
  done
done

# MTP drafts (tests/bench/speculative/mtp.sh's model): a Qwen3.5-MoE whose
# MTP head agrees with the target without training (agreeing_mtp.py),
# compiled for a V100 without speculative decoding and with method mtp at
# k = 3, for volt-run.
mtp="$work/mtp"
"$build/bin/volt-mkmodel" --family qwen3.5-moe --format bf16 --layers 16 --hidden 128 \
  -o "$mtp/model" > /dev/null
python3 "$root/tests/bench/speculative/agreeing_mtp.py" "$mtp/model"
for k in 0 3; do
  mkdir -p "$out/mtp/k$k"
  printf 'model: %s\ntarget: v100-sxm2-32gb\nmax_num_seqs: 4\nmax_num_batched_tokens: 64\nmax_model_len: 512\n' \
    "$mtp/model" > "$mtp/k$k.yaml"
  [ "$k" = 0 ] || printf 'speculative: {method: mtp, num_speculative_tokens: %s}\n' "$k" >> "$mtp/k$k.yaml"
  VOLT_KERNEL_CACHE="$out/kernels" "$build/bin/voltc" compile "$mtp/k$k.yaml" \
    -o "$out/mtp/k$k/plan.vplan" > /dev/null
done

# End-to-end serving: Qwen3-30B-A3B (volt-mkmodel's preset, its 16.85 GiB of
# weights written as file holes) compiled for a V100, one GPU. Only the
# plan travels; volt-serve --synthetic-weights fills the weights there. The
# preset has no tokenizer: the small model's, its vocabulary widened with
# filler tokens to the model's 151,936 ids, so that every id the model can
# produce decodes (the prompts volt-bench sends tokenize as before).
serve="$work/qwen3-30b-a3b"
"$build/bin/volt-mkmodel" --preset qwen3-30b-a3b --zeros -o "$serve/model" > /dev/null
"$build/bin/volt-mkmodel" --family qwen3-moe -o "$serve/small" > /dev/null
cp "$serve/small/tokenizer_config.json" "$serve/model/"
python3 "$root/tests/gpu/widen_tokenizer.py" "$serve/small/tokenizer.json" \
  "$serve/model/tokenizer.json" 151936
printf 'model: %s\ntarget: v100-sxm2-32gb\ntensor_parallel_size: 1\nmax_model_len: 4096\nmax_num_seqs: 32\nmax_num_batched_tokens: 2048\n' \
  "$serve/model" > "$serve/spec.yaml"
mkdir -p "$serve/plan"
VOLT_KERNEL_CACHE="$serve/kernels" "$build/bin/voltc" compile "$serve/spec.yaml" \
  -o "$serve/plan/plan.vplan" > /dev/null
mkdir -p "$out/serve"
cp "$serve/plan/plan.vplan" "$out/serve/qwen3-30b-a3b.vplan"
# The checkpoint and the pack are mostly holes, but 17 GiB each in size.
rm -rf "$serve"

# The hybrid users run: Qwen3.6-35B-A3B in NVIDIA's NVFP4 + FP8 layout
# (volt-mkmodel's preset, its weights as file holes), compiled for one
# V100-SXM2-32GB with room for a 4,096-token prompt; only the plan travels
# (volt-run --synthetic-weights there). The tokenizer is the small
# model's, widened to the preset's 248,320 ids.
hybrid="$work/qwen3.6-35b-a3b"
"$build/bin/volt-mkmodel" --family qwen3.5-moe --preset qwen3.6-35b-a3b --format modelopt-mixed \
  --zeros -o "$hybrid/model" > /dev/null
"$build/bin/volt-mkmodel" --family qwen3-moe -o "$hybrid/small" > /dev/null
cp "$hybrid/small/tokenizer_config.json" "$hybrid/model/"
python3 "$root/tests/gpu/widen_tokenizer.py" "$hybrid/small/tokenizer.json" \
  "$hybrid/model/tokenizer.json" 248320
printf 'model: %s\ntarget: v100-sxm2-32gb\ntensor_parallel_size: 1\nmax_model_len: 8192\nmax_num_seqs: 8\nmax_num_batched_tokens: 2048\n' \
  "$hybrid/model" > "$hybrid/spec.yaml"
mkdir -p "$hybrid/plan" "$out/hybrid"
VOLT_KERNEL_CACHE="$hybrid/kernels" "$build/bin/voltc" compile "$hybrid/spec.yaml" \
  -o "$hybrid/plan/plan.vplan" > /dev/null
cp "$hybrid/plan/plan.vplan" "$out/hybrid/qwen3.6-35b-a3b.vplan"
rm -rf "$hybrid"

# The libraries travel compressed (ICU's data alone is 31 MB; run.sh
# unpacks them), so that the bundle stays within the 64 MiB a GPU call
# carries; the programs, kernels and plans in one xz archive (44 MB of
# them compress to a few: the plans repeat their kernels).
tar -czf "$out/lib.tar.gz" -C "$out" lib lib-fallback
rm -rf "$out/lib" "$out/lib-fallback"
# The MTP plans too: the agreeing model's zeroed projections compress.
tar -czf "$out/mtp.tar.gz" -C "$out" mtp
rm -rf "$out/mtp"
tar -cJf "$out/payload.tar.xz" -C "$out" bin kernels plans serve hybrid
rm -rf "$out/bin" "$out/kernels" "$out/plans" "$out/serve" "$out/hybrid"
cp "$root/tests/gpu/run.sh" "$out/"
size=$(du -sm "$out" | cut -f1)
echo "bundle: $out, ${size} MiB"
if [ "$size" -gt 60 ]; then
  echo "prepare.sh: the bundle is ${size} MiB; a GPU call carries at most 64 MiB" >&2
  exit 1
fi
