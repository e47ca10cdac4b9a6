#!/usr/bin/env bash
# Counts the sm_70 machine instructions (SASS) of one kernel instance: the
# static instruction budget that docs/perf/kernels.md quotes for the decode
# GEMV. Optional developer tool: nothing in the build or the tests needs it.
#
#   scripts/sass-counts.sh BUILD_DIR KERNEL NAME=VALUE... --threads N
#
# It needs ptxas and nvdisasm from CUDA 11.8 (the last release that targets
# sm_70). Debian's nvidia-cuda-toolkit package (non-free) has both; unpack
# it rather than install it (installing pulls in the NVIDIA driver's
# libcuda, which changes what the GPU tests find on a machine without one):
#
#   apt-get download nvidia-cuda-toolkit
#   dpkg -x nvidia-cuda-toolkit_*.deb /opt/cuda-11.8-tools
#   export VOLT_CUDA_TOOLS=/opt/cuda-11.8-tools/usr/bin
#
# Prints the total, the instructions before the first butterfly shuffle or
# divergent branch (for nvfp4_gemv and dense_gemv: the loads, decode and
# MMAs over K, before the reductions and the epilogue; the MoE forms stop
# earlier, in their expert search), and the most frequent opcodes of each.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
build=$1
shift
tools=${VOLT_CUDA_TOOLS:-}
ptxas=${tools:+$tools/}ptxas
nvdisasm=${tools:+$tools/}nvdisasm
for t in "$ptxas" "$nvdisasm"; do
  if ! command -v "$t" >/dev/null 2>&1; then
    echo "sass-counts: $t not found; set VOLT_CUDA_TOOLS (see the top of $0)" >&2
    exit 1
  fi
done
if ! "$ptxas" --version | grep -q "release 11\."; then
  echo "sass-counts: $ptxas is not CUDA 11.x, which sm_70 needs" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/volt-kernelc" "$@" --emit ptx > "$work/kernel.ptx"
"$ptxas" -arch=sm_70 "$work/kernel.ptx" -o "$work/kernel.cubin"
"$nvdisasm" -c "$work/kernel.cubin" | grep -E '^\s+/\*[0-9a-f]{4}\*/' > "$work/sass"
opcodes() {
  sed -E 's#^\s+/\*[0-9a-f]+\*/\s+##; s#^@!?U?P[0-9T] ##' | awk '{ split($1, op, "."); print op[1] }'
}
opcodes < "$work/sass" > "$work/opcodes"

histogram() {
  sort | uniq -c | sort -rn | head -12 | awk '{ printf "%s %s  ", $1, $2 } END { print "" }'
}
echo "total: $(wc -l < "$work/opcodes") instructions"
histogram < "$work/opcodes"
# The first SHFL of the prologue is a placeholder that never runs (@!PT);
# the reductions start at the first butterfly.
awk '/SHFL.BFLY|BRA.DIV/ { exit } { print }' "$work/sass" | opcodes > "$work/main"
echo "before the first butterfly: $(wc -l < "$work/main") instructions"
histogram < "$work/main"
