#!/usr/bin/env bash
# Builds everything the GPU machine runs into one folder (well under 64 MiB):
# the GPU test and benchmark programs, the shared libraries they need that a
# GPU machine may lack, every kernel they launch (compiled here by NVRTC
# 11.8 for sm_70: cubin and PTX), and pairs of plans (cpu / GPU) of small
# synthetic models for the end-to-end test. See README.md.
#
#   tests/gpu/prepare.sh [build dir] [bundle dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=${2:-$build/gpu-bundle}
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/lib-fallback" "$out/kernels" "$out/plans"

cmake --build "$build" --target gpu_kernels_test gpu_e2e_test gpu_bench voltc volt-mkmodel -j2
cp "$build/bin/gpu_kernels_test" "$build/bin/gpu_e2e_test" "$build/bin/gpu_bench" "$out/bin/"
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
for family in qwen3-moe qwen2-moe qwen3; do
  "$build/bin/volt-mkmodel" --family "$family" -o "$work/$family/model" > /dev/null
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
cp "$root/tests/gpu/run.sh" "$out/"
du -sh "$out"
