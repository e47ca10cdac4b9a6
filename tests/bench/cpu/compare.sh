#!/usr/bin/env bash
# The cpu backend against llama.cpp and HF transformers on the same
# checkpoint, in one run (recorded in docs/perf/cpu-backend.md):
#
#   tests/bench/cpu/compare.sh BUILD_DIR LLAMA_CPP_SRC [ROUNDS]
#
# The checkpoint is a Qwen3-MoE with random weights written by volt-mkmodel
# (hidden 1024, 8 layers, 16 heads / 4 KV heads of 64, 32 experts top-4 of
# 512, vocab 151,936: 735 M parameters, every layer MoE) in BF16, in ModelOpt
# NVFP4 (experts and attention in NVFP4, lm_head BF16) and in ModelOpt
# MIXED_PRECISION (NVFP4 experts and lm_head, FP8 attention), all from one
# seed. llama.cpp gets the BF16 weights converted by its own
# convert_hf_to_gguf.py (to_gguf.py names the pre-tokenizer) and quantized
# to Q4_0 by llama-quantize.
#
# LLAMA_CPP_SRC is a llama.cpp source tree, e.g. vendor/llama.cpp of the
# PyPI llama-cpp-python 0.3.36 source package:
#   pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36
# It is built here with CMake (-DGGML_NATIVE=ON) unless LLAMA_BUILD names a
# build folder that has llama-bench, llama-batched-bench, llama-quantize.
# PYTHON is a Python with torch, transformers, numpy and sentencepiece
# (default /tmp/golden-venv/bin/python, as tests/golden uses). THREADS
# (default 2) threads on every side; WORK keeps the models and plans
# between runs; OLD_BIN, another build's bin folder (an earlier commit's),
# adds its volt-run on the same plans, so a change is measured against the
# code before it in the same run.
#
# Each round runs, one after the other: volt-run on each plan (32-token
# prompt, 64 greedy tokens, after a warm-up generation: --warmup 1; BF16
# and mixed also with --cpu-numerics fast,
# recorded as "fast-..."), llama-bench on each GGUF (pp32, pp2000, tg64),
# HF eager bf16 (tests/bench/cpu/hf_decode.py), volt-run's first token of a
# 2000-token prompt (BF16 in both numerics, mixed in fast; the plans take
# it in chunks of 512), then eight concurrent sequences:
# volt-serve + volt-bench (8 requests of 32 + 64 tokens at concurrency 8;
# again with --cpu-numerics fast) and
# llama-batched-bench (-npp 32 -ntg 64 -npl 8). The medians over the rounds
# and the ratios are printed at the end.
set -euo pipefail
build=${1:?usage: compare.sh BUILD_DIR LLAMA_CPP_SRC [ROUNDS]}
llama_src=${2:?usage: compare.sh BUILD_DIR LLAMA_CPP_SRC [ROUNDS]}
rounds=${3:-3}
threads=${THREADS:-2}
python=${PYTHON:-/tmp/golden-venv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$build/bin" && pwd)
llama_src=$(cd "$llama_src" && pwd)
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
results="$work/results.txt"
: > "$results"

log() { echo "compare.sh: $*" >&2; }

# --- llama.cpp -------------------------------------------------------------
llama=${LLAMA_BUILD:-$work/llama-build}
if [[ ! -x "$llama/bin/llama-bench" ]]; then
  log "building llama.cpp in $llama (a few minutes)"
  cmake -S "$llama_src" -B "$llama" -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF > "$work/llama-cmake.log"
  cmake --build "$llama" -j "$(nproc)" --target llama-bench llama-batched-bench llama-quantize \
    > "$work/llama-build.log"
fi

# --- the checkpoint in each format, plans and GGUFs -------------------------
shape=(--family qwen3-moe --hidden 1024 --layers 8 --heads 16 --kv-heads 4 --head-dim 64
       --experts 32 --experts-per-token 4 --moe-intermediate 512 --vocab 151936
       --mlp-only-layers none --seed 17)
formats=(bf16 nvfp4 mixed)
declare -A mkformat=([bf16]=bf16 [nvfp4]=modelopt [mixed]=modelopt-mixed)
for f in "${formats[@]}"; do
  if [[ ! -f "$work/$f/config.json" ]]; then
    "$bin/volt-mkmodel" "${shape[@]}" --format "${mkformat[$f]}" -o "$work/$f" > /dev/null
  fi
  if [[ ! -f "$work/plan-$f/plan.vplan" ]]; then
    mkdir -p "$work/plan-$f"
    printf 'model: ../%s\ntarget: cpu\nmax_num_seqs: 8\nmax_num_batched_tokens: 512\nmax_model_len: 2048\n' \
      "$f" > "$work/plan-$f/spec.yaml"
    "$bin/voltc" compile "$work/plan-$f/spec.yaml" -o "$work/plan-$f/plan.vplan" > /dev/null
  fi
done
if [[ ! -f "$work/bf16.gguf" ]]; then
  "$python" "$here/to_gguf.py" "$llama_src" "$work/bf16" "$work/bf16.gguf" > "$work/gguf.log" 2>&1 ||
    { cat "$work/gguf.log" >&2; exit 1; }
fi
if [[ ! -f "$work/q4_0.gguf" ]]; then
  "$llama/bin/llama-quantize" "$work/bf16.gguf" "$work/q4_0.gguf" Q4_0 "$threads" \
    > "$work/quantize.log" 2>&1 || { cat "$work/quantize.log" >&2; exit 1; }
fi

prompt=$(seq -s, 1000 1031) # 32 token ids
long_prompt=$(seq -s, 1000 2999) # 2000 token ids
port=$((20000 + RANDOM % 20000))

# record NAME VALUE: one measurement of this round.
record() { echo "$1 $2" >> "$results"; }

# volt-run's timed prompt runs warm, after one throwaway generation, as
# llama-bench's (its warm-up run) and the HF script's do; an OLD_BIN from
# before --warmup runs cold.
warmup_flag() { # BIN_DIR
  if "$1/volt-run" --help 2>&1 | grep -q -- '--warmup'; then echo "--warmup 1"; fi
}

volt_single() { # FORMAT [BIN_DIR NAME [NUMERICS]]
  local err dir=${2:-$bin} name=${3:-volt} numerics=()
  [[ -n ${4:-} ]] && numerics=(--cpu-numerics "$4")
  err=$("$dir/volt-run" --threads "$threads" --prompt-ids "$prompt" --max-tokens 64 --ignore-eos \
          $(warmup_flag "$dir") \
          "${numerics[@]}" "$work/plan-$1/plan.vplan" 2>&1 > /dev/null | tail -1)
  record "$name-$1-decode" "$(sed -n 's/.* \([0-9.]*\) tokens\/s after it.*/\1/p' <<< "$err")"
  record "$name-$1-prompt-ms" "$(sed -n 's/.*time to first token \([0-9.]*\) ms.*/\1/p' <<< "$err")"
}

volt_long() { # FORMAT [NAME NUMERICS]: the first token of a 2000-token prompt
  local err name=${2:-volt} numerics=()
  [[ -n ${3:-} ]] && numerics=(--cpu-numerics "$3")
  err=$("$bin/volt-run" --threads "$threads" --prompt-ids "$long_prompt" --max-tokens 1 \
          $(warmup_flag "$bin") \
          --ignore-eos "${numerics[@]}" "$work/plan-$1/plan.vplan" 2>&1 > /dev/null | tail -1)
  record "$name-$1-prompt2000-ms" \
    "$(sed -n 's/.*time to first token \([0-9.]*\) ms.*/\1/p' <<< "$err")"
}

llama_single() { # NAME GGUF
  local json
  "$llama/bin/llama-bench" -m "$2" -p 32,2000 -n 64 -t "$threads" -r 1 -o json > "$work/out.txt" \
    2> /dev/null
  python3 - "$1" "$work/out.txt" >> "$results" <<'EOF'
import json, sys
name = sys.argv[1]
for test in json.load(open(sys.argv[2])):
    if test["n_prompt"] == 32:
        print("llama-%s-prompt-ms %.2f" % (name, 32e3 / test["avg_ts"]))
    elif test["n_prompt"] == 2000:
        print("llama-%s-prompt2000-ms %.2f" % (name, 2000e3 / test["avg_ts"]))
    elif test["n_gen"] == 64:
        print("llama-%s-decode %.2f" % (name, test["avg_ts"]))
EOF
}

hf_single() {
  local line
  line=$("$python" "$here/hf_decode.py" "$work/bf16" --prompt-ids "$prompt" --tokens 64 \
           --threads "$threads" 2> /dev/null)
  record hf-bf16-decode "$(sed -n 's/.*decode_tps=\([0-9.]*\).*/\1/p' <<< "$line")"
  record hf-bf16-prompt-ms "$(sed -n 's/.*prompt_ms=\([0-9.]*\).*/\1/p' <<< "$line")"
}

volt_batch() { # FORMAT [NAME NUMERICS]
  local pid name=${2:-volt} numerics=()
  [[ -n ${3:-} ]] && numerics=(--cpu-numerics "$3")
  "$bin/volt-serve" --host 127.0.0.1 --port "$port" --threads "$threads" "${numerics[@]}" \
    "$work/plan-$1/plan.vplan" > "$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    sleep 0.2
  done
  "$bin/volt-bench" --url "http://127.0.0.1:$port" --concurrency 8 --prompt-tokens 32 \
    --output-tokens 64 --num-requests 8 --json > "$work/out.txt"
  kill "$pid"
  # SIGTERM is a graceful stop: volt-serve exits 0.
  wait "$pid" || { log "volt-serve exited with $? (log: $work/serve.log)"; exit 1; }
  python3 - "$1" "$work/out.txt" "$name" >> "$results" <<'EOF'
import json, sys
row = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
# Decode rate of the batch (as llama-batched-bench's S_TG): 8 sequences,
# one token each per TPOT; and the whole run's output tokens per second.
print("%s-%s-batch8-decode %.2f" % (sys.argv[3], sys.argv[1], 8e3 / row["tpot_mean_ms"]))
print("%s-%s-batch8-overall %.2f" % (sys.argv[3], sys.argv[1], row["output_tokens_per_second"]))
EOF
}

llama_batch() { # NAME GGUF
  "$llama/bin/llama-batched-bench" -m "$2" -c 2048 -b 512 -ub 512 -npp 32 -ntg 64 -npl 8 \
    -t "$threads" > "$work/out.txt" 2> /dev/null
  python3 - "$1" "$work/out.txt" >> "$results" <<'EOF'
import sys
name = sys.argv[1]
for line in open(sys.argv[2]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) >= 10 and cells[2] == "8":
        # PP, TG, B, N_KV, T_PP, S_PP, T_TG, S_TG, T, S
        print("llama-%s-batch8-decode %s" % (name, cells[7]))
        print("llama-%s-batch8-overall %.2f" % (name, 8 * 64 / float(cells[8])))
EOF
}

# Round 0 warms the page cache and the CPUs up; its figures are dropped.
for round in $(seq 0 "$rounds"); do
  if [[ $round == 1 ]]; then
    : > "$results"
  fi
  log "round $round of $rounds"
  volt_single bf16
  llama_single bf16 "$work/bf16.gguf"
  volt_single nvfp4
  volt_single mixed
  llama_single q4_0 "$work/q4_0.gguf"
  volt_single bf16 "$bin" fast fast
  volt_single mixed "$bin" fast fast
  if [[ -n ${OLD_BIN:-} ]]; then
    volt_single bf16 "$OLD_BIN" before
    volt_single mixed "$OLD_BIN" before
  fi
  hf_single
  volt_long bf16
  volt_long bf16 fast fast
  volt_long mixed fast fast
  volt_batch bf16
  llama_batch bf16 "$work/bf16.gguf"
  volt_batch mixed
  llama_batch q4_0 "$work/q4_0.gguf"
  volt_batch bf16 fast fast
  volt_batch mixed fast fast
done

python3 - "$results" <<'EOF'
import statistics, sys
values = {}
for line in open(sys.argv[1]):
    name, value = line.split()
    values.setdefault(name, []).append(float(value))
med = {k: statistics.median(v) for k, v in values.items()}
print("medians of %d rounds" % max(len(v) for v in values.values()))
print("%-30s %10s" % ("", "median"))
for k in sorted(med):
    print("%-30s %10.2f" % (k, med[k]))
def ratio(label, a, b, lower_is_better=False):
    if a in med and b in med:
        r = med[b] / med[a] if lower_is_better else med[a] / med[b]
        print("%-52s %6.2fx" % (label, r))
print()
print("ratios (> 1: volt ahead)")
ratio("decode, volt BF16 / llama.cpp BF16", "volt-bf16-decode", "llama-bf16-decode")
ratio("decode, volt BF16 / HF bf16", "volt-bf16-decode", "hf-bf16-decode")
ratio("decode, volt NVFP4 (lm_head BF16) / llama.cpp Q4_0", "volt-nvfp4-decode", "llama-q4_0-decode")
ratio("decode, volt NVFP4 mixed / llama.cpp Q4_0", "volt-mixed-decode", "llama-q4_0-decode")
ratio("32-token prompt, volt BF16 vs llama.cpp BF16", "volt-bf16-prompt-ms", "llama-bf16-prompt-ms", True)
ratio("32-token prompt, volt mixed vs llama.cpp Q4_0", "volt-mixed-prompt-ms", "llama-q4_0-prompt-ms", True)
ratio("2000-token prompt, volt BF16 vs llama.cpp BF16", "volt-bf16-prompt2000-ms", "llama-bf16-prompt2000-ms", True)
ratio("batch 8 decode, volt BF16 / llama.cpp BF16", "volt-bf16-batch8-decode", "llama-bf16-batch8-decode")
ratio("batch 8 decode, volt mixed / llama.cpp Q4_0", "volt-mixed-batch8-decode", "llama-q4_0-batch8-decode")
ratio("fast: decode, volt BF16 / llama.cpp BF16", "fast-bf16-decode", "llama-bf16-decode")
ratio("fast: decode, volt BF16 / HF bf16", "fast-bf16-decode", "hf-bf16-decode")
ratio("fast: decode, volt mixed / llama.cpp Q4_0", "fast-mixed-decode", "llama-q4_0-decode")
ratio("fast: 32-token prompt, volt BF16 vs llama.cpp BF16", "fast-bf16-prompt-ms", "llama-bf16-prompt-ms", True)
ratio("fast: 32-token prompt, volt mixed vs llama.cpp Q4_0", "fast-mixed-prompt-ms", "llama-q4_0-prompt-ms", True)
ratio("fast: 2000-token prompt, volt BF16 vs llama.cpp BF16", "fast-bf16-prompt2000-ms", "llama-bf16-prompt2000-ms", True)
ratio("fast: 2000-token prompt, volt mixed vs llama.cpp Q4_0", "fast-mixed-prompt2000-ms", "llama-q4_0-prompt2000-ms", True)
ratio("fast: batch 8 decode, volt BF16 / llama.cpp BF16", "fast-bf16-batch8-decode", "llama-bf16-batch8-decode")
ratio("fast: batch 8 decode, volt mixed / llama.cpp Q4_0", "fast-mixed-batch8-decode", "llama-q4_0-batch8-decode")
ratio("decode, volt BF16 / OLD_BIN's volt", "volt-bf16-decode", "before-bf16-decode")
ratio("decode, volt mixed / OLD_BIN's volt", "volt-mixed-decode", "before-mixed-decode")
ratio("32-token prompt, volt BF16 vs OLD_BIN's volt", "volt-bf16-prompt-ms", "before-bf16-prompt-ms", True)
EOF
