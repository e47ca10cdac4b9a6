//===- VexecPlan.cpp ------------------------------------------------------===//
#include "dialects/Vexec/VexecPlan.h"

#include "runtime/schema/Ops.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

namespace volt::vexec {
namespace {

using namespace mlir;

/// A schema enum's values and names (flatc's generated functions).
template <typename Enum> struct SchemaEnum;
template <> struct SchemaEnum<plan::StepInput> {
  static auto &values() { return plan::EnumValuesStepInput(); }
  static const char *name(plan::StepInput v) { return plan::EnumNameStepInput(v); }
};
template <> struct SchemaEnum<plan::StepOutput> {
  static auto &values() { return plan::EnumValuesStepOutput(); }
  static const char *name(plan::StepOutput v) { return plan::EnumNameStepOutput(v); }
};
template <> struct SchemaEnum<plan::DType> {
  static auto &values() { return plan::EnumValuesDType(); }
  static const char *name(plan::DType v) { return plan::EnumNameDType(v); }
};
template <> struct SchemaEnum<plan::Epilogue> {
  static auto &values() { return plan::EnumValuesEpilogue(); }
  static const char *name(plan::Epilogue v) { return plan::EnumNameEpilogue(v); }
};

void read(DictionaryAttr d, StringRef name, uint32_t &out) {
  if (auto a = d.getAs<IntegerAttr>(name))
    out = static_cast<uint32_t>(a.getInt());
}
void read(DictionaryAttr d, StringRef name, float &out) {
  if (auto a = d.getAs<FloatAttr>(name))
    out = static_cast<float>(a.getValueAsDouble());
}
void read(DictionaryAttr d, StringRef name, bool &out) {
  if (auto a = d.getAs<BoolAttr>(name))
    out = a.getValue();
}
void read(DictionaryAttr d, StringRef name, plan::DType &out) {
  if (auto a = d.getAs<StringAttr>(name))
    if (auto v = irNamed<plan::DType>(a.getValue()))
      out = *v;
}
void read(DictionaryAttr d, StringRef name, plan::Epilogue &out) {
  if (auto a = d.getAs<StringAttr>(name))
    if (auto v = irNamed<plan::Epilogue>(a.getValue()))
      out = *v;
}

} // namespace

plan::OpKind launchKind(LaunchOp launch) {
  const plan::ops::OpDesc *d = plan::ops::opByName(std::string_view(launch.getKind()));
  return static_cast<plan::OpKind>(d ? d->kind : 0);
}

plan::OpParamsUnion launchParams(LaunchOp launch) {
  const plan::OpKind kind = launchKind(launch);
  DictionaryAttr d = launch.getParams();
  plan::OpParamsUnion u;
  // First the kind's table with the schema's defaults, then each param the
  // dictionary gives (Ops.def lists them).
#define VOLT_OP(Kind, Summary)                                                                     \
  if (kind == plan::OpKind::Kind)                                                                  \
    u.Set(plan::Kind##ParamsT{});
#include "runtime/schema/Ops.def"
#define VOLT_PARAM(Kind, name, Type, Default, Doc)                                                 \
  if (kind == plan::OpKind::Kind)                                                                  \
    read(d, #name, u.As##Kind##Params()->name);
#include "runtime/schema/Ops.def"
  return u;
}

template <typename Enum> std::optional<Enum> irNamed(StringRef name) {
  for (Enum v : SchemaEnum<Enum>::values())
    if (plan::ops::snakeCase(SchemaEnum<Enum>::name(v)) == std::string_view(name))
      return v;
  return std::nullopt;
}

template <typename Enum> std::string irNames() {
  std::string list;
  for (Enum v : SchemaEnum<Enum>::values())
    list += (list.empty() ? "" : ", ") + plan::ops::snakeCase(SchemaEnum<Enum>::name(v));
  return list;
}

template std::optional<plan::StepInput> irNamed(StringRef);
template std::optional<plan::StepOutput> irNamed(StringRef);
template std::optional<plan::DType> irNamed(StringRef);
template std::optional<plan::Epilogue> irNamed(StringRef);
template std::string irNames<plan::StepInput>();
template std::string irNames<plan::StepOutput>();
template std::string irNames<plan::DType>();
template std::string irNames<plan::Epilogue>();

Result<StepProgram> collectStep(func::FuncOp step, func::FuncOp draft) {
  StepProgram p;
  using plan::OperandKind;
  // The target's ops, then the draft program's.
  SmallVector<Operation *> ops;
  for (func::FuncOp fn : {step, draft}) {
    if (!fn)
      continue;
    for (Operation &op : fn.getBody().front())
      ops.push_back(&op);
  }
  // The cache groups first: operands index their layers.
  std::set<int64_t> kvLayers;
  SmallVector<std::pair<std::string, std::set<int64_t>>> stateLayers;
  for (Operation *opp : ops) {
    Operation &op = *opp;
    if (auto kv = dyn_cast<KvCacheOp>(op)) {
      kvLayers.insert(kv.getLayer());
    } else if (auto st = dyn_cast<StateOp>(op)) {
      auto it = llvm::find_if(p.caches, [&](const CacheGroupInfo &g) {
        return g.kind == plan::CacheKind::StateSlots && g.name == st.getGroup();
      });
      if (it == p.caches.end()) {
        CacheGroupInfo g;
        g.kind = plan::CacheKind::StateSlots;
        g.name = st.getGroup().str();
        g.dtype = st.getDtype();
        g.slotBytes = st.getSlotBytes();
        p.caches.push_back(g);
        stateLayers.push_back({g.name, {}});
        it = p.caches.end() - 1;
      }
      if (it->dtype != st.getDtype() || it->slotBytes != st.getSlotBytes())
        return Error("state group '" + it->name + "': layer " + std::to_string(st.getLayer()) +
                     " has slots of " + std::to_string(st.getSlotBytes()) +
                     " bytes, another layer of " + std::to_string(it->slotBytes) +
                     " (a group's slots are all alike)");
      stateLayers[static_cast<size_t>(it - p.caches.begin())].second.insert(st.getLayer());
    }
  }
  for (size_t i = 0; i < p.caches.size(); ++i)
    p.caches[i].layers.assign(stateLayers[i].second.begin(), stateLayers[i].second.end());
  if (!kvLayers.empty()) {
    CacheGroupInfo kv;
    kv.kind = plan::CacheKind::PagedKv;
    kv.name = "kv";
    kv.layers.assign(kvLayers.begin(), kvLayers.end());
    p.caches.insert(p.caches.begin(), kv);
  }
  auto cacheIndex = [&](plan::CacheKind kind, StringRef name, int64_t layer) {
    uint32_t first = 0;
    for (const CacheGroupInfo &g : p.caches) {
      if (g.kind == kind && (kind == plan::CacheKind::PagedKv || g.name == name))
        return first + static_cast<uint32_t>(llvm::find(g.layers, layer) - g.layers.begin());
      first += static_cast<uint32_t>(g.layers.size());
    }
    return first;
  };

  // A weight both programs use (the embedding, the LM head) is one entry:
  // its ops carry the same (uniqued) attributes.
  llvm::DenseMap<Attribute, uint32_t> weightIndex;
  for (Operation *opp : ops) {
    Operation &op = *opp;
    if (draft && &op == &draft.getBody().front().front())
      p.draftLaunchesBegin = p.launches.size();
    if (auto in = dyn_cast<InputOp>(op)) {
      auto input = irNamed<plan::StepInput>(in.getName());
      if (!input)
        return Error("internal error: unknown step input '" + in.getName().str() + "'");
      p.operands[in] = plan::Operand(OperandKind::Input, static_cast<uint32_t>(*input));
    } else if (auto out = dyn_cast<OutputOp>(op)) {
      auto output = irNamed<plan::StepOutput>(out.getName());
      if (!output)
        return Error("internal error: unknown step output '" + out.getName().str() + "'");
      p.operands[out] = plan::Operand(OperandKind::Output, static_cast<uint32_t>(*output));
    } else if (auto kv = dyn_cast<KvCacheOp>(op)) {
      p.operands[kv] = plan::Operand(OperandKind::Cache,
                                     cacheIndex(plan::CacheKind::PagedKv, "kv", kv.getLayer()));
    } else if (auto st = dyn_cast<StateOp>(op)) {
      p.operands[st] = plan::Operand(OperandKind::Cache, cacheIndex(plan::CacheKind::StateSlots,
                                                                    st.getGroup(), st.getLayer()));
    } else if (auto w = dyn_cast<WeightOp>(op)) {
      auto [it, added] = weightIndex.try_emplace(w->getAttrDictionary(),
                                                 static_cast<uint32_t>(p.weights.size()));
      p.operands[w] = plan::Operand(OperandKind::Weight, it->second);
      if (added)
        p.weights.push_back(w);
    } else if (auto a = dyn_cast<AllocOp>(op)) {
      p.operands[a] = plan::Operand(OperandKind::Arena, static_cast<uint32_t>(p.allocs.size()));
      p.allocs.push_back(a);
    } else if (auto l = dyn_cast<LaunchOp>(op)) {
      p.launches.push_back(l);
    }
  }
  return p;
}

} // namespace volt::vexec
