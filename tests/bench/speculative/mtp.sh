#!/usr/bin/env bash
# Speculative decoding with the checkpoint's MTP head against plain
# decoding, in one run: makes a small Qwen3.5-MoE checkpoint whose MTP head
# agrees with the target most of the time without training
# (agreeing_mtp.py: every layer but the last adds nothing, the last is a
# copy of the MTP layer), compiles it with and without `speculative:
# {method: mtp}`, runs volt-run on both (best of 3), checks the token ids
# agree, and prints decode tokens/s, the acceptance and the ratio.
# Recorded in docs/perf/speculative.md.
#   tests/bench/speculative/mtp.sh [BUILD_DIR] [K] [LAYERS] [HIDDEN]
set -euo pipefail
build=${1:-build}
k=${2:-3}
layers=${3:-16}
hidden=${4:-256}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin/volt-mkmodel" --family qwen3.5-moe --format bf16 --layers "$layers" --hidden "$hidden" \
  -o "$work/model" > /dev/null
python3 "$here/agreeing_mtp.py" "$work/model"
mkdir -p "$work/off" "$work/on"
printf 'model: ../model\ntarget: cpu\nmax_num_seqs: 4\nmax_num_batched_tokens: 64\n' > "$work/off/spec.yaml"
cp "$work/off/spec.yaml" "$work/on/spec.yaml"
printf 'speculative: {method: mtp, num_speculative_tokens: %s}\n' "$k" >> "$work/on/spec.yaml"

# shellcheck source=tests/bench/speculative/compare.sh
. "$here/compare.sh"
compare_plans mtp.sh 5,6,7,8,9,10,11,12,13,14,15
