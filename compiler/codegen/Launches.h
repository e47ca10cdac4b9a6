//===- Launches.h - how each plan op runs on the GPU ------------*- C++ -*-===//
//
// For one op of a step program and the kernel variants kernel selection
// chose for it, the launches the cuda backend runs: which kernel (a
// template instantiated with this op's shapes), the grid as a function of
// the step's token and sequence counts, the block size, dynamic shared
// memory, and the argument list in the order the template's entry point
// declares it. This is the one place that knows both the plan's operand
// order per OpKind (runtime/schema/plan.fbs) and each template's signature.
//
// Plain structs in and out: the vexec adapter (PlanKernels.h) and the
// tests fill them; nothing here sees MLIR. An op's params are the plan's
// typed params table of its kind (flatc's object API of ops.fbs, generated
// from runtime/schema/Ops.def).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/BuildKernels.h"
#include "compiler/codegen/KernelSource.h"
#include "dialects/Transforms/KernelRules.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace volt::codegen {

/// Where an operand lives (plan.fbs). A Workspace operand's index is a
/// byte offset into the rank's kernel workspace; a Cache operand's counts
/// the rank's cache layers.
using OperandKind = plan::OperandKind;

/// One operand of an op, with the facts its launches depend on.
struct OperandInfo {
  OperandKind kind = OperandKind::Arena;
  uint32_t index = 0;
  /// Arena buffers: FP32 elements (else FP16 or I32), and one row per
  /// logits row rather than per token (what follows GatherRows: R rows, R =
  /// S unless a speculative verify step asks for draft rows).
  bool f32 = false;
  bool perRow = false;
  /// Weights: logical shape, rows of each fused part, global scales
  /// (experts x parts), NVFP4 or dense FP16.
  std::vector<int64_t> shape;
  std::vector<uint32_t> partRows;
  std::vector<float> globalScales;
  bool nvfp4 = false;
  /// FP8 E4M3 bytes with a scale per row (WeightLayout Fp8RowScaled).
  bool fp8 = false;
};

struct OpInfo {
  plan::OpKind kind = plan::OpKind::Embedding;
  /// Where the op comes from, for messages.
  std::string name;
  std::vector<OperandInfo> operands;
  /// The params table of `kind` (planLaunches refuses another).
  plan::OpParamsUnion params;
};

/// What the params of a GEMM kind (Linear, QLinear, MoeGroupedQLinear,
/// MoeGroupedLinear) say, in one shape: K, N, the SiluMul epilogue, an
/// FP32 output, and for the grouped kinds the experts, k and whether the
/// input rows are tokens.
struct GemmParams {
  int64_t k = 0, n = 0;
  bool silu = false, outF32 = false;
  int64_t experts = 0, topK = 0;
  bool gatherTokens = false;
};

/// The GEMM params of `op`; an error for other kinds or params of another
/// kind.
Result<GemmParams> gemmParams(const OpInfo &op);

/// One kernel variant as kernel selection recorded it.
struct Variant {
  int64_t maxTokens = 0;
  std::string kernel;
  std::map<std::string, int64_t> config;
};

/// Step-program facts launches need besides the op.
struct ProgramInfo {
  /// KV cache geometry of one layer (the cuda backend stores each layer's
  /// K blocks, then its V blocks).
  uint32_t kvBlocks = 0, kvBlockSize = 0, kvHeads = 0, headDim = 0;
  uint32_t maxBlocksPerSeq = 0;
  uint32_t maxNumBatchedTokens = 0;
  /// Rank r's first vocabulary row is r * vocabRows for vocab-parallel
  /// embeddings; launches are planned per rank.
  uint32_t rank = 0;
  /// The rank's kernel workspace (vexec.memory's workspace_bytes): scratch
  /// that launches may use, its contents undefined between ops.
  uint64_t workspaceBytes = 0;

  uint64_t kvLayerBytes() const { return uint64_t{kvBlocks} * kvBlockSize * kvHeads * headDim * 2; }
};

/// ceil((perToken * T + perSeq * S + perRow * R + fixed) / divisor), as
/// plan.GridDim.
struct GridRule {
  uint32_t perToken = 0, perSeq = 0, fixed = 1, divisor = 1, perRow = 0;

  static GridRule tokens(uint32_t perBlock = 1) { return {1, 0, 0, perBlock}; }
  static GridRule rows(uint32_t perBlock = 1) { return {0, 0, 0, perBlock, 1}; }
  static GridRule one() { return {0, 0, 1, 1}; }
  uint64_t at(uint64_t t, uint64_t s, uint64_t r) const {
    return (perToken * t + perSeq * s + perRow * r + fixed + divisor - 1) / divisor;
  }
  /// A step of one logits row per sequence (R = S).
  uint64_t at(uint64_t t, uint64_t s) const { return at(t, s, s); }
};

/// plan.Arg.
struct LaunchArg {
  enum class Kind : uint8_t {
    Pointer = 0,
    I32 = 1,
    F32 = 2,
    TokenCount = 3,
    SeqCount = 4,
    RowCount = 5
  };
  Kind kind = Kind::I32;
  OperandKind operandKind = OperandKind::Arena;
  uint32_t operandIndex = 0;
  uint64_t offset = 0;
  int32_t i32 = 0;
  float f32 = 0;

  static LaunchArg pointer(const OperandInfo &o, uint64_t offset = 0);
  /// A pointer `offset` bytes into the kernel workspace.
  static LaunchArg workspace(uint32_t offset);
  static LaunchArg i32Value(int32_t v);
  static LaunchArg f32Value(float v);
  static LaunchArg tokenCount();
  static LaunchArg seqCount();
  static LaunchArg rowCount();
};

struct PlannedLaunch {
  uint32_t maxTokens = 0;
  /// Index into the registry's requests.
  size_t kernel = 0;
  GridRule grid[3] = {GridRule::one(), GridRule::one(), GridRule::one()};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<LaunchArg> args;
};

/// The distinct kernels a program needs, in first-use order.
class KernelRegistry {
public:
  /// The index of `request`, added when new.
  size_t add(const KernelRequest &request);
  const std::vector<KernelRequest> &requests() const { return requests_; }

private:
  std::vector<KernelRequest> requests_;
  std::map<std::string, size_t> byKey_;
};

/// The launches of `op` for its `variants` (sorted by maxTokens), adding
/// their kernels to `registry`. Collectives (AllReduce, AllGather) have no
/// launches: the backend runs them with NCCL. An op whose operands or
/// shapes a template cannot serve is an error naming the op.
Result<std::vector<PlannedLaunch>> planLaunches(const OpInfo &op,
                                                const std::vector<Variant> &variants,
                                                const ProgramInfo &program,
                                                const TargetInfo &target, KernelRegistry &registry);

/// Split-K attention's rule, shared with memory planning.
using kernels::AttentionSplit;
using kernels::attentionSplit;
using kernels::kMaxAttentionSplits;

/// The tensor-core attention's shape rule (dialects/Transforms/KernelRules.h).
using kernels::kTiledAttentionMaxHeadDim;
using kernels::TiledAttentionShape;
using kernels::tiledAttentionShape;

/// The chunked Gated DeltaNet kernel's shape rule.
using kernels::GatedDeltaChunkedShape;
using kernels::gatedDeltaChunkedShape;
using kernels::kGatedDeltaChunk;
using kernels::kGatedDeltaChunkedThreads;

/// Where the row scales of an FP8 weight entry start in its pack entry
/// (after the E4M3 bytes, aligned to 256 bytes).
uint64_t fp8ScalesOffset(const std::vector<int64_t> &shape);

/// Where the block scales of an NVFP4 weight entry start in its pack entry
/// (compiler/pack: the packed elements, aligned to 256 bytes).
uint64_t nvfp4ScalesOffset(const std::vector<int64_t> &shape);
/// Where an NVFP4 MoE weight entry's f32 epilogue scales start (after the
/// block scales, aligned; compiler/pack/WeightPacker.h).
uint64_t nvfp4EpilogueOffset(const std::vector<int64_t> &shape);

} // namespace volt::codegen
