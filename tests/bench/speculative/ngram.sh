#!/usr/bin/env bash
# Speculative decoding (n-gram drafts) against plain decoding, in one run:
# compiles a tiny model with and without `speculative`, runs volt-run on
# both (best of 3), checks the token ids agree, and prints decode tokens/s,
# the acceptance and the ratio. Recorded in docs/perf/speculative.md.
#   tests/bench/speculative/ngram.sh [BUILD_DIR] [FAMILY] [K]
set -euo pipefail
build=${1:-build}
family=${2:-llama}
k=${3:-4}
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin/volt-mkmodel" --family "$family" -o "$work/model" > /dev/null
mkdir -p "$work/off" "$work/on"
printf 'model: ../model\ntarget: cpu\nmax_num_seqs: 4\nmax_num_batched_tokens: 64\n' > "$work/off/spec.yaml"
cp "$work/off/spec.yaml" "$work/on/spec.yaml"
printf 'speculative:\n  method: ngram\n  num_speculative_tokens: %s\n  prompt_lookup_min: 1\n  prompt_lookup_max: 3\n' "$k" >> "$work/on/spec.yaml"

# shellcheck source=tests/bench/speculative/compare.sh
. "$(dirname "$0")/compare.sh"
compare_plans ngram.sh 5,6,7,8,5,6,7,8,5,6,7
