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
for d in off on; do
  "$bin/voltc" compile "$work/$d/spec.yaml" -o "$work/$d/plan.vplan" > /dev/null 2> "$work/compile.err" ||
    { cat "$work/compile.err" >&2; exit 1; }
done

prompt=5,6,7,8,5,6,7,8,5,6,7
# run PLAN ARGS...: prints "<tokens/s> <ids line>" of the fastest of 3 runs,
# and leaves the last run's speculative summary in $work/summary.
run() {
  local plan=$1 best=0 ids="" out err rate
  shift
  for _ in 1 2 3; do
    out=$("$bin/volt-run" --threads 1 --prompt-ids "$prompt" --max-tokens 200 --ignore-eos \
            --print-ids "$@" "$plan" 2> "$work/err")
    rate=$(sed -n 's/.* \([0-9.]*\) tokens\/s after it.*/\1/p' "$work/err")
    ids=$(grep '^ids:' <<< "$out")
    best=$(awk -v a="$best" -v b="$rate" 'BEGIN { print (b > a) ? b : a }')
  done
  grep 'speculative:' "$work/err" > "$work/summary" || : > "$work/summary"
  echo "$best $ids"
}

printf '%-34s %10s %10s %7s  %s\n' sampling "off tok/s" "on tok/s" ratio acceptance
for sampling in "--temperature 0" "--temperature 0.8 --top-k 20 --seed 3"; do
  # shellcheck disable=SC2086
  read -r off offIds < <(run "$work/off/plan.vplan" $sampling)
  # shellcheck disable=SC2086
  read -r on onIds < <(run "$work/on/plan.vplan" $sampling)
  if [[ "$offIds" != "$onIds" ]]; then
    echo "ngram.sh: the speculative plan's tokens differ ($sampling)" >&2
    exit 1
  fi
  printf '%-34s %10s %10s %6.2fx  %s\n' "$sampling" "$off" "$on" \
    "$(awk -v a="$off" -v b="$on" 'BEGIN { print b / a }')" \
    "$(sed 's/^volt-run: speculative: //' "$work/summary")"
done
