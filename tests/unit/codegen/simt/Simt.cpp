//===- Simt.cpp - the fiber scheduler behind Simt.h -----------------------===//
//
// Every thread of a block is a fiber with its own stack, started once per
// launch: it runs the kernel for each block in turn (between blocks it
// waits, suspended, for the scheduler to set the next block up). A fiber
// that waits on a barrier (__syncthreads, a warp collective) switches
// straight to the next thread that can run; only when none can does it
// return to the scheduler, which then starts the next block or reports the
// deadlock. A kernel's barriers and warp collectives switch fibers millions
// of times per launch, so on x86-64 the switch is a dozen instructions of
// our own (the callee-saved registers and the stack pointer). Measured on
// the longest emulated test (EngineOverSimPreempting, a hybrid plan with
// preemption, 2026-12-04): swapcontext, which makes a system call per
// switch for the signal mask, 75 s; _setjmp/_longjmp by way of the
// scheduler 26 s; this switch, straight to the next thread, 11 s.
// Elsewhere, and under AddressSanitizer (which follows swapcontext's stack
// switches, not ours), fibers switch with swapcontext; a test binary of
// its own keeps that path checked.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/simt/Simt.h"

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
#define VOLT_SIMT_OWN_SWITCH 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VOLT_SIMT_OWN_SWITCH 0
#endif
#endif
#if !defined(VOLT_SIMT_OWN_SWITCH)
#if defined(__x86_64__)
#define VOLT_SIMT_OWN_SWITCH 1
#else
#define VOLT_SIMT_OWN_SWITCH 0
#endif
#endif

#if VOLT_SIMT_OWN_SWITCH
// voltSimtSwitch(save, load): pushes the System V callee-saved registers on
// the current stack, stores the stack pointer in *save, takes `load` as the
// stack pointer and pops the same registers from it, returning into the
// other fiber. voltSimtStart is where a new fiber's first switch returns
// to: it calls r13(r12), which never returns.
extern "C" void voltSimtSwitch(void **save, void *load);
extern "C" void voltSimtStart();
asm(R"(
  .text
  .p2align 4
  .globl voltSimtSwitch
  .hidden voltSimtSwitch
  .type voltSimtSwitch, @function
voltSimtSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size voltSimtSwitch, .-voltSimtSwitch

  .p2align 4
  .globl voltSimtStart
  .hidden voltSimtStart
  .type voltSimtStart, @function
voltSimtStart:
  movl %r12d, %edi
  callq *%r13
  ud2
  .size voltSimtStart, .-voltSimtStart
)");

struct Context {
  void *sp = nullptr;
};

void switchContext(Context &from, Context &to) { voltSimtSwitch(&from.sp, to.sp); }

/// Prepares `context` so that the first switch to it calls entry(arg) on
/// `stack`: the registers voltSimtSwitch pops, then voltSimtStart as the
/// return address, placed so that entry starts with the stack aligned as
/// after a call.
void startContext(Context &context, char *stack, size_t bytes, void (*entry)(int), int arg,
                  Context & /*scheduler*/) {
  auto top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t{15};
  auto *slots = reinterpret_cast<uint64_t *>(top - 72);
  // r15, r14, r13, r12, rbx, rbp, return address, (padding)
  slots[0] = 0;
  slots[1] = 0;
  slots[2] = reinterpret_cast<uint64_t>(entry);
  slots[3] = static_cast<uint64_t>(static_cast<uint32_t>(arg));
  slots[4] = 0;
  slots[5] = 0;
  slots[6] = reinterpret_cast<uint64_t>(&voltSimtStart);
  context.sp = slots;
}
#else
struct Context {
  ucontext_t context;
};

void switchContext(Context &from, Context &to) { swapcontext(&from.context, &to.context); }

void startContext(Context &context, char *stack, size_t bytes, void (*entry)(int), int arg,
                  Context &scheduler) {
  getcontext(&context.context);
  context.context.uc_stack.ss_sp = stack;
  context.context.uc_stack.ss_size = bytes;
  context.context.uc_link = &scheduler.context;
  makecontext(&context.context, reinterpret_cast<void (*)()>(entry), 1, arg);
}
#endif

struct Barrier {
  int expected = 0;
  int arrived = 0;
  uint64_t generation = 0;
};

struct Fiber {
  Context context;
  char *stack = nullptr;
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

/// One mma.m8n8k4 of a warp: every lane's operands, converted to FP32 as
/// they arrive, and the results, computed for the whole warp by the first
/// lane that resumes after the barrier (each operand converted once, not
/// once per product).
struct WarpMma {
  struct Lane {
    float a[4], b[4];
    float c[8];
  };
  std::array<Lane, 32> lanes;
  bool computed = false;
};

/// One warp collective's values, and which collective each lane wrote last
/// into this buffer: the lanes that take part in collective n are those
/// whose round is n (a lane that has exited has an older one).
struct WarpValues {
  std::array<uint64_t, 32> values{};
  std::array<unsigned, 32> rounds{};
  WarpValues() { rounds.fill(~0u); }
};

struct Block {
  std::vector<Fiber> fibers;
  Context scheduler;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<WarpValues> exchange[2];
  std::vector<WarpMma> mma[2];
  std::vector<uint8_t> shared;
  const std::function<void()> *kernel = nullptr;
  unsigned current = 0;
};

Block *g = nullptr;

} // namespace

unsigned currentLane = 0;

namespace {

/// Fiber stacks, kept from one launch to the next (a launch of 256 threads
/// would otherwise map 16 MiB and fault its pages in again).
std::vector<std::unique_ptr<char[]>> &stackPool() {
  static std::vector<std::unique_ptr<char[]>> pool;
  return pool;
}

Fiber &self() { return g->fibers[g->current]; }
unsigned warpOf(const Fiber &f) { return f.linear / 32; }

void release(Barrier &b) {
  b.arrived = 0;
  ++b.generation;
}

bool runnable(const Fiber &f) {
  return !f.done && !(f.waiting && f.waiting->generation == f.waitGeneration);
}

/// Makes fiber `i` the current thread and switches to it from `from`.
void switchTo(Context &from, unsigned i) {
  Fiber &next = g->fibers[i];
  next.waiting = nullptr;
  g->current = i;
  threadIdx = next.index;
  currentLane = next.linear % 32;
  switchContext(from, next.context);
}

/// Switches from fiber `f`, which waits or has ended, to the next thread
/// that can run (in turn after it), or to the scheduler when none can;
/// returns when something switches back to `f`.
[[gnu::noinline]] void suspend(Fiber &f) {
  const auto threads = static_cast<unsigned>(g->fibers.size());
  for (unsigned k = 1, i = g->current; k < threads; ++k) {
    if (++i == threads)
      i = 0;
    if (runnable(g->fibers[i])) {
      switchTo(f.context, i);
      return;
    }
  }
  switchContext(f.context, g->scheduler);
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
}

/// A fiber's life: the kernel for each block of the launch in turn.
void fiberMain(int index) {
  for (;;) {
    (*g->kernel)();
    Fiber &f = g->fibers[static_cast<size_t>(index)];
    finish(f);
    suspend(f);
  }
}

/// Runs every thread of one block until none can run: to completion, or to
/// a deadlock, which aborts.
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
  for (unsigned i = 0; i < threads; ++i) {
    Fiber &f = state.fibers[i];
    f.done = false;
    f.waiting = nullptr;
    f.linear = i;
    f.exchanges = f.mmas = 0;
    f.index = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
    state.warps[i / 32].expected++;
  }
  switchTo(state.scheduler, 0);
  for (const Fiber &f : state.fibers) {
    if (f.done)
      continue;
    std::fprintf(stderr,
                 "simt: block (%u, %u, %u) deadlocked: threads wait on barriers that "
                 "others never reach (a barrier in divergent code?)\n",
                 index.x, index.y, index.z);
    std::abort();
  }
}

} // namespace

void launch(dim3 grid, dim3 block, size_t dynamicSharedBytes, const std::function<void()> &kernel) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || grid.x * grid.y * grid.z == 0)
    return;
  Block state;
  state.kernel = &kernel;
  state.fibers.resize(threads);
  // A launch from inside a kernel's thread would find the pool's stacks in
  // use: it gets stacks of its own.
  std::vector<std::unique_ptr<char[]>> own;
  std::vector<std::unique_ptr<char[]>> &stacks = g ? own : stackPool();
  while (stacks.size() < threads)
    stacks.emplace_back(new char[kStackBytes]);
  for (unsigned i = 0; i < threads; ++i) {
    Fiber &f = state.fibers[i];
    f.stack = stacks[i].get();
    startContext(f.context, f.stack, kStackBytes, &fiberMain, static_cast<int>(i),
                 state.scheduler);
  }
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


void syncBlock() { arrive(g->block); }

/// Publishes this lane's `value` to its warp and waits for every live lane;
/// returns the warp's values, and the round that marks the lanes that took
/// part.
const WarpValues &publish(uint64_t value, unsigned &round) {
  Fiber &f = self();
  const unsigned w = warpOf(f), l = f.linear % 32;
  round = f.exchanges++;
  WarpValues &warp = g->exchange[round & 1][w];
  warp.values[l] = value;
  warp.rounds[l] = round;
  arrive(g->warps[w]);
  return warp;
}

uint64_t exchange(uint64_t value, unsigned source) {
  unsigned round;
  return publish(value, round).values[source];
}

uint32_t ballot(bool value) {
  unsigned round;
  const WarpValues &warp = publish(value, round);
  uint32_t mask = 0;
  for (unsigned i = 0; i < 32; ++i)
    if (warp.rounds[i] == round && warp.values[i])
      mask |= 1u << i;
  return mask;
}

uint32_t match(int value) {
  unsigned round;
  const WarpValues &warp = publish(static_cast<uint32_t>(value), round);
  uint32_t mask = 0;
  for (unsigned i = 0; i < 32; ++i)
    if (warp.rounds[i] == round && warp.values[i] == static_cast<uint32_t>(value))
      mask |= 1u << i;
  return mask;
}

void mma(float (&c)[8], uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
  Fiber &f = self();
  const unsigned w = warpOf(f), l = f.linear % 32;
  WarpMma &warp = g->mma[f.mmas++ & 1][w];
  WarpMma::Lane &mine = warp.lanes[l];
  auto half = [](uint32_t word, int which) {
    return halfToFloat(static_cast<uint16_t>(which ? word >> 16 : word & 0xFFFF));
  };
  for (int k = 0; k < 2; ++k) {
    mine.a[k] = half(a0, k);
    mine.a[2 + k] = half(a1, k);
    mine.b[k] = half(b0, k);
    mine.b[2 + k] = half(b1, k);
  }
  std::memcpy(mine.c, c, sizeof(c));
  // Every lane writes before the barrier opens and reads after it; this
  // buffer is written again only after every lane has passed the next
  // barrier, that is, has read its results.
  warp.computed = false;
  arrive(g->warps[w]);
  if (!warp.computed) {
    warp.computed = true;
    // Each quad pair q multiplies its own 8x4 A by 4x8 B: row (and column)
    // r of it sits in lane 4q + r for r < 4 and 16 + 4q + r - 4 above.
    // Lane l holds D's rows (l & 1) + 4 (l >> 4) + {0, 2} and columns
    // (l & 2) + {0, 1, 4, 5}, its i-th value at row +(i & 2), column
    // +(i & 1) + (i & 4).
    for (unsigned q = 0; q < 4; ++q) {
      auto laneOf = [&](unsigned r) { return r < 4 ? 4 * q + r : 16 + 4 * q + (r - 4); };
      float a[8][4], b[4][8], d[8][8];
      for (unsigned r = 0; r < 8; ++r)
        for (unsigned k = 0; k < 4; ++k) {
          a[r][k] = warp.lanes[laneOf(r)].a[k];
          b[k][r] = warp.lanes[laneOf(r)].b[k];
        }
      for (unsigned r = 0; r < 8; ++r) {
        const unsigned lane = laneOf(r);
        for (unsigned i = 0; i < 8; ++i) {
          const unsigned row = (lane & 1) + ((lane >> 4) << 2) + (i & 2);
          const unsigned col = (lane & 2) + (i & 1) + (i & 4);
          d[row][col] = warp.lanes[lane].c[i];
        }
      }
      // Products of FP16 values are exact in FP32; added in k order.
      for (unsigned r = 0; r < 8; ++r)
        for (unsigned k = 0; k < 4; ++k)
          for (unsigned col = 0; col < 8; ++col)
            d[r][col] += a[r][k] * b[k][col];
      for (unsigned r = 0; r < 8; ++r) {
        const unsigned lane = laneOf(r);
        for (unsigned i = 0; i < 8; ++i) {
          const unsigned row = (lane & 1) + ((lane >> 4) << 2) + (i & 2);
          const unsigned col = (lane & 2) + (i & 1) + (i & 4);
          warp.lanes[lane].c[i] = d[row][col];
        }
      }
    }
  }
  std::memcpy(c, mine.c, sizeof(c));
}

} // namespace volt::sim

void __syncthreads() { volt::sim::syncBlock(); }
