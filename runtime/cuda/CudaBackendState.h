//===- CudaBackendState.h - what the cuda backend keeps ---------*- C++ -*-===//
//
// Private to runtime/cuda: the state CudaBackend.cpp (set-up, tear-down)
// and CudaSteps.cpp (running steps) share.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/cuda/RankThreads.h"
#include "runtime/cuda/StepInputs.h"
#include "runtime/cuda/StepProgram.h"

#include <array>
#include <deque>
#include <memory>
#include <optional>

namespace volt::cuda {

/// Steps in flight at most: the staging buffers are double-buffered.
inline constexpr uint32_t kStagingSlots = 2;

/// What becomes of a bucket's decode steps.
enum class BucketState : uint8_t {
  /// Not seen yet: the next step captures it.
  Untried,
  Captured,
  /// Its capture failed on some rank: direct launches, unpadded.
  Failed,
};

/// Where the sampler's arrays sit in rank 0's candidates allocation and
/// in its pinned staging (the same offsets): the step's temperatures, in,
/// and its candidates, out, each with room for max_num_seqs sequences and
/// 256-byte aligned.
struct CandidateLayout {
  uint64_t temperatures = 0, ids = 0, values = 0, stats = 0, totalBytes = 0;

  static CandidateLayout forLimits(uint64_t maxSeqs, uint64_t k) {
    auto align = [](uint64_t v) { return (v + 255) / 256 * 256; };
    CandidateLayout l;
    l.ids = align(maxSeqs * 4);
    l.values = l.ids + align(maxSeqs * k * 4);
    l.stats = l.values + align(maxSeqs * k * 4);
    l.totalBytes = l.stats + align(maxSeqs * 3 * 4);
    return l;
  }
};

struct CudaBackend::Shared {
  std::shared_ptr<CudaDriver> driver;
  std::shared_ptr<Nccl> nccl;
  uint32_t planSm = 0;
  uint32_t vocab = 0;
  std::function<void(const std::string &)> log;

  /// Plan.sampler: candidates per sequence (0: the plan has no sampler),
  /// its kernel and block size.
  uint32_t samplerK = 0, samplerKernel = 0, samplerThreads = 0;
  CandidateLayout candidates;
  /// The last step ran for candidates and its logits are still on rank
  /// 0's device, for fetchRows: set when it finishes, cleared when the
  /// next step is submitted.
  bool rowsKept = false;
  uint32_t rowsSeqs = 0;
  /// Hidden rows the last submitted step leaves (plans with a draft
  /// program): a draft step reads only these.
  int32_t hiddenRowsLeft = 0;

  /// Rank r > 0 enqueues its part of every step on thread r.
  std::unique_ptr<RankThreads> rankThreads;

  /// Empty when graphs are off.
  std::vector<uint32_t> buckets;
  /// Per graph set: buckets.size() entries for steps that return logits,
  /// then as many for steps that return candidates (whose graphs end with
  /// the sampler's launch on rank 0). A set is captured on its first use.
  std::vector<BucketState> bucketStates;
  GraphStats stats;

  /// Rows of logits per chunk, and chunks (events) per staging slot.
  uint64_t logitsChunkRows = 1;
  uint32_t logitsChunks = 1;

  struct InFlight {
    uint64_t ticket = 0;
    /// Logits rows (R; = S but in speculative verify steps), or sequences
    /// of a candidates step.
    uint32_t rows = 0;
    /// Submitted for candidates (runStepCandidates), not logits.
    bool candidates = false;
  };
  uint64_t nextTicket = 0;
  std::deque<InFlight> inFlight;

  /// The driver or NCCL failure that stopped the backend (empty: none). A
  /// step that fails part way leaves work queued on some ranks, among it
  /// collectives the other ranks will never join: every later step would
  /// pair its collectives with those, so none is run.
  std::string failure;
  /// success(), or the error saying the backend stopped.
  Status usable() const {
    if (failure.empty())
      return Status::success();
    return Error("the cuda backend stopped after an earlier failure (" + failure +
                 "); create it again");
  }
  /// Records `status`'s failure, if any, and returns it.
  Status stopOn(Status status) {
    if (!status.ok() && failure.empty())
      failure = status.message();
    return status;
  }
};

/// How one step runs on every rank.
struct CudaBackend::StepMode {
  enum Kind : uint8_t { Direct, Capture, Replay } kind = Direct;
  /// The bucket (Capture, Replay) and its index in Shared::buckets.
  uint32_t bucket = 0;
  size_t bucketIndex = 0;
  /// The step returns candidates: rank 0 runs the sampler after the step
  /// program and copies back candidates instead of logits.
  bool candidates = false;
  /// Index of the step's graphs in Rank::graphs and its state in
  /// Shared::bucketStates.
  size_t graphIndex = 0;
  /// The staging buffers used (ticket % kStagingSlots).
  uint32_t slot = 0;
  /// The target's program, or (runDraftStep) the draft program: always
  /// direct launches.
  plan::Program program = plan::Program::Target;
};

/// One rank's device, memory, kernels, staging and graphs.
struct CudaBackend::Rank {
  uint32_t index = 0;
  const plan::Rank *plan = nullptr;
  CUdevice device = 0;
  int deviceOrdinal = 0;
  std::string name;
  int computeCapability = 0;
  bool fromPtx = false;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr weights = 0, arena = 0, caches = 0, logits = 0, gather = 0;
  /// The hidden rows of a plan with a draft program (StepOutput.Hidden).
  CUdeviceptr hidden = 0;
  /// Rank 0 of a plan with a sampler: temperatures in, candidates out
  /// (Shared::candidates' layout).
  CUdeviceptr candidates = 0;
  /// The StepInput arrays, at layout.offset in one allocation.
  InputLayout layout;
  std::array<CUdeviceptr, kStepInputCount> inputs{};
  uint64_t allocated = 0;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;
  NcclComm comm = nullptr;
  std::vector<CUdeviceptr> allocations;

  /// Pinned staging, per slot: the inputs (every rank) and the logits
  /// (rank 0). An event marks when each slot's inputs are uploaded (so that
  /// the slot may be refilled), one per logits chunk when it is on the host,
  /// and one when the rank's step is done.
  std::array<int32_t *, kStagingSlots> stagedInputs{};
  std::array<float *, kStagingSlots> stagedLogits{};
  std::array<CUevent, kStagingSlots> inputsUploaded{}, stepDone{};
  std::array<bool, kStagingSlots> uploadPending{};
  std::array<std::vector<CUevent>, kStagingSlots> logitsReady;
  /// Rank 0 of a plan with a sampler, per slot: the temperatures and
  /// candidates in the candidates allocation's layout, and an event
  /// marking when the candidates are on the host.
  std::array<uint8_t *, kStagingSlots> stagedCandidates{};
  std::array<CUevent, kStagingSlots> candidatesReady{};
  std::vector<void *> hostAllocations;
  std::vector<CUevent> events;

  /// Per graph set and bucket (Shared::bucketStates' order), once captured.
  std::vector<std::optional<CapturedStep>> graphs;

  RankView view(uint32_t ranks) const {
    RankView v;
    v.plan = plan;
    v.ranks = ranks;
    v.weights = weights;
    v.arena = arena;
    v.caches = caches;
    v.logits = logits;
    v.gather = gather;
    v.hidden = hidden;
    v.inputs = inputs;
    v.functions = functions;
    return v;
  }
};

} // namespace volt::cuda
