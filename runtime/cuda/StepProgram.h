//===- StepProgram.h - a rank's step as device operations ------*- C++ -*-===//
//
// A rank's step program (plan.fbs: Rank.ops) evaluated for one token and
// sequence count: every kernel launch with its grid, block and parameter
// buffer, every collective with its element count, every strided copy. It
// is built once and then either issued on the rank's stream (a prefill or
// mixed step, or any step when graphs are off) or captured into CUDA
// graphs (a decode step's bucket, built at the bucket size) and replayed.
//
// A captured step keeps NCCL outside its graphs: it is one graph per run of
// launches between two collectives, and the collectives are issued between
// the graph launches. NCCL documents that capturing its operations with
// several GPUs per process may deadlock, and that whether an operation is
// captured must agree across ranks and with its uncaptured uses of the same
// communicator, which prefill steps make; a tensor_parallel_size 1 plan has
// no collective and is a single graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/cuda/StepInputs.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include <array>
#include <span>
#include <string>
#include <vector>

namespace volt::cuda {

/// What a rank's program addresses on its device.
struct RankView {
  const plan::Rank *plan = nullptr;
  /// tensor_parallel_size.
  uint32_t ranks = 1;
  /// The rank's weights, arena (+ workspace), cache region (Rank.caches),
  /// logits and all-gather staging.
  CUdeviceptr weights = 0, arena = 0, caches = 0, logits = 0, gather = 0;
  /// The hidden rows a draft program reads (StepOutput.Hidden; 0 without one).
  CUdeviceptr hidden = 0;
  std::array<CUdeviceptr, kStepInputCount> inputs{};
  /// The loaded function of each plan kernel.
  std::span<const CUfunction> functions;
};

/// One device operation of a step.
struct StepAction {
  enum class Kind : uint8_t { Launch, AllReduce, AllGather, Copy2D };
  Kind kind = Kind::Launch;
  /// The plan op's name, for errors.
  std::string op;
  // Launch.
  CUfunction function = nullptr;
  std::array<unsigned, 3> grid{}, block{};
  unsigned sharedBytes = 0;
  std::vector<uint8_t> params;
  // AllReduce (in place at `src`) and AllGather (`src` to `dst`).
  CUdeviceptr src = 0, dst = 0;
  uint64_t count = 0;
  int ncclType = 0;
  // Copy2D.
  CudaMemcpy2D copy;

  bool isCollective() const { return kind == Kind::AllReduce || kind == Kind::AllGather; }
};

/// The rank's program for a step of `tokens` tokens, `seqs` sequences and
/// `logitsRows` logits rows (seqs, or more in a speculative verify step).
/// Launches whose grid is empty at that size are left out.
Result<std::vector<StepAction>> buildStep(const RankView &rank, uint32_t tokens, uint32_t seqs,
                                          uint32_t logitsRows,
                                          plan::Program program = plan::Program::Target);

/// Where a rank's actions are issued.
struct StreamTarget {
  CudaDriver *driver = nullptr;
  /// Null for a single-rank plan (which has no collective).
  Nccl *nccl = nullptr;
  NcclComm comm = nullptr;
  CUstream stream = nullptr;
  /// "GPU 0", prefixed to errors.
  std::string label;
};

/// Issues `actions` in order on the target's stream.
Status issueActions(const StreamTarget &target, std::span<const StepAction> actions);

/// A step captured for replay: a graph per run of non-collective actions,
/// the collectives between them issued directly.
class CapturedStep {
public:
  /// Captures `actions` on the target's stream (thread-local capture mode,
  /// so that the ranks capture concurrently) and instantiates the graphs.
  /// Nothing runs on the device. On failure nothing is left behind: the
  /// capture is ended, every graph made so far destroyed, and the error
  /// names the driver call and its code.
  static Result<CapturedStep> capture(const StreamTarget &target, std::vector<StepAction> actions);

  CapturedStep() = default;
  CapturedStep(CapturedStep &&other) noexcept;
  CapturedStep &operator=(CapturedStep &&other) noexcept;
  CapturedStep(const CapturedStep &) = delete;
  CapturedStep &operator=(const CapturedStep &) = delete;
  ~CapturedStep();

  /// Launches the graphs, and issues the collectives between them, on the
  /// target's stream.
  Status replay(const StreamTarget &target) const;
  /// Instantiated graphs (collectives + 1 at most).
  size_t graphCount() const;

private:
  struct Segment {
    CUgraphExec graph = nullptr;
    /// Used when `graph` is null.
    StepAction collective;
  };
  void release();

  CudaDriver *driver_ = nullptr;
  std::vector<Segment> segments_;
};

} // namespace volt::cuda
