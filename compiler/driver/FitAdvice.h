//===- FitAdvice.h - which spec changes make a deployment fit -*- C++ -*-===//
//
// When a deployment cannot hold one max_model_len sequence, voltc says what
// would make it fit. Every change it lists is one that was re-planned: the
// whole memory plan (weights per GPU, activation arena, workspaces, state,
// KV cache) computed again with that spec value, and found to fit. Single
// changes first — tensor_parallel_size, max_model_len, max_num_batched_tokens,
// max_num_seqs, gpu_memory_utilization, a SKU of the same architecture with
// more memory — and, when none of them is enough, pairs (a larger
// tensor_parallel_size or SKU with the longest max_model_len that then fits).
//
// The planner is a callback so that this logic needs no MLIR and its tests
// can plan with arithmetic; voltc's planner runs the compiler's pipeline to
// the memory phase (compiler/driver/Compile.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/spec/DeploySpec.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace volt::driver {

/// One memory plan's outcome, fitting or not.
struct PlannedMemory {
  bool fits = false;
  /// The memory budget per GPU, and what is left of it for the KV cache
  /// after the CUDA context, NCCL, weights, arena, workspaces and state
  /// (negative when those alone exceed the budget).
  int64_t budgetBytes = 0;
  int64_t kvBudgetBytes = 0;
  int64_t kvBlockBytes = 0;
  int64_t kvBlockSize = 0;
  /// Blocks one max_model_len sequence needs.
  int64_t blocksPerSeq = 0;
  /// The recurrent state of max_num_seqs sequences, and the weights, per GPU.
  int64_t stateBytes = 0;
  int64_t weightBytes = 0;
};

/// Plans `spec` (whose max_model_len is set); an error when the spec is not
/// valid for the model (e.g. a tensor_parallel_size that does not divide
/// its heads), which removes that candidate.
using MemoryPlanner = std::function<Result<PlannedMemory>(const spec::DeploySpec &spec)>;

/// A change of one or two spec keys that was re-planned and fits.
struct FitChange {
  /// (key, value as written in YAML), in the order shown.
  std::vector<std::pair<std::string, std::string>> keys;
  PlannedMemory plan;
  int64_t maxModelLen = 0;
};

struct FitOptions {
  /// SKUs a `target` change may name: same architecture, more memory.
  /// Empty: the built-in SKUs.
  std::vector<spec::Sku> skus;
};

/// The changes that make `spec` (which did not fit, as `failed` says) fit.
/// Single changes when there are any, otherwise pairs; at most one change
/// per key (the mildest: smallest tensor_parallel_size or SKU, longest
/// max_model_len, largest max_num_batched_tokens or max_num_seqs, smallest
/// gpu_memory_utilization).
std::vector<FitChange> findFits(const spec::DeploySpec &spec, const PlannedMemory &failed,
                                const MemoryPlanner &plan, const FitOptions &options = {});

/// "what would make it fit (each change re-planned):" and one line per
/// change with the KV cache it leaves, or the sentence saying nothing does.
std::string formatFitAdvice(const spec::DeploySpec &spec, const std::vector<FitChange> &fits);

} // namespace volt::driver
