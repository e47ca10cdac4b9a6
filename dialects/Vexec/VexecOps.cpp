//===- VexecOps.cpp - verifiers of the vexec ops -------------------------===//
#include "dialects/Vexec/VexecOps.h"

#include "dialects/Vexec/OpKinds.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace volt::vexec;

namespace {
template <size_t N>
LogicalResult checkName(Operation *op, StringRef name, const std::string_view (&valid)[N]) {
  for (std::string_view v : valid)
    if (std::string_view(name) == v)
      return success();
  std::string list;
  for (std::string_view v : valid)
    list += (list.empty() ? "" : ", ") + std::string(v);
  return op->emitOpError() << "unknown name '" << name << "' (valid: " << list << ")";
}
} // namespace

LogicalResult InputOp::verify() { return checkName(*this, getName(), kStepInputs); }

LogicalResult OutputOp::verify() { return checkName(*this, getName(), kStepOutputs); }

LogicalResult WeightOp::verify() {
  if (getLayout() != "dense" && getLayout() != "nvfp4")
    return emitOpError() << "unknown layout '" << getLayout() << "' (valid: dense, nvfp4)";
  if (getNames().empty() || getPartRows().empty())
    return emitOpError() << "needs checkpoint tensor names and part_rows";
  if (getLayout() == "nvfp4" && !getGlobalScales())
    return emitOpError() << "an nvfp4 weight needs global_scales";
  for (int64_t d : getShape())
    if (d <= 0)
      return emitOpError() << "shape must be positive";
  return success();
}

LogicalResult AllocOp::verify() {
  if (getPerTokenBytes() < 0 || getFixedBytes() < 0)
    return emitOpError() << "sizes must be non-negative";
  if (getPerTokenBytes() == 0 && getFixedBytes() == 0)
    return emitOpError() << "buffer '" << getName() << "' has no size";
  if (auto offset = getOffset(); offset && *offset < 0)
    return emitOpError() << "offset must be non-negative";
  return success();
}

LogicalResult LaunchOp::verify() {
  auto index = opKindIndex(std::string_view(getKind()));
  if (!index) {
    std::string list;
    for (const OpKindInfo &k : kOpKinds)
      list += (list.empty() ? "" : ", ") + std::string(k.name);
    return emitOpError() << "unknown kind '" << getKind() << "' (valid: " << list << ")";
  }
  const OpKindInfo &info = kOpKinds[*index];
  unsigned n = getOperands_().size();
  if (n < info.minOperands || n > info.maxOperands)
    return emitOpError() << "'" << getKind() << "' takes " << info.minOperands
                         << (info.maxOperands != info.minOperands
                                 ? " to " + std::to_string(info.maxOperands)
                                 : std::string())
                         << " operands, found " << n;
  for (Attribute k : getKernels())
    if (!isa<DictionaryAttr>(k))
      return emitOpError() << "kernels must be dictionaries";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Vexec/VexecOps.cpp.inc"
