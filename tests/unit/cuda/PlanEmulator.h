//===- PlanEmulator.h - a plan's launches checked and emulated on FakeCuda -*- C++ -*-===//
//
// FakeCuda runs launches without knowing their parameters; the plan says
// what each one is. Installed as the fake's onLaunch, this matches every
// launch that runs on a rank's device to the next op of the rank's step
// program (so launches must run in plan order), reads its parameter
// buffer as the plan's Arg list lays it out, and checks every pointer: it
// lies inside an allocation of that device, with room for the operand
// (a buffer's bytes, a weight's, a KV layer's K and V, the step's input
// arrays at the launch's token and sequence counts), and every operand of
// one kind implies the same base address (the arena, the weights, ...).
//
// Three ops are emulated, so that a step's logits are checked end to end:
// the Embedding notes where the tokens are, GatherRows where the logits
// rows are, and the LM head (the op writing the logits, or on a
// tensor-parallel plan the op whose output is all-gathered into them)
// writes, for each of the launch's S rows and each of its columns c,
//     1000 * tokens[rows[s]] + (7919 * (vocabStart + c)) % vocab,
// where vocabStart is the rank's first column of the vocabulary (the
// columns are permuted so that a row's largest logits are spread over
// the vocabulary and over the ranks). A wrong row, a wrong column, a
// wrong chunk or a stale input shows in the logits. The first attention
// op's inputs are recorded as it runs (`attention`).
//
// The plan's sampler (Plan.sampler: top_candidates, launched by the
// backend after the step program, not an op of it) is emulated by
// cpu::topCandidates over the device's logits and temperatures, its
// launches recorded (`sampler`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/PlanFile.h"
#include "tests/unit/cuda/FakeCuda.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace volt::cuda::testing {

/// The step inputs one attention launch read, as it ran.
struct SeenAttention {
  int device = 0;
  /// The launch's TokenCount and SeqCount arguments.
  int32_t tokens = 0, seqs = 0;
  std::vector<int32_t> positions, slots, seqStarts, contextLens, blockTables;
};

/// A sampler launch as it ran.
struct SeenSampler {
  int device = 0;
  bool fromGraph = false;
  /// Its grid.x and `seqs` argument, block.x, and the temperatures it read.
  uint32_t grid = 0, threads = 0;
  int32_t seqs = 0;
  std::vector<float> temperatures;
};

/// A launch as it ran: the op it served and the plan kernel it used.
struct SeenLaunch {
  int device = 0;
  size_t op = 0;
  uint32_t kernel = 0;
};

class PlanEmulator {
public:
  /// Rank r runs on device r.
  PlanEmulator(const plan::LoadedPlan &plan, FakeCuda &fake);
  /// Sets the fake's onLaunch.
  void install();

  /// The logits the emulated LM head gives for `tokens` and `rows`
  /// (S x vocab).
  std::vector<float> expectedLogits(const std::vector<int32_t> &tokens,
                                    const std::vector<int32_t> &rows) const;
  /// The emulated LM head's logit of `token`'s row at vocabulary `column`.
  float logit(int32_t token, uint64_t column) const;
  /// Kernel launches of one rank's step (ops with launches).
  size_t launchesPerStep(uint32_t rank) const;
  /// The elements each all-reduce of rank `rank` reduces in a step of
  /// `tokens` tokens and `seqs` sequences, in order.
  std::vector<uint64_t> allReduceCounts(uint32_t rank, uint64_t tokens, uint64_t seqs) const;

  std::vector<SeenAttention> attention;
  std::vector<SeenLaunch> launched;
  /// LM-head launches emulated, all ranks.
  size_t lmHeadLaunches = 0;
  std::vector<SeenSampler> sampler;

private:
  struct Arg {
    plan::ArgKind kind;
    plan::OperandKind operand;
    uint32_t index = 0;
    uint64_t offset = 0;
    /// Where it sits in the parameter buffer.
    size_t at = 0;
  };
  struct RankState {
    size_t nextOp = 0;
    uint64_t tokensAt = 0, rowsAt = 0;
    /// Each step input as the last launch reading it saw it.
    std::map<uint32_t, std::vector<int32_t>> inputs;
    /// Base address implied per operand kind (the KV cache per layer).
    std::map<std::pair<int, uint32_t>, uint64_t> bases;
  };
  void onLaunch(const FakeLaunch &launch);
  void runSampler(const FakeLaunch &launch);
  std::vector<Arg> layout(const plan::Launch &launch) const;
  uint64_t extent(uint32_t rank, const Arg &a, int64_t tokens, int64_t seqs, int64_t rows) const;

  const plan::LoadedPlan &plan_;
  FakeCuda &fake_;
  std::vector<RankState> ranks_;
  /// Per rank: the op index of the LM head.
  std::vector<size_t> lmHead_;
  uint32_t vocab_ = 0;
  /// Plan.sampler's kernel (-1: none) and k.
  int samplerKernel_ = -1;
  uint32_t samplerK_ = 0;
};

} // namespace volt::cuda::testing
