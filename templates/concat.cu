// templates/concat.cu - Concat: out[t] = a[t] | b[t] (the MTP head's normed
// embedding and hidden state side by side, before mtp.fc). Exact copies.
// Constants: A_DIM, B_DIM (FP16 elements per row of a and b).
// Launch: grid.x = T, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    concat(const u8 *a, const u8 *b, u8 *out, int count) {
  const int t = blockIdx.x;
  if (t >= count)
    return;
  constexpr int kA = VOLT_A_DIM * 2, kB = VOLT_B_DIM * 2;
  u8 *dst = out + static_cast<i64>(t) * (kA + kB);
  // Rows of out are 16-byte aligned when both halves are whole 16 bytes.
  constexpr bool kAligned = kA % 16 == 0 && kB % 16 == 0;
  copyRow<kA, VOLT_THREADS, kAligned>(a + static_cast<i64>(t) * kA, dst);
  copyRow<kB, VOLT_THREADS, kAligned>(b + static_cast<i64>(t) * kB, dst + kA);
}
