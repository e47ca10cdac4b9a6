// templates/common/volt.cuh - device helpers every volt kernel shares.
//
// Kernels include no CUDA header, so that NVRTC 11.8 (the last to target
// sm_70), 12.x and 13.x all compile them: FP16 values are carried as their
// bit patterns (`unsigned short`, two in an `unsigned int`), and the few
// instructions C++ cannot spell (FP16 conversions and arithmetic,
// read-only-path loads, warp shuffles, Volta's tensor-core MMA) are inline
// PTX. Everything here is sm_70 PTX; newer GPUs run it unchanged.
#pragma once

#if defined(__CUDACC__)
#define VOLT_DEVICE __device__ __forceinline__
#define VOLT_HD __host__ __device__ __forceinline__
#else
#define VOLT_DEVICE inline
#define VOLT_HD inline
#endif

namespace volt {

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef long long i64;
typedef unsigned long long u64;

/// Four 32-bit words: one 128-bit load.
struct u32x4 {
  u32 x, y, z, w;
};

} // namespace volt

/// Declares `name`, the block's dynamic shared memory, as an array of `type`.
#if defined(__CUDACC__)
#define VOLT_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#else
#define VOLT_DYNAMIC_SHARED(type, name) type *name = ::volt::sim::dynamicShared<type>()
#endif

namespace volt {

#if defined(__CUDACC__)

// ---- FP16 <-> FP32 -------------------------------------------------------

/// FP16 bits to FP32, exactly.
VOLT_DEVICE float halfToFloat(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

/// FP32 to FP16 bits, round to nearest even (overflow gives inf).
VOLT_DEVICE u16 floatToHalf(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

/// Two FP16 products, each rounded once (no contraction into an FMA).
VOLT_DEVICE u32 mulHalf2(u32 a, u32 b) {
  u32 d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/// PTX prmt in its default mode: byte i of the result is byte
/// (Selector >> 4i) & 7 of the pair {b, a} (a holds bytes 0-3), or that
/// byte's sign bit replicated when bit 3 of the selector's nibble is set.
template <u32 Selector> VOLT_DEVICE u32 bytePermute(u32 a, u32 b) {
  u32 d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "n"(Selector));
  return d;
}

// ---- Loads and stores ----------------------------------------------------

/// 16 bytes through the read-only (non-coherent) path: for data no kernel
/// writes while this one runs (weights, the step's activations it reads).
VOLT_DEVICE u32x4 loadReadOnly16(const void *p) {
  u32x4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

/// 8 bytes through the read-only path.
VOLT_DEVICE void loadReadOnly8(const void *p, u32 &a, u32 &b) {
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(p));
}

VOLT_DEVICE u32 loadReadOnly4(const void *p) {
  u32 v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

VOLT_DEVICE u16 loadReadOnly2(const void *p) {
  u16 v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

VOLT_DEVICE void store16(void *p, u32x4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

// ---- Warp collectives ----------------------------------------------------

VOLT_DEVICE u32 laneId() {
  u32 lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

VOLT_DEVICE float shuffleXor(float v, int mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
  return r;
}

VOLT_DEVICE int shuffleXor(int v, int mask) {
  int r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}

VOLT_DEVICE float shuffle(float v, int lane) {
  float r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(lane));
  return r;
}

VOLT_DEVICE int shuffle(int v, int lane) {
  int r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(lane));
  return r;
}

/// Lanes whose predicate is true, as a mask.
VOLT_DEVICE u32 warpBallot(bool p) {
  u32 mask;
  asm volatile("{\n .reg .pred q;\n setp.ne.u32 q, %1, 0;\n vote.sync.ballot.b32 %0, q, "
               "0xffffffff;\n}"
               : "=r"(mask)
               : "r"(static_cast<u32>(p)));
  return mask;
}

/// Lanes holding the same value as this one, as a mask.
VOLT_DEVICE u32 matchAny(int v) {
  u32 mask;
  asm volatile("match.any.sync.b32 %0, %1, 0xffffffff;" : "=r"(mask) : "r"(v));
  return mask;
}

/// Lanes below this one, as a mask.
VOLT_DEVICE u32 lanesBelow() {
  u32 mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

// ---- Tensor cores --------------------------------------------------------

/// Volta's native tensor-core operation, per quad pair of the warp (lanes
/// 0-3 with 16-19, 4-7 with 20-23, ...): D[8x8] = A[8x4] * B[4x8] + C, A
/// row-major and B column-major FP16, C and D FP32. Fragments (lane l, with
/// g = l >> 4): `a` holds A[(l & 3) + 4g][0..3], `b` holds B[0..3][(l & 3) +
/// 4g], two halves per word, low half first; `c[i]` is C[row][col] with row
/// = (l & 1) + 4g + (i & 2), col = (l & 2) + (i & 1) + (i & 4).
VOLT_DEVICE void mma884(float (&c)[8], u32 a0, u32 a1, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11}, {%0, %1, %2, %3, %4, %5, %6, %7};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]),
                 "+f"(c[7])
               : "r"(a0), "r"(a1), "r"(b0), "r"(b1));
}

#endif // __CUDACC__

// Everything below is built on the primitives above. The unit tests run it
// on the host with an emulation of those primitives (VOLT_SIMT,
// tests/unit/codegen/simt), together with the kernels that use it.
#if defined(__CUDACC__) || defined(VOLT_SIMT)

VOLT_DEVICE int popCount(u32 v) { return __popc(v); }

/// Sum over the warp, in the butterfly order (every lane gets the sum).
VOLT_DEVICE float warpSum(float v) {
  for (int m = 16; m > 0; m >>= 1)
    v += shuffleXor(v, m);
  return v;
}

VOLT_DEVICE float warpMax(float v) {
  for (int m = 16; m > 0; m >>= 1)
    v = fmaxf(v, shuffleXor(v, m));
  return v;
}

/// Sum over a block of `Warps` warps; `scratch` holds at least Warps floats.
/// Every thread gets the sum (warp sums added in warp order).
template <int Warps> VOLT_DEVICE float blockSum(float v, float *scratch) {
  v = warpSum(v);
  if (Warps == 1)
    return v;
  const int warp = threadIdx.x / 32;
  __syncthreads(); // scratch may still be read by a previous call
  if (laneId() == 0)
    scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < Warps; ++w)
    total += scratch[w];
  return total;
}

/// Row of the accumulator element c[i] held by `lane` (see mma884).
VOLT_DEVICE int mmaRow(int lane, int i) { return (lane & 1) + ((lane >> 4) << 2) + (i & 2); }
/// Column of the accumulator element c[i] held by `lane`.
VOLT_DEVICE int mmaCol(int lane, int i) { return (lane & 2) + (i & 1) + (i & 4); }

/// The block's threads copy kBytes from src to dst: 16 bytes at a time when
/// kBytes allows and the caller says both start 16-byte aligned (kAligned),
/// else byte by byte.
template <int kBytes, int kThreads, bool kAligned = true>
VOLT_DEVICE void copyRow(const u8 *src, u8 *dst) {
  if (kAligned && kBytes % 16 == 0) {
    for (int i = threadIdx.x; i < kBytes / 16; i += kThreads)
      store16(dst + 16 * i, loadReadOnly16(src + 16 * i));
  } else {
    for (int i = threadIdx.x; i < kBytes; i += kThreads)
      dst[i] = src[i];
  }
}

// ---- Math ----------------------------------------------------------------

/// silu(g) * u as the cpu backend computes it: g / (1 + exp(-g)) * u.
VOLT_DEVICE float siluTimes(float g, float u) { return g / (1.0f + expf(-g)) * u; }

#endif // __CUDACC__ || VOLT_SIMT

} // namespace volt
