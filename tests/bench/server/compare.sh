#!/usr/bin/env bash
# volt-serve against another build's volt-serve, on the same tiny plan, in
# one run (recorded in docs/perf/server.md):
#
#   tests/bench/server/compare.sh BUILD_DIR OLD_BIN_DIR [ROUNDS]
#
# OLD_BIN_DIR is an earlier commit's bin folder (its volt-serve; the plan,
# volt-bench and the new volt-serve come from BUILD_DIR). Each round starts
# each server in turn (the old one first in odd rounds, the new one first in
# even ones) on a qwen3-moe `tiny` plan (cpu backend, max_num_seqs 32) and
# runs volt-bench at concurrency 1, 8 and 32: prompts of PROMPT tokens
# (default 8), outputs of OUTPUT tokens (default 128), max(4 C, 16) streams
# per level. The medians of output tokens/s over the rounds and their ratio
# new / old are printed at the end. WORK keeps the plan between runs.
set -euo pipefail
build=${1:?usage: compare.sh BUILD_DIR OLD_BIN_DIR [ROUNDS]}
old=${2:?usage: compare.sh BUILD_DIR OLD_BIN_DIR [ROUNDS]}
rounds=${3:-3}
prompt=${PROMPT:-8}
output=${OUTPUT:-128}
work=${WORK:-$(mktemp -d)}
bin=$build/bin
for f in "$bin/volt-serve" "$bin/volt-bench" "$bin/voltc" "$bin/volt-mkmodel" "$old/volt-serve"; do
  [ -x "$f" ] || { echo "compare.sh: $f is missing" >&2; exit 1; }
done
mkdir -p "$work"
if [ ! -f "$work/tiny.vplan" ]; then
  "$bin/volt-mkmodel" --family qwen3-moe -o "$work/model" > /dev/null
  printf 'model: model\ntarget: cpu\nmax_num_seqs: 32\nmax_num_batched_tokens: 256\n' \
    > "$work/spec.yaml"
  "$bin/voltc" compile "$work/spec.yaml" -o "$work/tiny.vplan" > /dev/null
fi

results=$work/results.jsonl
: > "$results"
serve() { # side, volt-serve binary
  local side=$1 serve_bin=$2 port pid
  "$serve_bin" "$work/tiny.vplan" --host 127.0.0.1 --port 0 --no-access-log \
    > "$work/$side.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 100); do
    port=$(sed -n 's|^volt-serve: listening on http://[^:]*:\([0-9]*\).*|\1|p' "$work/$side.log")
    if [ -n "$port" ] && "$bin/volt-bench" --url "http://127.0.0.1:$port" --concurrency 1 \
      --prompt-tokens 4 --output-tokens 2 --num-requests 1 > /dev/null 2>&1; then
      break
    fi
    sleep 0.2
  done
  "$bin/volt-bench" --url "http://127.0.0.1:$port" --concurrency 1 8 32 \
    --prompt-tokens "$prompt" --output-tokens "$output" --json |
    sed "s/^{/{\"side\":\"$side\",/" >> "$results"
  kill -TERM "$pid"
  wait "$pid" || { echo "compare.sh: $side volt-serve did not exit cleanly" >&2; exit 1; }
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    serve old "$old/volt-serve"
    serve new "$bin/volt-serve"
  else
    serve new "$bin/volt-serve"
    serve old "$old/volt-serve"
  fi
  echo "round $r done" >&2
done

python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
def median(side, c, key):
    return statistics.median(r[key] for r in rows if r["side"] == side and r["concurrency"] == c)
print("| concurrency | old tok/s | new tok/s | new / old | old TTFT p50 (ms) | new TTFT p50 (ms) |")
print("|---|---|---|---|---|---|")
for c in sorted({r["concurrency"] for r in rows}):
    o, n = median("old", c, "output_tokens_per_second"), median("new", c, "output_tokens_per_second")
    print("| %d | %.0f | %.0f | %.2f | %.2f | %.2f |" % (
        c, o, n, n / o, median("old", c, "ttft_p50_ms"), median("new", c, "ttft_p50_ms")))
failed = sum(r["failed"] for r in rows)
if failed:
    print("failed requests: %d" % failed)
    sys.exit(1)
PY
