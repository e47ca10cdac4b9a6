#!/usr/bin/env bash
# Runs every GPU check from a bundle made by prepare.sh, writing the logs
# and the benchmark table to RESULTS (default: ./results). Budget: under 8
# minutes on one GPU (240 + 120 + 90 s limits); each step has its own.
# A skipped test counts as a failure here: on the lent machine a skip means
# the GPU could not be used, which is what the run is for.
#
#   bash run.sh [RESULTS] [--peak-tflops N]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$PWD/results}
shift || true
mkdir -p "$results"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VOLT_GPU_KERNELS="$here/kernels" VOLT_GPU_PLANS="$here/plans"
# One JIT cache for the three programs: the driver compiles each kernel's
# sm_70 PTX for a newer GPU once.
export CUDA_CACHE_PATH="$results/.jit-cache" CUDA_CACHE_MAXSIZE=4294967296
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1 || echo "nvidia-smi not available"
  grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>/dev/null
  ldd --version 2>&1 | head -n 1
} > "$results/device.txt"

# The machine's own libstdc++ first; the bundled one only when the programs
# do not start without it.
if ! "$here/bin/gpu_kernels_test" --gtest_list_tests > /dev/null 2> "$results/start.log"; then
  export LD_LIBRARY_PATH="$here/lib-fallback:$LD_LIBRARY_PATH"
  echo "programs need the bundled libraries" >> "$results/device.txt"
fi
ldd "$here/bin/gpu_kernels_test" >> "$results/device.txt" 2>&1

status=0
step() { # limit, log name, program and arguments
  local limit=$1 name=$2
  shift 2
  timeout -k 10 "$limit" stdbuf -oL -eL "$@" > "$results/$name.log" 2>&1 || status=1
  if grep -q '^\[  SKIPPED \]' "$results/$name.log"; then
    echo "$name: tests were skipped (a GPU that cannot be used); see $name.log" >&2
    status=1
  fi
}
step 240 kernels "$here/bin/gpu_kernels_test" --gtest_output="xml:$results/kernels.xml"
step 120 e2e "$here/bin/gpu_e2e_test" --gtest_output="xml:$results/e2e.xml"
timeout -k 10 90 "$here/bin/gpu_bench" "$@" > "$results/bench.md" 2> "$results/bench.log" ||
  status=1
tail -n 3 "$results/kernels.log" "$results/e2e.log"
cat "$results/bench.md"
exit $status
