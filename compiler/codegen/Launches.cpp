//===- Launches.cpp -------------------------------------------------------===//
//
// One function per op family. Each builds the kernel request (the
// template's constants), the grid rule and the argument list in the order
// of the template's entry point; the templates' banner comments state the
// same contract from their side.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Launches.h"

#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

#include "runtime/schema/Ops.h"

#include <algorithm>
#include <numeric>

namespace volt::codegen {

LaunchArg LaunchArg::pointer(const OperandInfo &o, uint64_t offset) {
  LaunchArg a;
  a.kind = Kind::Pointer;
  a.operandKind = o.kind;
  a.operandIndex = o.index;
  a.offset = offset;
  return a;
}

LaunchArg LaunchArg::workspace(uint32_t offset) {
  LaunchArg a;
  a.kind = Kind::Pointer;
  a.operandKind = OperandKind::Workspace;
  a.operandIndex = offset;
  return a;
}

LaunchArg LaunchArg::i32Value(int32_t v) {
  LaunchArg a;
  a.kind = Kind::I32;
  a.i32 = v;
  return a;
}

LaunchArg LaunchArg::f32Value(float v) {
  LaunchArg a;
  a.kind = Kind::F32;
  a.f32 = v;
  return a;
}

LaunchArg LaunchArg::tokenCount() {
  LaunchArg a;
  a.kind = Kind::TokenCount;
  return a;
}

LaunchArg LaunchArg::seqCount() {
  LaunchArg a;
  a.kind = Kind::SeqCount;
  return a;
}

LaunchArg LaunchArg::rowCount() {
  LaunchArg a;
  a.kind = Kind::RowCount;
  return a;
}

size_t KernelRegistry::add(const KernelRequest &request) {
  std::string key = request.key();
  auto it = byKey_.find(key);
  if (it != byKey_.end())
    return it->second;
  byKey_[key] = requests_.size();
  requests_.push_back(request);
  return requests_.size() - 1;
}

uint64_t fp8ScalesOffset(const std::vector<int64_t> &shape) {
  uint64_t elements = 1;
  for (int64_t d : shape)
    elements *= static_cast<uint64_t>(d);
  return (elements + 255) / 256 * 256;
}

uint64_t nvfp4ScalesOffset(const std::vector<int64_t> &shape) {
  uint64_t elements = 1;
  for (int64_t d : shape)
    elements *= static_cast<uint64_t>(d);
  return (elements / 2 + 255) / 256 * 256;
}

uint64_t nvfp4EpilogueOffset(const std::vector<int64_t> &shape) {
  uint64_t elements = 1;
  for (int64_t d : shape)
    elements *= static_cast<uint64_t>(d);
  return (nvfp4ScalesOffset(shape) + elements / 16 + 255) / 256 * 256;
}

Result<GemmParams> gemmParams(const OpInfo &op) {
  if (op.params.type != plan::paramsTypeOf(op.kind) || !op.params.value)
    return Error("op '" + op.name + "': params of type " + plan::EnumNameOpParams(op.params.type));
  GemmParams g;
  auto grouped = [&](const auto &p) {
    g = {p.dim,   p.out_features, p.epilogue == plan::Epilogue::SiluMul, false, p.num_experts,
         p.top_k, p.gather_tokens};
  };
  switch (op.kind) {
  case plan::OpKind::Linear: {
    const auto &p = *op.params.AsLinearParams();
    g.k = p.dim;
    g.n = p.out_features;
    g.outF32 = p.out_dtype == plan::DType::F32;
    return g;
  }
  case plan::OpKind::QLinear: {
    const auto &p = *op.params.AsQLinearParams();
    g.k = p.dim;
    g.n = p.out_features;
    g.silu = p.epilogue == plan::Epilogue::SiluMul;
    g.outF32 = p.out_dtype == plan::DType::F32;
    return g;
  }
  case plan::OpKind::MoeGroupedQLinear:
    grouped(*op.params.AsMoeGroupedQLinearParams());
    return g;
  case plan::OpKind::MoeGroupedLinear:
    grouped(*op.params.AsMoeGroupedLinearParams());
    return g;
  default:
    return Error("op '" + op.name + "' (" + plan::EnumNameOpKind(op.kind) + ") is not a GEMM");
  }
}

Result<std::vector<PlannedLaunch>>
planLaunches(const OpInfo &op, const std::vector<Variant> &variants, const ProgramInfo &program,
             const TargetInfo &target, KernelRegistry &registry) {
  LaunchContext c{op, program, target, registry};
  const plan::ops::OpDesc *desc = plan::ops::opByValue(static_cast<uint16_t>(op.kind));
  if (!desc)
    return Error("op '" + op.name + "': unknown op kind " +
                 std::to_string(static_cast<int>(op.kind)));
  if (op.operands.size() != desc->minOperands() && op.operands.size() != desc->maxOperands())
    return c.error(std::to_string(op.operands.size()) + " operands");
  if (op.params.type != plan::paramsTypeOf(op.kind) || !op.params.value)
    return c.error(std::string("params of type ") + plan::EnumNameOpParams(op.params.type) +
                   " (expected " + std::string(desc->name) + "Params)");
  if (op.kind == plan::OpKind::AllReduce || op.kind == plan::OpKind::AllGather)
    return std::vector<PlannedLaunch>{};
  if (variants.empty())
    return c.error("no kernel was selected for it (run --volt-select-kernels for a GPU target)");
  std::vector<PlannedLaunch> launches;
  for (const Variant &v : variants) {
    const KernelDef *kernel = kernelNamed(v.kernel);
    if (!kernel || !kernel->plan)
      return c.error("no kernel named '" + v.kernel + "' (compiler/codegen/Kernels.def)");
    if (kernel->op != op.kind)
      return c.error("kernel '" + v.kernel + "' does not implement " +
                     plan::EnumNameOpKind(op.kind));
    VOLT_ASSIGN_OR_RETURN(PlannedLaunch l, kernel->plan(c, v));
    launches.push_back(std::move(l));
  }
  std::stable_sort(
      launches.begin(), launches.end(),
      [](const PlannedLaunch &a, const PlannedLaunch &b) { return a.maxTokens < b.maxTokens; });
  return launches;
}

} // namespace volt::codegen
