// templates/gather_rows.cu - GatherRows: out[r] = in[rows[r]] (each logits
// row's token before the LM head: a sequence's last token, and in a
// speculative verify step its draft-carrying tokens). Exact copies.
// Constants: DIM, ELEMENT_BYTES (2 or 4). Launch: grid.x = R, THREADS.
#include "common/volt.cuh"

using namespace volt;

extern "C" __global__ void __launch_bounds__(VOLT_THREADS)
    gather_rows(const u8 *in, const int *rows, u8 *out, int count) {
  const int s = blockIdx.x;
  if (s >= count)
    return;
  constexpr int kBytes = VOLT_DIM * VOLT_ELEMENT_BYTES;
  copyRow<kBytes, VOLT_THREADS>(in + static_cast<i64>(rows[s]) * kBytes,
                                out + static_cast<i64>(s) * kBytes);
}
