//===- FakeCudaHarness.h - a CudaBackend on FakeCuda with a real plan -*- C++ -*-===//
//
// Compiles a synthetic model for a V100 (tests/e2e/runtime/PlanFixture.h:
// volt-mkmodel's writer and voltc's compile), creates a CudaBackend on a
// FakeCuda whose kernels a PlanEmulator checks and emulates, and builds
// step batches whose logits the emulator predicts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaBackend.h"
#include "runtime/plan/PlanFile.h"
#include "tests/e2e/runtime/PlanFixture.h"
#include "tests/unit/cuda/FakeCuda.h"
#include "tests/unit/cuda/PlanEmulator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace volt::cuda::testing {

/// A plan compiled for v100-pcie-16gb (64 batched tokens).
inline std::filesystem::path gpuPlan(int tensorParallelSize = 1, int maxNumSeqs = 8) {
  volt::testing::PlanRequest r;
  r.target = "v100-pcie-16gb";
  r.tensorParallelSize = tensorParallelSize;
  r.maxNumSeqs = maxNumSeqs;
  r.maxNumBatchedTokens = 64;
  r.extra = "gpu_memory_utilization: 0.1\n";
  return volt::testing::compilePlan(r);
}

/// One step's arrays, and the StepBatch viewing them.
struct Step {
  int32_t width = 0;
  std::vector<int32_t> tokens, positions, slots, seqStarts{0}, contextLens, blockTables, rows;

  /// A sequence whose step holds `tokens` (ending at position `context - 1`),
  /// its KV cache in block `block`.
  Step &add(const std::vector<int32_t> &ids, int32_t context, int32_t block,
            int32_t blockSize = 16) {
    const int32_t first = context - static_cast<int32_t>(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const int32_t position = first + static_cast<int32_t>(i);
      tokens.push_back(ids[i]);
      positions.push_back(position);
      slots.push_back(block * blockSize + position % blockSize);
    }
    seqStarts.push_back(static_cast<int32_t>(tokens.size()));
    contextLens.push_back(context);
    for (int32_t b = 0; b < width; ++b)
      blockTables.push_back(b == 0 ? block : 0);
    rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
    return *this;
  }
  int32_t seqs() const { return static_cast<int32_t>(contextLens.size()); }
  engine::StepBatch batch() const {
    engine::StepBatch b;
    b.numTokens = static_cast<int32_t>(tokens.size());
    b.numSeqs = seqs();
    b.maxBlocksPerSeq = width;
    b.tokens = tokens;
    b.positions = positions;
    b.slotMapping = slots;
    b.seqStarts = seqStarts;
    b.contextLens = contextLens;
    b.blockTables = blockTables;
    b.logitsRows = rows;
    return b;
  }
};

/// A backend on a fake: declared in the order that tears the backend down
/// before the fake checks for leaks.
struct Harness {
  explicit Harness(int tensorParallelSize = 1, int maxNumSeqs = 8) : fake(tensorParallelSize) {
    auto loaded = plan::LoadedPlan::load(gpuPlan(tensorParallelSize, maxNumSeqs));
    EXPECT_TRUE(loaded.ok()) << loaded.message();
    if (loaded.ok())
      plan = std::move(*loaded);
  }

  /// Options using the fake, logging to `log`.
  CudaBackendOptions options() {
    CudaBackendOptions o;
    o.driver = fake.driver();
    o.nccl = fake.nccl();
    o.log = [this](const std::string &line) { log.push_back(line); };
    return o;
  }
  /// Creates the backend (and the emulator) with `o`; false on failure,
  /// with `error` set.
  bool create(const CudaBackendOptions &o) {
    emulator = std::make_unique<PlanEmulator>(*plan, fake);
    emulator->install();
    auto b = CudaBackend::create(*plan, o);
    if (!b.ok()) {
      error = b.message();
      return false;
    }
    backend = std::move(*b);
    return true;
  }
  bool create() { return create(options()); }

  uint32_t vocab() const { return plan->plan().model()->vocab_size(); }
  int32_t width() const {
    return static_cast<int32_t>(plan->plan().limits()->max_blocks_per_seq());
  }
  /// A decode step of `seqs` sequences; `salt` varies the tokens.
  Step decode(int seqs, int salt = 0) const {
    Step s;
    s.width = width();
    for (int i = 0; i < seqs; ++i)
      s.add({static_cast<int32_t>((37 * i + 11 * salt + 5) % vocab())}, 3 + i % 13, 1 + i);
    return s;
  }
  /// Runs `step` and checks its logits against the emulation.
  void runAndCheck(const Step &step) {
    std::vector<float> logits(step.rows.size() * vocab());
    Status s = backend->runStep(step.batch(), logits);
    ASSERT_TRUE(s.ok()) << s.message();
    expectLogits(step, logits);
  }
  void expectLogits(const Step &step, const std::vector<float> &logits) const {
    auto expected = emulator->expectedLogits(step.tokens, step.rows);
    ASSERT_EQ(logits.size(), expected.size());
    for (size_t i = 0; i < logits.size(); ++i)
      ASSERT_EQ(logits[i], expected[i]) << "row " << i / vocab() << ", column " << i % vocab();
  }

  FakeCuda fake;
  std::unique_ptr<plan::LoadedPlan> plan;
  std::unique_ptr<PlanEmulator> emulator;
  std::vector<std::string> log;
  std::string error;
  std::unique_ptr<CudaBackend> backend;
};

} // namespace volt::cuda::testing
