#!/usr/bin/env bash
# Runs every GPU check from a bundle made by prepare.sh, writing the logs
# and the benchmark tables to RESULTS (default: ./results). Budget: under 10
# minutes on one GPU (150 + 60 + 60 + 140 + 120 s limits, and 6 runs of at
# most 10 s for the MTP comparison); each step has its own. VOLT_GPU_STEPS
# names the steps to run (default: kernels e2e bench hybrid mtp serve), so
# that a call with little device time left can skip what was measured.
# A skipped test counts as a failure here: on the lent machine a skip means
# the GPU could not be used, which is what the run is for.
#
#   bash run.sh [RESULTS] [--peak-tflops N]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$PWD/results}
shift || true
mkdir -p "$results"
# The bundled libraries, unpacked outside the (possibly read-only) bundle.
libs=$(mktemp -d)
trap 'rm -rf "$libs"' EXIT
tar -xzf "$here/lib.tar.gz" -C "$libs"
tar -xzf "$here/mtp.tar.gz" -C "$libs"
# The programs, kernels and plans travel xz-compressed (a tenth of their
# size); Python's lzma where the machine has no xz.
payload="$libs/payload"
mkdir -p "$payload"
tar -xJf "$here/payload.tar.xz" -C "$payload" 2> /dev/null ||
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$here/payload.tar.xz" "$payload"
steps=" ${VOLT_GPU_STEPS:-kernels e2e bench hybrid mtp serve} "
want() { [[ "$steps" == *" $1 "* ]]; }
export LD_LIBRARY_PATH="$libs/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VOLT_GPU_KERNELS="$payload/kernels" VOLT_GPU_PLANS="$payload/plans"
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
if ! "$payload/bin/gpu_kernels_test" --gtest_list_tests > /dev/null 2> "$results/start.log"; then
  export LD_LIBRARY_PATH="$libs/lib-fallback:$LD_LIBRARY_PATH"
  echo "programs need the bundled libraries" >> "$results/device.txt"
fi
ldd "$payload/bin/gpu_kernels_test" >> "$results/device.txt" 2>&1

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
want kernels &&
  step 150 kernels "$payload/bin/gpu_kernels_test" --gtest_output="xml:$results/kernels.xml"
want e2e && step 60 e2e "$payload/bin/gpu_e2e_test" --gtest_output="xml:$results/e2e.xml"
if want bench; then
  timeout -k 10 60 "$payload/bin/gpu_bench" "$@" > "$results/bench.md" 2> "$results/bench.log" ||
    status=1
fi

# End-to-end serving: volt-serve on the Qwen3-30B-A3B plan with synthetic
# weights, loaded by volt-bench at concurrency 1, 8 and 32 (512-token
# prompts, 128-token outputs), all within `limit` seconds; serve.log keeps
# the server's output. Any failure (the server not starting, a level that
# does not finish) is reported in serve-bench.md and fails the run.
serve_bench() {
  local limit=$1 plan="$payload/serve/qwen3-30b-a3b.vplan" md="$results/serve-bench.md"
  local deadline=$((SECONDS + limit)) port="" healthy=""
  echo "# volt-serve --synthetic-weights: Qwen3-30B-A3B, 512 + 128 tokens" > "$md"
  stdbuf -oL -eL "$payload/bin/volt-serve" --synthetic-weights --backend cuda --port 0 \
    --no-access-log "$plan" > "$results/serve.log" 2>&1 &
  local pid=$!
  while ((SECONDS < deadline)) && kill -0 "$pid" 2> /dev/null; do
    [ -n "$port" ] ||
      port=$(sed -n 's|^volt-serve: listening on http://[^:]*:\([0-9]*\).*|\1|p' \
        "$results/serve.log" 2> /dev/null)
    if [ -n "$port" ] && exec 3<> "/dev/tcp/127.0.0.1/$port" 2> /dev/null; then
      printf 'GET /health HTTP/1.0\r\n\r\n' >&3
      healthy=$(timeout 5 head -n 1 <&3 | grep -c ' 200 ')
      exec 3>&-
      [ "$healthy" = 1 ] && break
    fi
    sleep 1
  done
  if [ "$healthy" != 1 ]; then
    if kill -0 "$pid" 2> /dev/null; then
      echo "skipped: volt-serve was not healthy within $limit s; its log ends:" >> "$md"
    else
      echo "skipped: volt-serve stopped before it was healthy; its log ends:" >> "$md"
    fi
    tail -n 5 "$results/serve.log" | sed 's/^/    /' >> "$md"
    status=1
  else
    echo "volt-serve healthy after $((limit - deadline + SECONDS)) s" >> "$md"
    # One volt-bench per level, so that each level gets as many requests as
    # it has concurrency (at least 4), and a slow level leaves the others'
    # figures.
    local c requests left
    for c in 1 8 32; do
      requests=$((c < 4 ? 4 : c))
      left=$((deadline - SECONDS))
      if ((left < 5)); then
        echo "concurrency $c: not run, out of time" >> "$md"
        status=1
        continue
      fi
      printf '\n## concurrency %d, %d requests\n\n```\n' "$c" "$requests" >> "$md"
      timeout -k 5 "$left" "$payload/bin/volt-bench" --url "http://127.0.0.1:$port" \
        --concurrency "$c" --prompt-tokens 512 --output-tokens 128 --num-requests "$requests" \
        >> "$md" 2>> "$results/serve-bench.log" ||
        { echo "volt-bench failed or ran out of time (see serve-bench.log)" >> "$md"; status=1; }
      echo '```' >> "$md"
    done
  fi
  kill -TERM "$pid" 2> /dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2> /dev/null || break; sleep 1; done
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
}

# MTP drafts on the GPU (tests/bench/speculative/mtp.sh's comparison):
# volt-run on the bundle's agreeing model without and with its MTP head,
# greedy, 200 tokens, best of 3 each; the token ids must agree.
# The hybrid the users run: Qwen3.6-35B-A3B in NVIDIA's NVFP4 + FP8 layout
# (one GPU, synthetic weights), a 4,096-token prompt (chunked Gated
# DeltaNet, head_dim-256 attention on tensor cores, FP8 projections) and 64
# decoded tokens with volt-run: time to first token and decode tokens/s.
hybrid_bench() {
  local limit=$1 md="$results/hybrid-bench.md" ids
  ids=$(python3 -c "print(','.join(str(17 + (i * 7919) % 200000) for i in range(4096)))")
  echo "# Qwen3.6-35B-A3B (NVFP4 + FP8, synthetic weights), 4,096-token prompt, 64 tokens" > "$md"
  if timeout -k 5 "$limit" stdbuf -oL -eL "$payload/bin/volt-run" --synthetic-weights \
    --backend cuda --prompt-ids "$ids" --max-tokens 64 --ignore-eos \
    "$payload/hybrid/qwen3.6-35b-a3b.vplan" > "$results/hybrid.log" 2>&1; then
    grep -E "^volt-run: " "$results/hybrid.log" | tail -n 5 | sed 's/^/    /' >> "$md"
  else
    echo "volt-run failed or ran out of time; its log ends:" >> "$md"
    tail -n 8 "$results/hybrid.log" | sed 's/^/    /' >> "$md"
    status=1
  fi
}
want hybrid && hybrid_bench 120

mtp_bench() {
  local md="$results/mtp-bench.md" k best ids first="" rate out
  echo "# MTP drafts, Qwen3.5-MoE 16 x 128 (agreeing head), greedy, 200 tokens" > "$md"
  printf '\n| plan | decode tok/s | speculative |\n|---|---|---|\n' >> "$md"
  for k in 0 3; do
    best=0
    for _ in 1 2 3; do
      out=$(timeout -k 2 10 "$payload/bin/volt-run" --backend cuda --prompt-ids 5,6,7,8,9,10,11,12,13,14,15 \
              --max-tokens 200 --ignore-eos --temperature 0 --print-ids "$libs/mtp/k$k/plan.vplan" \
              2> "$results/mtp-k$k.log" | tr -d '\000') || { status=1; echo "k = $k: volt-run failed (mtp-k$k.log)" >> "$md"; return; }
      rate=$(sed -n 's/.* \([0-9.]*\) tokens\/s after it.*/\1/p' "$results/mtp-k$k.log")
      ids=$(grep '^ids:' <<< "$out")
      best=$(awk -v a="$best" -v b="$rate" 'BEGIN { print (b > a) ? b : a }')
    done
    if [ -z "$first" ]; then first=$ids; elif [ "$ids" != "$first" ]; then
      echo "k = $k: the token ids differ from the plan without drafts" >> "$md"; status=1; fi
    printf '| k = %s | %s | %s |\n' "$k" "$best" \
      "$(sed -n 's/^volt-run: speculative: //p' "$results/mtp-k$k.log")" >> "$md"
  done
}
want mtp && mtp_bench
want serve && serve_bench 140

tail -n 3 "$results/kernels.log" "$results/e2e.log" 2> /dev/null
cat "$results/bench.md" "$results/hybrid-bench.md" "$results/mtp-bench.md" \
  "$results/serve-bench.md" 2> /dev/null
exit $status
