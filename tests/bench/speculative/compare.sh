# Sourced by the speculative benchmarks (ngram.sh, mtp.sh): compiles
# $work/off/spec.yaml and $work/on/spec.yaml, runs volt-run on both plans
# (best of 3, one thread) greedy and sampled, checks that the token ids
# agree, and prints decode tokens/s, the ratio and the acceptance.
#   compare_plans NAME PROMPT_IDS   (needs $bin and $work)
compare_plans() {
  local name=$1 prompt=$2 d sampling off on offIds onIds
  for d in off on; do
    "$bin/voltc" compile "$work/$d/spec.yaml" -o "$work/$d/plan.vplan" > /dev/null 2> "$work/compile.err" ||
      { cat "$work/compile.err" >&2; exit 1; }
  done
  printf '%-34s %10s %10s %7s  %s\n' sampling "off tok/s" "on tok/s" ratio acceptance
  for sampling in "--temperature 0" "--temperature 0.8 --top-k 20 --seed 3"; do
    # shellcheck disable=SC2086
    read -r off offIds < <(best_of_3 "$work/off/plan.vplan" "$prompt" $sampling)
    # shellcheck disable=SC2086
    read -r on onIds < <(best_of_3 "$work/on/plan.vplan" "$prompt" $sampling)
    if [[ "$offIds" != "$onIds" ]]; then
      echo "$name: the speculative plan's tokens differ ($sampling)" >&2
      exit 1
    fi
    printf '%-34s %10s %10s %6.2fx  %s\n' "$sampling" "$off" "$on" \
      "$(awk -v a="$off" -v b="$on" 'BEGIN { print b / a }')" \
      "$(sed 's/^volt-run: speculative: //' "$work/summary")"
  done
}

# best_of_3 PLAN PROMPT_IDS ARGS...: prints "<tokens/s> <ids line>" of the
# fastest of 3 runs, and leaves the last run's speculative summary in
# $work/summary.
best_of_3() {
  local plan=$1 prompt=$2 best=0 ids="" out rate
  shift 2
  for _ in 1 2 3; do
    out=$("$bin/volt-run" --threads 1 --prompt-ids "$prompt" --max-tokens 200 --ignore-eos \
            --print-ids "$@" "$plan" 2> "$work/err" | tr -d '\000')
    rate=$(sed -n 's/.* \([0-9.]*\) tokens\/s after it.*/\1/p' "$work/err")
    ids=$(grep '^ids:' <<< "$out")
    best=$(awk -v a="$best" -v b="$rate" 'BEGIN { print (b > a) ? b : a }')
  done
  grep 'speculative:' "$work/err" > "$work/summary" || : > "$work/summary"
  echo "$best $ids"
}
