//===- PlanKernels.cpp ----------------------------------------------------===//
#include "compiler/codegen/vexec/PlanKernels.h"

#include "dialects/Vexec/VexecPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace volt::codegen {
namespace {

using namespace mlir;
namespace vx = volt::vexec;
namespace fb = flatbuffers;

int64_t intOf(DictionaryAttr d, StringRef name, int64_t fallback = 0) {
  auto a = d ? d.getAs<IntegerAttr>(name) : IntegerAttr();
  return a ? a.getInt() : fallback;
}

double floatOf(DictionaryAttr d, StringRef name, double fallback) {
  auto a = d ? d.getAs<FloatAttr>(name) : FloatAttr();
  return a ? a.getValueAsDouble() : fallback;
}

StringRef stringOf(DictionaryAttr d, StringRef name) {
  auto a = d ? d.getAs<StringAttr>(name) : StringAttr();
  return a ? a.getValue() : StringRef();
}

/// The step program's operands, as the plan numbers them
/// (vexec::collectStep), with the facts launches depend on.
struct Operands {
  llvm::DenseMap<Value, OperandInfo> byValue;
  SmallVector<vx::LaunchOp> launches;
};

Result<Operands> collect(func::FuncOp step, func::FuncOp draft) {
  VOLT_ASSIGN_OR_RETURN(vx::StepProgram program, vx::collectStep(step, draft));
  Operands o;
  o.launches = program.launches;
  for (auto &[value, operand] : program.operands) {
    OperandInfo info;
    info.kind = static_cast<OperandKind>(operand.kind());
    info.index = operand.index();
    if (info.kind == OperandKind::Output) {
      // The logits: f32, one row per logits row; the hidden rows: FP16,
      // one per token.
      const bool logits = info.index == static_cast<uint32_t>(plan::StepOutput::Logits);
      info.f32 = logits;
      info.perRow = logits;
    } else if (auto w = value.getDefiningOp<vx::WeightOp>()) {
      info.shape.assign(w.getShape().begin(), w.getShape().end());
      for (int64_t rows : w.getPartRows())
        info.partRows.push_back(static_cast<uint32_t>(rows));
      if (info.partRows.size() == 1)
        info.partRows.clear();
      if (auto g = w.getGlobalScales())
        info.globalScales.assign(g->begin(), g->end());
      info.nvfp4 = w.getLayout() == "nvfp4";
      info.fp8 = w.getLayout() == "fp8";
      info.f32 = w.getDtype().isF32();
    } else if (auto a = value.getDefiningOp<vx::AllocOp>()) {
      info.f32 = a.getDtype().isF32();
      info.perRow = a.getPerTokenBytes() == 0;
    }
    o.byValue[value] = std::move(info);
  }
  return o;
}

OpInfo opInfoOf(vx::LaunchOp l, const Operands &operands) {
  OpInfo op;
  op.kind = vx::launchKind(l);
  op.name = l.getName().str();
  for (Value v : l.getOperands_())
    op.operands.push_back(operands.byValue.lookup(v));
  op.params = vx::launchParams(l);
  return op;
}

std::vector<Variant> variantsOf(vx::LaunchOp l) {
  std::vector<Variant> variants;
  for (Attribute a : l.getKernels()) {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d)
      continue;
    Variant v;
    v.maxTokens = intOf(d, "max_tokens");
    v.kernel = stringOf(d, "kernel").str();
    for (NamedAttribute field : d)
      if (auto i = dyn_cast<IntegerAttr>(field.getValue()); i && field.getName() != "max_tokens")
        v.config[field.getName().str()] = i.getInt();
    variants.push_back(std::move(v));
  }
  return variants;
}

/// Candidates per sequence the sampler keeps, and its block size
/// (templates/top_candidates.cu; docs/perf/kernels.md says why).
constexpr int64_t kSamplerCandidates = 64;
constexpr uint32_t kSamplerThreads = 512;

plan::GridDim gridDim(const GridRule &r) {
  return plan::GridDim(r.perToken, r.perSeq, r.fixed, r.divisor, r.perRow);
}

} // namespace

Result<TargetInfo> targetInfoOf(ModuleOp module) {
  auto target = module->getAttrOfType<DictionaryAttr>("volt.target");
  StringRef arch = stringOf(target, "arch");
  if (!arch.starts_with("sm_"))
    return Error("internal error: the module's volt.target has no GPU arch (found '" + arch.str() +
                 "')");
  TargetInfo t;
  t.smVersion = std::atoi(arch.drop_front(3).str().c_str());
  t.smCount = static_cast<int>(intOf(target, "sm_count", t.smCount));
  t.registersPerSm = static_cast<uint32_t>(intOf(target, "registers_per_sm", t.registersPerSm));
  t.sharedMemoryPerBlockOptinBytes = static_cast<uint32_t>(
      intOf(target, "shared_memory_per_block_optin_bytes", t.sharedMemoryPerBlockOptinBytes));
  t.sharedMemoryPerSmBytes = std::max(t.sharedMemoryPerBlockOptinBytes, 49152u);
  t.memoryBandwidthGbps = floatOf(target, "memory_bandwidth_gbps", t.memoryBandwidthGbps);
  t.fp16TensorTflops = floatOf(target, "fp16_tensor_tflops", t.fp16TensorTflops);
  // Resident threads per SM (CUDA C++ Programming Guide, per compute
  // capability): volt.target does not carry it.
  t.maxThreadsPerSm = t.smVersion == 75                          ? 1024
                      : (t.smVersion == 86 || t.smVersion == 89) ? 1536
                                                                 : 2048;
  return t;
}

Result<PlanKernels> PlanKernels::build(ModuleOp module, uint32_t ranks,
                                       const CodegenOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>("step");
  auto memory = module->getAttrOfType<DictionaryAttr>("vexec.memory");
  if (!step || !memory)
    return Error("internal error: the module has no planned step program");
  VOLT_ASSIGN_OR_RETURN(TargetInfo target, targetInfoOf(module));
  // The target's launches, then the draft program's (Rank.draft_ops_begin).
  VOLT_ASSIGN_OR_RETURN(Operands operands,
                        collect(step, module.lookupSymbol<func::FuncOp>("draft")));
  ProgramInfo program;
  program.kvBlocks = static_cast<uint32_t>(intOf(memory, "kv_blocks"));
  program.kvBlockSize = static_cast<uint32_t>(intOf(memory, "kv_block_size"));
  program.kvHeads = static_cast<uint32_t>(intOf(memory, "kv_heads"));
  program.headDim = static_cast<uint32_t>(intOf(memory, "head_dim"));
  program.maxBlocksPerSeq = static_cast<uint32_t>(intOf(memory, "max_blocks_per_seq"));
  program.maxNumBatchedTokens = static_cast<uint32_t>(intOf(memory, "max_num_batched_tokens"));
  program.workspaceBytes = static_cast<uint64_t>(intOf(memory, "workspace_bytes"));

  PlanKernels result;
  KernelRegistry registry;
  result.launches_.resize(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    program.rank = r;
    for (vx::LaunchOp l : operands.launches) {
      auto planned = planLaunches(opInfoOf(l, operands), variantsOf(l), program, target, registry);
      if (!planned)
        return planned.error();
      result.launches_[r].push_back(std::move(*planned));
    }
  }
  // The sampler runs on rank 0 over StepOutput.Logits, which hold full
  // vocabulary rows at any tensor_parallel_size (a vocab-parallel LM head
  // is all-gathered into them), so its kernel is built for the model's
  // whole vocabulary. Added last: the step program's kernel indices stay
  // what they would be without it.
  auto modelAttr = module->getAttrOfType<DictionaryAttr>("volt.model");
  const int64_t vocab = intOf(modelAttr, "vocab_size");
  if (vocab < kSamplerCandidates)
    return Error("internal error: the module's volt.model has vocab_size " + std::to_string(vocab) +
                 ", below the sampler's " + std::to_string(kSamplerCandidates) +
                 " candidates per sequence");
  KernelRequest sampler;
  sampler.kernel = "top_candidates";
  sampler.set("vocab", vocab).set("k", kSamplerCandidates);
  sampler.threads = kSamplerThreads;
  result.samplerKernel_ = registry.add(sampler);
  result.samplerK_ = kSamplerCandidates;
  result.samplerThreads_ = kSamplerThreads;

  if (options.log)
    options.log("building " + std::to_string(registry.requests().size()) + " kernels for " +
                target.arch());
  VOLT_ASSIGN_OR_RETURN(result.kernels_, buildKernels(registry.requests(), target, options));
  if (options.log)
    options.log("kernels: " + std::to_string(result.kernels_.compiled) + " compiled, " +
                std::to_string(result.kernels_.cached) + " from the cache (NVRTC " +
                result.kernels_.nvrtcVersion + ")");
  return result;
}

fb::Offset<fb::Vector<fb::Offset<plan::Kernel>>>
PlanKernels::writeKernels(fb::FlatBufferBuilder &b) const {
  std::vector<fb::Offset<plan::Kernel>> kernels;
  for (const CompiledKernel &k : kernels_.kernels) {
    auto resources =
        plan::CreateKernelResources(b, k.resources.registers, k.resources.staticSharedBytes,
                                    k.resources.localBytes, k.request.threads);
    kernels.push_back(plan::CreateKernel(b, b.CreateString(k.request.kernel),
                                         b.CreateString(k.request.key()), b.CreateVector(k.cubin),
                                         b.CreateString(k.ptx), resources));
  }
  return b.CreateVector(kernels);
}

fb::Offset<fb::Vector<fb::Offset<plan::Launch>>>
PlanKernels::writeLaunches(fb::FlatBufferBuilder &b, uint32_t rank, size_t op) const {
  std::vector<fb::Offset<plan::Launch>> launches;
  for (const PlannedLaunch &l : launches_.at(rank).at(op)) {
    std::vector<fb::Offset<plan::Arg>> args;
    for (const LaunchArg &a : l.args) {
      plan::Operand operand(static_cast<plan::OperandKind>(a.operandKind), a.operandIndex);
      args.push_back(plan::CreateArg(b, static_cast<plan::ArgKind>(a.kind),
                                     a.kind == LaunchArg::Kind::Pointer ? &operand : nullptr,
                                     a.offset, a.i32, a.f32));
    }
    auto argsVector = b.CreateVector(args);
    plan::GridDim x = gridDim(l.grid[0]), y = gridDim(l.grid[1]), z = gridDim(l.grid[2]);
    launches.push_back(plan::CreateLaunch(b, l.maxTokens, static_cast<uint32_t>(l.kernel), &x, &y,
                                          &z, l.block[0], l.block[1], l.block[2], l.sharedBytes,
                                          argsVector));
  }
  return b.CreateVector(launches);
}

fb::Offset<plan::Sampler> PlanKernels::writeSampler(fb::FlatBufferBuilder &b) const {
  return plan::CreateSampler(b, static_cast<uint32_t>(samplerKernel_), samplerK_, samplerThreads_);
}

} // namespace volt::codegen
