#!/usr/bin/env bash
# The AVX-512 dotBlock bodies of FP16 and FP8 rows (DotBlockAvx512.cpp,
# and DotBlockAvx512Bf16.cpp for the fast numerics) carry their weight
# prefetch in the optimized objects. GCC 12's partial inlining once dropped
# every prefetch of them without a word (docs/perf/cpu-backend.md,
# 2026-12-05); this fails if a compiler or a change does that again.
# Arguments: runtime_cpu's objects.
set -euo pipefail
checked=0
for object in "$@"; do
  case $(basename "$object") in
    DotBlockAvx512.cpp.o | DotBlockAvx512Bf16.cpp.o) ;;
    *) continue ;;
  esac
  if ! code=$(objdump -d --no-show-raw-insn "$object"); then
    echo "FAIL: objdump could not disassemble $object"
    exit 1
  fi
  # grep -c prints 0 and exits 1 when nothing matches; the count decides.
  count=$(grep -c 'prefetcht0' <<<"$code" || true)
  if [ "$count" -eq 0 ]; then
    echo "FAIL: $object has no prefetcht0: the kernels' weight prefetch was compiled away"
    exit 1
  fi
  echo "$(basename "$object"): $count prefetches"
  checked=$((checked + 1))
done
if [ "$checked" -ne 2 ]; then
  echo "FAIL: found $checked of the 2 AVX-512 dotBlock objects among the arguments"
  exit 1
fi
