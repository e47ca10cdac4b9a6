//===- SimtEmulatorTest.cpp - the SIMT emulator's own primitives ----------===//
//
// The kernel tests trust the emulator's barriers, warp collectives and
// mma.m8n8k4; these tests check them against their definitions. The file
// is compiled twice: with the emulator's own x86-64 fiber switch and with
// swapcontext (the AddressSanitizer build's), under suite names of their
// own.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/simt/Simt.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#ifndef VOLT_SIMT_SUITE
#define VOLT_SIMT_SUITE SimtEmulator
#endif

namespace volt {
namespace {

unsigned threadLinear() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

TEST(VOLT_SIMT_SUITE, BarriersOrderEveryThreadOfEachBlock) {
  constexpr unsigned kThreads = 160, kBlocks = 3; // 5 warps
  std::vector<unsigned> out(kThreads * kBlocks * 2);
  sim::launch({kBlocks, 1, 1}, {32, 5, 1}, kThreads * sizeof(unsigned), [&] {
    auto *shared = sim::dynamicShared<unsigned>();
    const unsigned t = threadLinear();
    shared[t] = t + 1000 * blockIdx.x;
    __syncthreads();
    const unsigned first = shared[(t + 37) % kThreads];
    __syncthreads(); // every thread has read before any writes again
    shared[kThreads - 1 - t] = 7 * t;
    __syncthreads();
    out[2 * (blockIdx.x * kThreads + t)] = first;
    out[2 * (blockIdx.x * kThreads + t) + 1] = shared[t];
  });
  for (unsigned b = 0; b < kBlocks; ++b)
    for (unsigned t = 0; t < kThreads; ++t) {
      EXPECT_EQ(out[2 * (b * kThreads + t)], (t + 37) % kThreads + 1000 * b) << b << " " << t;
      EXPECT_EQ(out[2 * (b * kThreads + t) + 1], 7 * (kThreads - 1 - t)) << b << " " << t;
    }
}

TEST(VOLT_SIMT_SUITE, WarpCollectivesFollowTheirDefinitions) {
  constexpr unsigned kThreads = 64;
  struct Out {
    float down, xored;
    int idx;
    unsigned ballot, match;
  };
  std::vector<Out> out(kThreads);
  sim::launch({1, 1, 1}, {kThreads, 1, 1}, 0, [&] {
    const unsigned t = threadLinear(), lane = laneId();
    Out &o = out[t];
    o.down = shuffle(static_cast<float>(t) + 0.5f, static_cast<int>((lane + 3) % 32));
    o.xored = shuffleXor(static_cast<float>(t) * 2.0f, 5);
    o.idx = shuffle(static_cast<int>(t) - 40, 0);
    o.ballot = warpBallot(lane % 3 == 0 || t == 40);
    o.match = matchAny(static_cast<int>(lane % 4));
  });
  for (unsigned t = 0; t < kThreads; ++t) {
    const unsigned warp = t / 32 * 32, lane = t % 32;
    EXPECT_EQ(out[t].down, static_cast<float>(warp + (lane + 3) % 32) + 0.5f) << t;
    EXPECT_EQ(out[t].xored, static_cast<float>(warp + (lane ^ 5)) * 2.0f) << t;
    EXPECT_EQ(out[t].idx, static_cast<int>(warp) - 40) << t;
    unsigned ballot = 0, match = 0;
    for (unsigned l = 0; l < 32; ++l) {
      if (l % 3 == 0 || warp + l == 40)
        ballot |= 1u << l;
      if (l % 4 == lane % 4)
        match |= 1u << l;
    }
    EXPECT_EQ(out[t].ballot, ballot) << t;
    EXPECT_EQ(out[t].match, match) << t;
  }
}

TEST(VOLT_SIMT_SUITE, ThreadsThatExitLeaveTheirBarriers) {
  constexpr unsigned kThreads = 96;
  std::vector<unsigned> ballots(kThreads, 0), seen(kThreads, 0);
  std::vector<unsigned> shared(kThreads, 0);
  sim::launch({2, 1, 1}, {kThreads, 1, 1}, 0, [&] {
    const unsigned t = threadLinear();
    if (t % 3 == 0 || (t >= 64 && blockIdx.x == 1))
      return; // the third warp leaves entirely in the second block
    shared[t] = t + 1;
    __syncthreads();
    seen[t] = shared[t ^ 1]; // a neighbour that exited wrote nothing
    __syncthreads();
    ballots[t] = warpBallot(true);
  });
  for (unsigned t = 0; t < 64; ++t) {
    if (t % 3 == 0)
      continue;
    const unsigned warp = t / 32 * 32;
    unsigned live = 0;
    for (unsigned l = 0; l < 32; ++l)
      if ((warp + l) % 3 != 0)
        live |= 1u << l;
    EXPECT_EQ(ballots[t], live) << t;
    EXPECT_EQ(seen[t], (t ^ 1) % 3 == 0 ? 0u : (t ^ 1) + 1) << t;
  }
}

uint16_t half(float v) { return floatToHalf(v); }
uint32_t pack(float lo, float hi) {
  return static_cast<uint32_t>(half(lo)) | static_cast<uint32_t>(half(hi)) << 16;
}

/// The fragments of mma.m8n8k4.row.col.f32.f16.f16.f32 as the PTX ISA lays
/// them out: quad pair q is lanes 4q..4q+3 (rows, and columns, 0-3) and
/// 16+4q..16+4q+3 (4-7); lane l's accumulator i is row (l & 1) + 4 (l >> 4)
/// + (i & 2), column (l & 2) + (i & 1) + (i & 4).
struct Fragments {
  float a[4][8][4], b[4][4][8], c[4][8][8];
  static unsigned laneOf(unsigned q, unsigned r) { return r < 4 ? 4 * q + r : 16 + 4 * q + r - 4; }
  static unsigned quadPair(unsigned lane) { return (lane >> 2) & 3; }
  static unsigned row(unsigned lane, unsigned i) { return (lane & 1) + 4 * (lane >> 4) + (i & 2); }
  static unsigned col(unsigned lane, unsigned i) { return (lane & 2) + (i & 1) + (i & 4); }
};

std::vector<std::array<float, 8>> runMma(const Fragments &f) {
  std::vector<std::array<float, 8>> d(32);
  sim::launch({1, 1, 1}, {32, 1, 1}, 0, [&] {
    const unsigned l = laneId(), q = Fragments::quadPair(l);
    const unsigned r = l < 16 ? l % 4 : 4 + l % 4; // this lane's row of A, column of B
    float c[8];
    for (unsigned i = 0; i < 8; ++i)
      c[i] = f.c[q][Fragments::row(l, i)][Fragments::col(l, i)];
    mma884(c, pack(f.a[q][r][0], f.a[q][r][1]), pack(f.a[q][r][2], f.a[q][r][3]),
           pack(f.b[q][0][r], f.b[q][1][r]), pack(f.b[q][2][r], f.b[q][3][r]));
    for (unsigned i = 0; i < 8; ++i)
      d[l][i] = c[i];
  });
  return d;
}

TEST(VOLT_SIMT_SUITE, MmaMultipliesEachQuadPairsMatrices) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);
  Fragments f;
  // Small integers: every product and sum is exact, whatever the order.
  for (unsigned q = 0; q < 4; ++q)
    for (unsigned r = 0; r < 8; ++r) {
      for (unsigned k = 0; k < 4; ++k) {
        f.a[q][r][k] = static_cast<float>(small(rng)) * 0.5f;
        f.b[q][k][r] = static_cast<float>(small(rng));
      }
      for (unsigned c = 0; c < 8; ++c)
        f.c[q][r][c] = static_cast<float>(small(rng) * 16);
    }
  const auto d = runMma(f);
  for (unsigned l = 0; l < 32; ++l) {
    const unsigned q = Fragments::quadPair(l);
    for (unsigned i = 0; i < 8; ++i) {
      const unsigned row = Fragments::row(l, i), col = Fragments::col(l, i);
      float want = f.c[q][row][col];
      for (unsigned k = 0; k < 4; ++k)
        want += f.a[q][row][k] * f.b[q][k][col];
      EXPECT_EQ(d[l][i], want) << "lane " << l << " value " << i;
    }
  }
  EXPECT_EQ(Fragments::laneOf(3, 7), 31u);
}

TEST(VOLT_SIMT_SUITE, MmaAddsTheProductsToTheAccumulatorInKOrder) {
  // 2^24 + 1 rounds back to 2^24 (to even) at each of the four additions;
  // the products summed first would give 2^24 + 4.
  Fragments f{};
  for (unsigned q = 0; q < 4; ++q)
    for (unsigned r = 0; r < 8; ++r) {
      for (unsigned k = 0; k < 4; ++k) {
        f.a[q][r][k] = 1.0f;
        f.b[q][k][r] = 1.0f;
      }
      for (unsigned c = 0; c < 8; ++c)
        f.c[q][r][c] = 16777216.0f;
    }
  for (const auto &lane : runMma(f))
    for (float v : lane)
      EXPECT_EQ(v, 16777216.0f);
}

TEST(VOLT_SIMT_SUITE, LaunchesOneAfterAnotherReuseTheThreads) {
  // Many launches of different shapes, each checked: the fibers' stacks are
  // kept between launches.
  for (unsigned threads : {32u, 1024u, 7u, 256u, 1024u}) {
    std::vector<unsigned> out(threads * 2, 0);
    sim::launch({2, 1, 1}, {threads, 1, 1}, 4 * threads, [&] {
      auto *shared = sim::dynamicShared<unsigned>();
      const unsigned t = threadLinear();
      shared[t] = t * 3 + blockIdx.x;
      __syncthreads();
      out[blockIdx.x * threads + t] = shared[threads - 1 - t];
    });
    for (unsigned b = 0; b < 2; ++b)
      for (unsigned t = 0; t < threads; ++t)
        ASSERT_EQ(out[b * threads + t], (threads - 1 - t) * 3 + b) << threads << " " << t;
  }
}

TEST(VOLT_SIMT_SUITE, ADeadlockedBlockAbortsNamingIt) {
  // Lane 0 waits in a warp collective for lanes that wait at the block's
  // barrier for lane 0.
  EXPECT_DEATH(sim::launch({3, 1, 1}, {64, 1, 1}, 0,
                           [] {
                             if (blockIdx.x == 2 && threadIdx.x == 0)
                               (void)shuffle(1, 1);
                             else
                               __syncthreads();
                           }),
               "block \\(2, 0, 0\\) deadlocked");
}

} // namespace
} // namespace volt
