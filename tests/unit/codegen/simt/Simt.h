//===- Simt.h - running volt's kernel templates on the host -----*- C++ -*-===//
//
// The kernel templates are CUDA C++ whose only non-C++ parts are a handful
// of primitives in templates/common/volt.cuh (FP16 conversions, loads,
// shuffles, ballot, match, mma.m8n8k4). This header emulates those
// primitives and CUDA's built-in variables, so that a test compiles a
// template as ordinary C++ and runs it on the host: every thread of a block
// is a fiber, warp collectives and __syncthreads are barriers, blocks run
// one after another. Kernel bugs the CPU can show (indexing, tiling,
// epilogues, numerics, divergent barriers) show here; the hardware's
// fragment layouts are emulated as the PTX ISA documents them, so a wrong
// reading of those is only caught on a GPU (tests/gpu).
//
// Use: include this header first, then every templates/common header, then
// each template instance inside its own namespace with its VOLT_*
// constants defined and its entry point renamed (see SimtInstances.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#define VOLT_SIMT 1

#include "runtime/numerics/Half.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

/// CUDA's dim3 and built-in variables; the scheduler sets them for the
/// fiber it resumes.
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
extern dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __launch_bounds__(...)
// Blocks run one at a time, so one static instance serves each block.
#define __shared__ static
#define __align__(n) alignas(n)

void __syncthreads();
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(unsigned v) { return __builtin_ffs(static_cast<int>(v)); }
inline int atomicAdd(int *p, int v) {
  int old = *p;
  *p += v;
  return old;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

namespace volt {

struct u32x4;

namespace sim {

/// Runs `kernel` on every thread of every block of `grid` x `block`, with
/// `dynamicSharedBytes` of dynamic shared memory per block. Aborts with a
/// message when the threads of a block deadlock on a barrier.
void launch(dim3 grid, dim3 block, size_t dynamicSharedBytes, const std::function<void()> &kernel);

/// The current block's dynamic shared memory.
void *dynamicSharedBytes();
template <typename T> T *dynamicShared() { return static_cast<T *>(dynamicSharedBytes()); }

/// The running thread's lane in its warp (set at every switch).
extern unsigned currentLane;
inline unsigned lane() { return currentLane; }
/// __syncthreads.
void syncBlock();

/// Exchanges a 64-bit value with the warp: every live lane contributes
/// `value` and receives lane `source`'s.
uint64_t exchange(uint64_t value, unsigned source);
/// Lanes of the warp whose `value` is nonzero, and lanes whose value equals
/// this lane's.
uint32_t ballot(bool value);
uint32_t match(int value);
/// D = A x B + C for this lane's quad pair (mma.m8n8k4.row.col, FP32
/// accumulate; products exact, added in k order).
void mma(float (&c)[8], uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1);

} // namespace sim

// ---- The primitives of common/volt.cuh ----------------------------------
// (halfToFloat and floatToHalf are runtime/numerics/Half.h's, bit-exact.)

inline unsigned mulHalf2(unsigned a, unsigned b) {
  // The product of two FP16 values is exact in FP32; one rounding to FP16.
  auto one = [](uint16_t x, uint16_t y) {
    return static_cast<unsigned>(floatToHalf(halfToFloat(x) * halfToFloat(y)));
  };
  return one(static_cast<uint16_t>(a), static_cast<uint16_t>(b)) |
         one(static_cast<uint16_t>(a >> 16), static_cast<uint16_t>(b >> 16)) << 16;
}

/// prmt.b32 in its default mode, as the PTX ISA defines it.
template <unsigned Selector> inline unsigned bytePermute(unsigned a, unsigned b) {
  const uint64_t bytes = static_cast<uint64_t>(b) << 32 | a;
  unsigned d = 0;
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned select = (Selector >> (4 * i)) & 0xFu;
    unsigned byte = static_cast<unsigned>(bytes >> (8 * (select & 7u))) & 0xFFu;
    if (select & 8u)
      byte = byte & 0x80u ? 0xFFu : 0u;
    d |= byte << (8 * i);
  }
  return d;
}

namespace sim {
/// Aborts, like the GPU's misaligned-address fault, unless p is aligned.
void checkAligned(const void *p, size_t alignment, const char *what);
} // namespace sim

u32x4 loadReadOnly16(const void *p);
inline void loadReadOnly8(const void *p, unsigned &a, unsigned &b) {
  sim::checkAligned(p, 8, "ld.global.nc.v2.u32");
  std::memcpy(&a, p, 4);
  std::memcpy(&b, static_cast<const char *>(p) + 4, 4);
}
inline unsigned loadReadOnly4(const void *p) {
  sim::checkAligned(p, 4, "ld.global.nc.u32");
  unsigned v;
  std::memcpy(&v, p, 4);
  return v;
}
inline unsigned short loadReadOnly2(const void *p) {
  sim::checkAligned(p, 2, "ld.global.nc.u16");
  unsigned short v;
  std::memcpy(&v, p, 2);
  return v;
}
void store16(void *p, u32x4 v);

inline unsigned laneId() { return sim::lane(); }

inline float shuffleXor(float v, int mask) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits =
      static_cast<uint32_t>(sim::exchange(bits, (sim::lane() ^ static_cast<unsigned>(mask)) & 31));
  std::memcpy(&v, &bits, 4);
  return v;
}
inline int shuffleXor(int v, int mask) {
  return static_cast<int>(static_cast<uint32_t>(
      sim::exchange(static_cast<uint32_t>(v), (sim::lane() ^ static_cast<unsigned>(mask)) & 31)));
}
inline float shuffle(float v, int lane) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = static_cast<uint32_t>(sim::exchange(bits, static_cast<unsigned>(lane) & 31));
  std::memcpy(&v, &bits, 4);
  return v;
}
inline int shuffle(int v, int lane) {
  return static_cast<int>(static_cast<uint32_t>(
      sim::exchange(static_cast<uint32_t>(v), static_cast<unsigned>(lane) & 31)));
}
inline unsigned warpBallot(bool p) { return sim::ballot(p); }
inline unsigned matchAny(int v) { return sim::match(v); }
inline unsigned lanesBelow() { return (1u << sim::lane()) - 1u; }
inline void mma884(float (&c)[8], unsigned a0, unsigned a1, unsigned b0, unsigned b1) {
  sim::mma(c, a0, a1, b0, b1);
}

} // namespace volt

#include "common/volt.cuh"

namespace volt {

inline u32x4 loadReadOnly16(const void *p) {
  sim::checkAligned(p, 16, "ld.global.nc.v4.u32");
  u32x4 v;
  std::memcpy(&v, p, 16);
  return v;
}
inline void store16(void *p, u32x4 v) {
  sim::checkAligned(p, 16, "st.global.v4.u32");
  std::memcpy(p, &v, 16);
}

} // namespace volt
