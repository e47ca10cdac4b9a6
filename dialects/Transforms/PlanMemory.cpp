//===- PlanMemory.cpp - the arena, the weights and the KV cache ----------===//
//
// Sizes every buffer at the largest step, places them in one arena by
// liveness, sizes the cache groups (dialects/Vexec/VexecPlan.h): the state
// groups hold max_num_seqs slots, and the paged KV group gets what is left
// of the memory budget. The result is the module attribute `vexec.memory`,
// which `voltc compile --emit=memory` prints and the plan records; a
// deployment that cannot hold one full-length sequence fails here, at
// compile time, with the arithmetic; the module keeps `vexec.shortfall` so
// that a driver can re-plan with other spec values and say which fit.
//
//===----------------------------------------------------------------------===//
#include "dialects/Transforms/KernelRules.h"
#include "dialects/Transforms/MemoryPlanner.h"
#include "dialects/Transforms/Passes.h"
#include "dialects/Vexec/VexecOps.h"
#include "dialects/Vexec/VexecPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace volt {
#define GEN_PASS_DEF_PLANMEMORY
#include "dialects/Transforms/Passes.h.inc"
} // namespace volt

using namespace mlir;
namespace vx = volt::vexec;

namespace {

int64_t intAttr(DictionaryAttr dict, StringRef name) {
  auto a = dict ? dict.getAs<IntegerAttr>(name) : IntegerAttr();
  return a ? a.getInt() : 0;
}

double floatAttr(DictionaryAttr dict, StringRef name) {
  auto a = dict ? dict.getAs<FloatAttr>(name) : FloatAttr();
  return a ? a.getValueAsDouble() : 0.0;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

/// Bytes of one weight entry in the pack: dense elements, NVFP4 packed
/// data plus block scales, or FP8 bytes plus row scales, aligned.
int64_t packedBytes(vx::WeightOp w) {
  int64_t elements = 1;
  for (int64_t d : w.getShape())
    elements *= d;
  if (w.getLayout() == "nvfp4")
    // MoE entries add the grouped GEMMs' f32 epilogue scales, one per
    // expert and fused part (compiler/pack/WeightPacker.h).
    return volt::memory::alignUp(elements / 2) + volt::memory::alignUp(elements / 16) +
           (w.getExperts() > 0 ? volt::memory::alignUp(4 * w.getExperts() *
                                                       static_cast<int64_t>(w.getPartRows().size()))
                               : 0);
  if (w.getLayout() == "fp8")
    // E4M3 bytes, then an f32 scale per row.
    return volt::memory::alignUp(elements) +
           volt::memory::alignUp(4 * elements / w.getShape().back());
  int64_t elem = w.getDtype().isF32() ? 4 : 2;
  return volt::memory::alignUp(elements * elem);
}

/// The kernel workspace one launch needs at the largest step: split-K
/// attention's records (dialects/Transforms/KernelRules.h), the most any of
/// its variants needs.
int64_t workspaceBytesOf(vx::LaunchOp launch, int64_t maxContext) {
  if (launch.getKind() != "Attention")
    return 0;
  DictionaryAttr params = launch.getParams();
  int64_t heads = intAttr(params, "num_heads"), headDim = intAttr(params, "head_dim");
  uint64_t bytes = 0;
  for (Attribute a : launch.getKernels())
    bytes = std::max(
        bytes, volt::kernels::attentionSplit(intAttr(dyn_cast<DictionaryAttr>(a), "split_k_tokens"),
                                             maxContext, heads, headDim)
                   .workspaceBytes);
  return static_cast<int64_t>(bytes);
}

struct PlanMemoryPass : volt::impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("step");
    auto deployment = module->getAttrOfType<DictionaryAttr>("volt.deployment");
    auto target = module->getAttrOfType<DictionaryAttr>("volt.target");
    if (!step || !deployment || !target) {
      module.emitError() << "memory planning needs a lowered @step and the module's "
                            "volt.deployment and volt.target attributes";
      return signalPassFailure();
    }
    int64_t maxTokens = intAttr(deployment, "max_num_batched_tokens");
    int64_t maxModelLen = intAttr(deployment, "max_model_len");
    int64_t blockSize = intAttr(deployment, "kv_block_size");
    int64_t tp = std::max<int64_t>(1, intAttr(deployment, "tensor_parallel_size"));
    double utilization = floatAttr(deployment, "gpu_memory_utilization");
    int64_t memory = intAttr(target, "memory_bytes");
    int64_t contextBytes = intAttr(target, "cuda_context_bytes");
    int64_t ncclBytes = tp > 1 ? intAttr(target, "nccl_bytes") : 0;
    if (maxTokens <= 0 || maxModelLen <= 0 || blockSize <= 0 || memory <= 0) {
      module.emitError() << "volt.deployment / volt.target lack the sizes memory planning needs";
      return signalPassFailure();
    }

    // The target's program, then the draft program's (MTP): one arena,
    // where the draft's buffers may reuse the target's bytes, since the two
    // never run at once.
    auto draft = module.lookupSymbol<func::FuncOp>("draft");
    auto program = vx::collectStep(step, draft);
    if (!program) {
      step.emitError() << program.message();
      return signalPassFailure();
    }
    // Liveness: the launches that use each arena buffer.
    SmallVector<vx::AllocOp> allocs = program->allocs;
    llvm::DenseMap<Operation *, size_t> allocIndex;
    for (size_t i = 0; i < allocs.size(); ++i)
      allocIndex[allocs[i]] = i;
    std::vector<volt::memory::Interval> intervals(allocs.size());
    for (size_t i = 0; i < allocs.size(); ++i) {
      int64_t bytes = allocs[i].getPerTokenBytes() * maxTokens + allocs[i].getFixedBytes();
      intervals[i] = {volt::memory::alignUp(bytes), INT64_MAX, -1};
    }
    // Ops run one after another, so they share one workspace.
    const int64_t blocksPerSeq = (maxModelLen + blockSize - 1) / blockSize;
    int64_t workspaceBytes = 0;
    int64_t launchIndex = 0;
    int64_t kvHeads = 0, headDim = 0;
    for (vx::LaunchOp launch : program->launches) {
      for (Value v : launch.getOperands_()) {
        auto a = v.getDefiningOp<vx::AllocOp>();
        if (!a)
          continue;
        auto &in = intervals[allocIndex[a]];
        in.first = std::min(in.first, launchIndex);
        in.last = std::max(in.last, launchIndex);
      }
      workspaceBytes = std::max(workspaceBytes, workspaceBytesOf(launch, blocksPerSeq * blockSize));
      if (launch.getKind() == "Attention") {
        kvHeads = launch.getParams().getAs<IntegerAttr>("num_kv_heads").getInt();
        headDim = launch.getParams().getAs<IntegerAttr>("head_dim").getInt();
      }
      ++launchIndex;
    }
    int64_t kvLayers = 0;
    for (const vx::CacheGroupInfo &g : program->caches)
      if (g.kind == volt::plan::CacheKind::PagedKv)
        kvLayers = static_cast<int64_t>(g.layers.size());
    for (size_t i = 0; i < allocs.size(); ++i)
      if (intervals[i].last < 0) {
        allocs[i].emitOpError() << "is never used by a launch";
        return signalPassFailure();
      }

    volt::memory::Placement placement = volt::memory::place(intervals);
    Builder b(&getContext());
    for (size_t i = 0; i < allocs.size(); ++i)
      allocs[i].setOffsetAttr(b.getI64IntegerAttr(placement.offsets[i]));

    int64_t weightBytes = 0;
    for (vx::WeightOp w : program->weights)
      weightBytes += packedBytes(w);
    workspaceBytes = volt::memory::alignUp(workspaceBytes);
    int64_t budget = static_cast<int64_t>(std::floor(utilization * static_cast<double>(memory)));
    int64_t kvBlockBytes = kvLayers * 2 * blockSize * kvHeads * headDim * 2;
    int64_t maxSeqs = std::max<int64_t>(1, intAttr(deployment, "max_num_seqs"));
    // Every running sequence has a slot in each state group, and with
    // speculative decoding one more per draft token (the copies a verify
    // step keeps to roll back to): num_state_slots.
    int64_t numSlots = deployment.get("num_state_slots")
                           ? std::max(maxSeqs, intAttr(deployment, "num_state_slots"))
                           : maxSeqs;
    int64_t stateBytes = 0;
    for (const vx::CacheGroupInfo &g : program->caches)
      if (g.kind == volt::plan::CacheKind::StateSlots)
        stateBytes +=
            volt::memory::alignUp(numSlots * g.slotBytes * static_cast<int64_t>(g.layers.size()));
    // The hidden rows a draft program starts from (StepOutput.Hidden): one
    // per token of the largest step, FP16, kept between steps.
    int64_t hiddenBytes = 0;
    if (draft)
      if (auto model = module->getAttrOfType<DictionaryAttr>("volt.model"))
        hiddenBytes = volt::memory::alignUp(maxTokens * intAttr(model, "hidden_size") * 2);
    // Held apart from the rest below: what the KV cache cannot have.
    stateBytes += hiddenBytes;
    int64_t left = budget - contextBytes - ncclBytes - weightBytes - placement.arenaBytes -
                   workspaceBytes - stateBytes;
    int64_t blocks = kvBlockBytes > 0 && left > 0 ? left / kvBlockBytes : 0;

    if (blocks < blocksPerSeq) {
      std::string text = "the deployment does not fit: " + std::to_string(tp) + " x " +
                         target.getAs<StringAttr>("name").getValue().str() +
                         " cannot hold the KV cache of one " + std::to_string(maxModelLen) +
                         "-token sequence\n";
      auto row = [&](const std::string &what, int64_t bytes) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "  %-40s %12s\n", what.c_str(), gib(bytes).c_str());
        text += buf;
      };
      row("weights (per GPU)", weightBytes);
      row("activation arena (" + std::to_string(maxTokens) + " tokens)", placement.arenaBytes);
      if (workspaceBytes)
        row("kernel workspace", workspaceBytes);
      row("CUDA context", contextBytes);
      if (ncclBytes)
        row("NCCL buffers", ncclBytes);
      if (stateBytes > hiddenBytes)
        row("recurrent state (" + std::to_string(maxSeqs) + " sequences" +
                (numSlots > maxSeqs ? ", " + std::to_string(numSlots) + " slots" : "") + ")",
            stateBytes - hiddenBytes);
      if (hiddenBytes)
        row("MTP hidden rows (" + std::to_string(maxTokens) + " tokens)", hiddenBytes);
      row("KV cache, one full-length sequence", blocksPerSeq * kvBlockBytes);
      row("needed", weightBytes + placement.arenaBytes + workspaceBytes + contextBytes + ncclBytes +
                        stateBytes + blocksPerSeq * kvBlockBytes);
      char util[64];
      std::snprintf(util, sizeof util, "available (gpu_memory_utilization %.2f)", utilization);
      row(util, budget);
      // What a driver needs to re-plan the deployment and say which
      // changes make it fit (voltc does: compiler/driver/FitAdvice.h).
      module->setAttr(
          "vexec.shortfall",
          b.getDictionaryAttr({
              b.getNamedAttr("budget_bytes", b.getI64IntegerAttr(budget)),
              b.getNamedAttr("kv_budget_bytes", b.getI64IntegerAttr(left)),
              b.getNamedAttr("kv_block_bytes", b.getI64IntegerAttr(kvBlockBytes)),
              b.getNamedAttr("kv_block_size", b.getI64IntegerAttr(blockSize)),
              b.getNamedAttr("max_blocks_per_seq", b.getI64IntegerAttr(blocksPerSeq)),
              b.getNamedAttr("state_bytes", b.getI64IntegerAttr(stateBytes - hiddenBytes)),
              b.getNamedAttr("weight_bytes", b.getI64IntegerAttr(weightBytes)),
              b.getNamedAttr("needed_bytes",
                             b.getI64IntegerAttr(weightBytes + placement.arenaBytes +
                                                 workspaceBytes + contextBytes + ncclBytes +
                                                 stateBytes + blocksPerSeq * kvBlockBytes)),
          }));
      module.emitError() << text;
      return signalPassFailure();
    }

    // More than max_num_seqs full-length sequences can never be resident at
    // once; memory beyond that stays free.
    blocks = std::min(blocks, maxSeqs * blocksPerSeq);

    // The cache region: the groups in Cache-operand order, each aligned.
    SmallVector<Attribute> caches;
    int64_t cacheBytes = 0;
    for (const vx::CacheGroupInfo &g : program->caches) {
      const bool paged = g.kind == volt::plan::CacheKind::PagedKv;
      const int64_t layers = static_cast<int64_t>(g.layers.size());
      const int64_t bytes = paged ? blocks * kvBlockBytes : numSlots * g.slotBytes * layers;
      SmallVector<NamedAttribute> fields = {
          b.getNamedAttr("kind", b.getStringAttr(paged ? "paged_kv" : "state_slots")),
          b.getNamedAttr("name", b.getStringAttr(g.name)),
          b.getNamedAttr("layers", b.getDenseI64ArrayAttr(g.layers)),
          b.getNamedAttr("dtype", TypeAttr::get(paged ? b.getF16Type() : g.dtype)),
          b.getNamedAttr("offset", b.getI64IntegerAttr(cacheBytes)),
          b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
      };
      if (paged) {
        fields.push_back(b.getNamedAttr("num_blocks", b.getI64IntegerAttr(blocks)));
        fields.push_back(b.getNamedAttr("block_size", b.getI64IntegerAttr(blockSize)));
        fields.push_back(b.getNamedAttr("num_kv_heads", b.getI64IntegerAttr(kvHeads)));
        fields.push_back(b.getNamedAttr("head_dim", b.getI64IntegerAttr(headDim)));
      } else {
        fields.push_back(b.getNamedAttr("num_slots", b.getI64IntegerAttr(numSlots)));
        fields.push_back(b.getNamedAttr("slot_bytes", b.getI64IntegerAttr(g.slotBytes)));
      }
      caches.push_back(b.getDictionaryAttr(fields));
      cacheBytes += volt::memory::alignUp(bytes);
    }

    module->setAttr(
        "vexec.memory",
        b.getDictionaryAttr({
            b.getNamedAttr("device_bytes", b.getI64IntegerAttr(memory)),
            b.getNamedAttr("budget_bytes", b.getI64IntegerAttr(budget)),
            b.getNamedAttr("cuda_context_bytes", b.getI64IntegerAttr(contextBytes)),
            b.getNamedAttr("nccl_bytes", b.getI64IntegerAttr(ncclBytes)),
            b.getNamedAttr("weight_bytes", b.getI64IntegerAttr(weightBytes)),
            b.getNamedAttr("arena_bytes", b.getI64IntegerAttr(placement.arenaBytes)),
            b.getNamedAttr("arena_lower_bound", b.getI64IntegerAttr(placement.lowerBound)),
            b.getNamedAttr("workspace_bytes", b.getI64IntegerAttr(workspaceBytes)),
            b.getNamedAttr("kv_layers", b.getI64IntegerAttr(kvLayers)),
            b.getNamedAttr("kv_heads", b.getI64IntegerAttr(kvHeads)),
            b.getNamedAttr("head_dim", b.getI64IntegerAttr(headDim)),
            b.getNamedAttr("kv_block_size", b.getI64IntegerAttr(blockSize)),
            b.getNamedAttr("kv_block_bytes", b.getI64IntegerAttr(kvBlockBytes)),
            b.getNamedAttr("kv_blocks", b.getI64IntegerAttr(blocks)),
            b.getNamedAttr("kv_bytes", b.getI64IntegerAttr(blocks * kvBlockBytes)),
            b.getNamedAttr("kv_budget_bytes", b.getI64IntegerAttr(left)),
            b.getNamedAttr("state_bytes", b.getI64IntegerAttr(stateBytes - hiddenBytes)),
            b.getNamedAttr("hidden_bytes", b.getI64IntegerAttr(hiddenBytes)),
            b.getNamedAttr("cache_bytes", b.getI64IntegerAttr(cacheBytes)),
            b.getNamedAttr("caches", b.getArrayAttr(caches)),
            b.getNamedAttr("max_blocks_per_seq", b.getI64IntegerAttr(blocksPerSeq)),
            b.getNamedAttr("max_num_batched_tokens", b.getI64IntegerAttr(maxTokens)),
        }));
  }
};

} // namespace
