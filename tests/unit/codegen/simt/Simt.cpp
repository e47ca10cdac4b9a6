//===- Simt.cpp - the fiber scheduler behind Simt.h -----------------------===//
//
// Fibers start with makecontext and, outside sanitizer builds, switch with
// _setjmp/_longjmp: swapcontext saves and restores the signal mask, a
// system call per switch, and a kernel's barriers and warp collectives
// switch fibers millions of times per launch. A fiber starts once per
// launch and runs the kernel for each block in turn (between blocks it
// waits, suspended, for the scheduler to set the next block up).
// AddressSanitizer follows swapcontext's stack switches, not longjmp's: it
// keeps swapcontext everywhere.
//
//===----------------------------------------------------------------------===//
// _FORTIFY_SOURCE's longjmp refuses jumps to another stack.
#undef _FORTIFY_SOURCE
#include "tests/unit/codegen/simt/Simt.h"

#include <setjmp.h>
#include <ucontext.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace volt::sim {
namespace {

constexpr size_t kStackBytes = 64 << 10;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kJumpSwitch = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kJumpSwitch = false;
#else
constexpr bool kJumpSwitch = true;
#endif
#else
constexpr bool kJumpSwitch = true;
#endif

struct Barrier {
  int expected = 0;
  int arrived = 0;
  uint64_t generation = 0;
};

struct Fiber {
  ucontext_t context;
  /// Where the fiber resumes (kJumpSwitch), once started.
  jmp_buf jump;
  bool started = false;
  std::unique_ptr<char[]> stack;
  bool done = false;
  Barrier *waiting = nullptr;
  uint64_t waitGeneration = 0;
  dim3 index;
  unsigned linear = 0;
  /// Warp collectives this thread has entered: each alternates between two
  /// buffers, so that one barrier per collective suffices (a lane can only
  /// write a buffer again after every lane has passed the next barrier,
  /// that is, has read it).
  unsigned exchanges = 0, mmas = 0;
};

struct MmaOperands {
  uint32_t a0, a1, b0, b1;
  float c[8];
};

struct Block {
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  jmp_buf schedulerJump;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<std::array<uint64_t, 32>> exchange[2];
  std::vector<std::array<bool, 32>> alive;
  std::vector<std::array<MmaOperands, 32>> mma[2];
  std::vector<uint8_t> shared;
  const std::function<void()> *kernel = nullptr;
  unsigned current = 0;
};

Block *g = nullptr;

Fiber &self() { return g->fibers[g->current]; }
unsigned warpOf(const Fiber &f) { return f.linear / 32; }

void release(Barrier &b) {
  b.arrived = 0;
  ++b.generation;
}

/// Switches from fiber `f` to the scheduler, until it resumes `f`.
[[gnu::noinline]] void suspend(Fiber &f) {
  if (!kJumpSwitch)
    swapcontext(&f.context, &g->scheduler);
  else if (_setjmp(f.jump) == 0)
    _longjmp(g->schedulerJump, 1);
}

/// Switches from the scheduler to fiber `f`, until it suspends or ends.
[[gnu::noinline]] void resume(Block &state, Fiber &f) {
  if (!kJumpSwitch) {
    swapcontext(&state.scheduler, &f.context);
    return;
  }
  if (_setjmp(state.schedulerJump) == 0) {
    if (!f.started) {
      f.started = true;
      setcontext(&f.context);
    }
    _longjmp(f.jump, 1);
  }
}

void arrive(Barrier &b) {
  if (++b.arrived >= b.expected) {
    release(b);
    return;
  }
  Fiber &f = self();
  f.waiting = &b;
  f.waitGeneration = b.generation;
  suspend(f);
}

void finish(Fiber &f) {
  f.done = true;
  // An exited thread no longer takes part in any barrier.
  for (Barrier *b : {&g->block, &g->warps[warpOf(f)]}) {
    --b->expected;
    if (b->arrived > 0 && b->arrived >= b->expected)
      release(*b);
  }
  g->alive[warpOf(f)][f.linear % 32] = false;
}

void fiberMain(int index) {
  if (!kJumpSwitch) {
    (*g->kernel)();
    finish(g->fibers[static_cast<size_t>(index)]);
    return; // to uc_link, the scheduler
  }
  // Started once per launch: one block after another.
  for (;;) {
    (*g->kernel)();
    Fiber &f = g->fibers[static_cast<size_t>(index)];
    finish(f);
    suspend(f);
  }
}

/// Runs every thread of one block to completion (a function of its own, so
/// that no local of the caller lives across swapcontext).
void runBlock(Block &state, dim3 index, dim3 block) {
  const unsigned threads = block.x * block.y * block.z;
  const unsigned warps = (threads + 31) / 32;
  blockIdx = index;
  state.block = {static_cast<int>(threads), 0, 0};
  state.warps.assign(warps, Barrier{});
  for (int buffer = 0; buffer < 2; ++buffer) {
    state.exchange[buffer].assign(warps, {});
    state.mma[buffer].assign(warps, {});
  }
  state.alive.assign(warps, {});
  for (unsigned i = 0; i < threads; ++i) {
    Fiber &f = state.fibers[i];
    f.done = false;
    f.waiting = nullptr;
    f.linear = i;
    f.exchanges = f.mmas = 0;
    f.index = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
    state.warps[i / 32].expected++;
    state.alive[i / 32][i % 32] = true;
    if (kJumpSwitch && f.started)
      continue;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &state.scheduler;
    makecontext(&f.context, reinterpret_cast<void (*)()>(&fiberMain), 1, static_cast<int>(i));
  }
  for (;;) {
    bool progressed = false, allDone = true;
    for (unsigned i = 0; i < threads; ++i) {
      Fiber &f = state.fibers[i];
      if (f.done)
        continue;
      allDone = false;
      if (f.waiting && f.waiting->generation == f.waitGeneration)
        continue;
      f.waiting = nullptr;
      state.current = i;
      threadIdx = f.index;
      resume(state, f);
      progressed = true;
    }
    if (allDone)
      break;
    if (!progressed) {
      std::fprintf(stderr,
                   "simt: block (%u, %u, %u) deadlocked: threads wait on barriers that "
                   "others never reach (a barrier in divergent code?)\n",
                   index.x, index.y, index.z);
      std::abort();
    }
  }
}

} // namespace

void launch(dim3 grid, dim3 block, size_t dynamicSharedBytes, const std::function<void()> &kernel) {
  const unsigned threads = block.x * block.y * block.z;
  Block state;
  state.kernel = &kernel;
  state.fibers.resize(threads);
  for (Fiber &f : state.fibers)
    f.stack.reset(new char[kStackBytes]);
  state.shared.resize(dynamicSharedBytes + 16);
  gridDim = grid;
  blockDim = block;
  Block *saved = g;
  g = &state;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        runBlock(state, {bx, by, bz}, block);
  g = saved;
}

void checkAligned(const void *p, size_t alignment, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % alignment == 0)
    return;
  std::fprintf(stderr,
               "simt: misaligned %s at %p (needs %zu-byte alignment), thread %u of block "
               "(%u, %u, %u)\n",
               what, p, alignment, self().linear, blockIdx.x, blockIdx.y, blockIdx.z);
  std::abort();
}

void *dynamicSharedBytes() {
  uintptr_t p = reinterpret_cast<uintptr_t>(g->shared.data());
  return reinterpret_cast<void *>((p + 15) / 16 * 16);
}

unsigned lane() { return self().linear % 32; }

void syncBlock() { arrive(g->block); }

/// Publishes this lane's `value` to its warp and waits for every live lane;
/// returns the warp's values.
const std::array<uint64_t, 32> &publish(uint64_t value) {
  Fiber &f = self();
  const unsigned w = warpOf(f), l = f.linear % 32;
  std::array<uint64_t, 32> &values = g->exchange[f.exchanges++ & 1][w];
  values[l] = value;
  arrive(g->warps[w]);
  return values;
}

uint64_t exchange(uint64_t value, unsigned source) { return publish(value)[source]; }

uint32_t ballot(bool value) {
  const std::array<uint64_t, 32> &values = publish(value);
  const unsigned w = warpOf(self());
  uint32_t mask = 0;
  for (unsigned i = 0; i < 32; ++i)
    if (g->alive[w][i] && values[i])
      mask |= 1u << i;
  return mask;
}

uint32_t match(int value) {
  const std::array<uint64_t, 32> &values = publish(static_cast<uint32_t>(value));
  const unsigned w = warpOf(self());
  uint32_t mask = 0;
  for (unsigned i = 0; i < 32; ++i)
    if (g->alive[w][i] && values[i] == static_cast<uint32_t>(value))
      mask |= 1u << i;
  return mask;
}

void mma(float (&c)[8], uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
  Fiber &f = self();
  const unsigned w = warpOf(f), l = f.linear % 32;
  std::array<MmaOperands, 32> &operands = g->mma[f.mmas++ & 1][w];
  MmaOperands &mine = operands[l];
  mine = {a0, a1, b0, b1, {}};
  std::memcpy(mine.c, c, sizeof(c));
  arrive(g->warps[w]);
  // Quad pair of lane l: lanes 4q..4q+3 hold rows (and columns) 0-3,
  // lanes 16+4q.. rows 4-7.
  const unsigned q = (l >> 2) & 3;
  auto laneOf = [&](int i) { return i < 4 ? 4 * q + i : 16 + 4 * q + (i - 4); };
  auto half = [](uint32_t word, int which) {
    return halfToFloat(static_cast<uint16_t>(which ? word >> 16 : word & 0xFFFF));
  };
  float d[8];
  for (int i = 0; i < 8; ++i) {
    const int row = static_cast<int>((l & 1) + ((l >> 4) << 2)) + (i & 2);
    const int col = static_cast<int>(l & 2) + (i & 1) + (i & 4);
    const MmaOperands &a = operands[static_cast<size_t>(laneOf(row))];
    const MmaOperands &b = operands[static_cast<size_t>(laneOf(col))];
    float acc = mine.c[i];
    for (int k = 0; k < 4; ++k)
      acc += half(k < 2 ? a.a0 : a.a1, k & 1) * half(k < 2 ? b.b0 : b.b1, k & 1);
    d[i] = acc;
  }
  std::memcpy(c, d, sizeof(d));
}

} // namespace volt::sim

void __syncthreads() { volt::sim::syncBlock(); }
