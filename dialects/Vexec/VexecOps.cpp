//===- VexecOps.cpp - verifiers of the vexec ops -------------------------===//
#include "dialects/Vexec/VexecOps.h"

#include "dialects/Vexec/VexecPlan.h"
#include "runtime/schema/Ops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace volt::vexec;

namespace {

namespace ops = volt::plan::ops;

/// Whether `value` is a valid attribute for a param of `type`.
bool fits(const ops::ParamDesc &param, Attribute value) {
  switch (param.type) {
  case ops::ParamType::U32: {
    auto i = dyn_cast<IntegerAttr>(value);
    return i && !isa<BoolAttr>(value) && i.getType().isSignlessInteger(64) && i.getInt() >= 0 &&
           i.getInt() <= int64_t{UINT32_MAX};
  }
  case ops::ParamType::F32:
    return isa<FloatAttr>(value);
  case ops::ParamType::Bool:
    return isa<BoolAttr>(value);
  case ops::ParamType::DType: {
    auto s = dyn_cast<StringAttr>(value);
    return s && irNamed<volt::plan::DType>(s.getValue());
  }
  case ops::ParamType::Epilogue: {
    auto s = dyn_cast<StringAttr>(value);
    return s && irNamed<volt::plan::Epilogue>(s.getValue());
  }
  }
  return false;
}

} // namespace

LogicalResult InputOp::verify() {
  if (!irNamed<volt::plan::StepInput>(getName()))
    return emitOpError() << "unknown name '" << getName()
                         << "' (valid: " << irNames<volt::plan::StepInput>() << ")";
  return success();
}

LogicalResult OutputOp::verify() {
  if (!irNamed<volt::plan::StepOutput>(getName()))
    return emitOpError() << "unknown name '" << getName()
                         << "' (valid: " << irNames<volt::plan::StepOutput>() << ")";
  return success();
}

LogicalResult KvCacheOp::verify() {
  const int64_t layer = getLayerAttr().getInt();
  if (layer < 0 || layer > int64_t{UINT32_MAX})
    return emitOpError() << "layer " << layer << " is outside [0, 2^32)";
  return success();
}

LogicalResult StateOp::verify() {
  if (getGroup().empty() || getGroup() == "kv")
    return emitOpError() << "needs a group name other than 'kv' (the paged KV group's)";
  const int64_t layer = getLayerAttr().getInt(), slotBytes = getSlotBytesAttr().getInt();
  if (layer < 0 || layer > int64_t{UINT32_MAX})
    return emitOpError() << "layer " << layer << " is outside [0, 2^32)";
  if (slotBytes <= 0 || slotBytes > (int64_t{1} << 36))
    return emitOpError() << "slot_bytes " << slotBytes << " is outside (0, 2^36]";
  Type t = getDtype();
  if (!t.isF32() && !t.isF16() && !t.isBF16())
    return emitOpError() << "dtype must be f32, f16 or bf16, found " << t;
  return success();
}

LogicalResult WeightOp::verify() {
  if (getLayout() != "dense" && getLayout() != "nvfp4" && getLayout() != "fp8")
    return emitOpError() << "unknown layout '" << getLayout() << "' (valid: dense, nvfp4, fp8)";
  if (getLayout() == "fp8" && !getScaleNames())
    return emitOpError() << "an fp8 weight needs scale_names";
  if (getNames().empty() || getPartRows().empty())
    return emitOpError() << "needs checkpoint tensor names and part_rows";
  if (getLayout() == "nvfp4" && !getGlobalScales())
    return emitOpError() << "an nvfp4 weight needs global_scales";
  if (auto views = getViews(); views && views->size() != 5 * getNames().size())
    return emitOpError() << "has " << views->size() << " view numbers for " << getNames().size()
                         << " names; expected 5 per name";
  if (auto scales = getScaleNames(); scales && scales->size() != getNames().size())
    return emitOpError() << "has " << scales->size() << " scale_names for "
                         << getNames().size() << " names";
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
  const ops::OpDesc *desc = ops::opByName(std::string_view(getKind()));
  if (!desc) {
    std::string list;
    for (const ops::OpDesc &k : ops::allOps())
      list += (list.empty() ? "" : ", ") + std::string(k.name);
    return emitOpError() << "unknown kind '" << getKind() << "' (valid: " << list << ")";
  }
  const std::string what = "'" + getKind().str() + "' ('" + getName().str() + "')";
  unsigned n = getOperands_().size();
  if (n != desc->minOperands() && n != desc->maxOperands()) {
    std::string names;
    for (const ops::OperandDesc &o : desc->operands)
      names += (names.empty() ? "" : ", ") + std::string(o.name) +
               (o.role == ops::Role::Optional ? "?" : "");
    return emitOpError() << what << " takes " << desc->minOperands()
                         << (desc->maxOperands() != desc->minOperands()
                                 ? " or " + std::to_string(desc->maxOperands())
                                 : std::string())
                         << " operands (" << names << "), found " << n;
  }
  DictionaryAttr params = getParams();
  for (NamedAttribute p : params) {
    const ops::ParamDesc *param = desc->param(std::string_view(p.getName().getValue()));
    if (!param) {
      std::string valid;
      for (const ops::ParamDesc &q : desc->params)
        valid += (valid.empty() ? "" : ", ") + std::string(q.name);
      return emitOpError() << what << " has no param '" << p.getName().getValue()
                           << "' (its params: " << valid << ")";
    }
    if (!fits(*param, p.getValue())) {
      std::string names =
          param->type == ops::ParamType::DType      ? " (" + irNames<volt::plan::DType>() + ")"
          : param->type == ops::ParamType::Epilogue ? " (" + irNames<volt::plan::Epilogue>() + ")"
                                                    : std::string();
      return emitOpError() << what << " param '" << param->name << "': expected "
                           << ops::describeType(param->type) << names << ", found " << p.getValue();
    }
  }
  for (const ops::ParamDesc &param : desc->params)
    if (param.required() && !params.get(StringRef(param.name.data(), param.name.size())))
      return emitOpError() << what << " lacks its param '" << param.name << "' ("
                           << ops::describeType(param.type) << ")";
  for (Attribute k : getKernels())
    if (!isa<DictionaryAttr>(k))
      return emitOpError() << "kernels must be dictionaries";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Vexec/VexecOps.cpp.inc"
