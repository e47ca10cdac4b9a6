// templates/embedding.cu - Embedding: rows of a (vocab-parallel) FP16 table.
//
// out[t] = table[tokens[t] - vocab_start] when the token is in this rank's
// rows, else zeros (an all-reduce completes the row). Exact copies.
// Constants: DIM (H), VOCAB_ROWS. Launch: grid.x = T, THREADS threads.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    embedding(const int *tokens, const u16 *table, u16 *out, int count, int vocabStart) {
  const int t = blockIdx.x;
  if (t >= count)
    return;
  const int row = tokens[t] - vocabStart;
  const bool inside = row >= 0 && row < VOLT_VOCAB_ROWS;
  const u16 *src = table + static_cast<i64>(inside ? row : 0) * VOLT_DIM;
  u16 *dst = out + static_cast<i64>(t) * VOLT_DIM;
  if (VOLT_DIM % 8 == 0) {
    for (int i = threadIdx.x; i < VOLT_DIM / 8; i += VOLT_THREADS) {
      u32x4 v = {0, 0, 0, 0};
      if (inside)
        v = loadReadOnly16(src + 8 * i);
      store16(dst + 8 * i, v);
    }
  } else {
    for (int i = threadIdx.x; i < VOLT_DIM; i += VOLT_THREADS)
      dst[i] = inside ? src[i] : u16(0);
  }
}
