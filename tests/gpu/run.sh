#!/usr/bin/env bash
# Runs every GPU check from a bundle made by prepare.sh, writing the logs
# and the benchmark table to RESULTS (default: ./results). Budget: a few
# minutes on one GPU; each step has its own time limit.
#
#   bash run.sh [RESULTS] [--peak-tflops N]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$PWD/results}
shift || true
mkdir -p "$results"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VOLT_GPU_KERNELS="$here/kernels" VOLT_GPU_PLANS="$here/plans"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1 || echo "nvidia-smi not available"
} > "$results/device.txt"
status=0
timeout 300 "$here/bin/gpu_kernels_test" --gtest_output="xml:$results/kernels.xml" \
  > "$results/kernels.log" 2>&1 || status=1
timeout 90 "$here/bin/gpu_e2e_test" --gtest_output="xml:$results/e2e.xml" \
  > "$results/e2e.log" 2>&1 || status=1
timeout 90 "$here/bin/gpu_bench" "$@" > "$results/bench.md" 2> "$results/bench.log" || status=1
tail -n 3 "$results/kernels.log" "$results/e2e.log"
cat "$results/bench.md"
exit $status
