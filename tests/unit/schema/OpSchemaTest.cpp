//===- OpSchemaTest.cpp - the generated op schema agrees with Ops.def ----===//
//
// runtime/schema/Ops.def is the one definition of the op kinds; ops.fbs
// (and from it flatc's C++) is generated from it at build time. These
// tests read the generated code back through flatc's own reflection
// tables and hold it to the definition: every kind's value and name, its
// params table's position in the union, every field's name, type and
// order, and the defaults.
//
//===----------------------------------------------------------------------===//
#include "runtime/schema/Ops.h"
#include "runtime/schema/PlanFormat.h"

#include <gtest/gtest.h>

#include <flatbuffers/minireflect.h>

#include <set>
#include <string>

namespace volt::plan {
namespace {

/// The reflection table of each kind's params table, in kind order.
const flatbuffers::TypeTable *const kTypeTables[] = {
#define VOLT_OP(Kind, Summary) Kind##ParamsTypeTable(),
#include "runtime/schema/Ops.def"
};

flatbuffers::ElementaryType expectedType(ops::ParamType t) {
  switch (t) {
  case ops::ParamType::U32:
    return flatbuffers::ET_UINT;
  case ops::ParamType::F32:
    return flatbuffers::ET_FLOAT;
  case ops::ParamType::Bool:
    return flatbuffers::ET_BOOL;
  case ops::ParamType::DType:
  case ops::ParamType::Epilogue:
    return flatbuffers::ET_UCHAR;
  }
  return flatbuffers::ET_SEQUENCE;
}

TEST(OpSchema, EveryKindHasItsValueNameAndParamsTable) {
  const auto kinds = ops::allOps();
  ASSERT_EQ(kinds.size(), std::size(EnumValuesOpKind()));
  ASSERT_EQ(kinds.size(), std::size(kTypeTables));
  // The union has NONE first, then one member per kind.
  ASSERT_EQ(kinds.size() + 1, std::size(EnumValuesOpParams()));
  for (const ops::OpDesc &d : kinds) {
    SCOPED_TRACE(std::string(d.name));
    const auto kind = static_cast<OpKind>(d.kind);
    EXPECT_EQ(EnumNameOpKind(kind), d.name);
    EXPECT_EQ(EnumNameOpParams(paramsTypeOf(kind)), std::string(d.name) + "Params");
    EXPECT_EQ(ops::opByName(d.name), &d);
    EXPECT_EQ(ops::opByValue(d.kind), &d);
  }
  EXPECT_EQ(ops::opByName("Convolution"), nullptr);
  EXPECT_EQ(ops::opByValue(static_cast<uint16_t>(kinds.size())), nullptr);
}

TEST(OpSchema, ParamsTablesHaveTheDefinedFieldsInOrder) {
  for (const ops::OpDesc &d : ops::allOps()) {
    SCOPED_TRACE(std::string(d.name));
    const flatbuffers::TypeTable *t = kTypeTables[d.kind];
    ASSERT_EQ(t->st, flatbuffers::ST_TABLE);
    ASSERT_EQ(t->num_elems, d.params.size());
    for (size_t i = 0; i < d.params.size(); ++i) {
      const ops::ParamDesc &p = d.params[i];
      EXPECT_EQ(t->names[i], p.name);
      EXPECT_EQ(t->type_codes[i].base_type, expectedType(p.type)) << p.name;
      EXPECT_EQ(t->type_codes[i].is_repeating, 0) << p.name;
      if (p.type == ops::ParamType::DType || p.type == ops::ParamType::Epilogue) {
        // An enum field names its enum's table.
        ASSERT_GE(t->type_codes[i].sequence_ref, 0) << p.name;
        const flatbuffers::TypeTable *e = t->type_refs[t->type_codes[i].sequence_ref]();
        EXPECT_EQ(e, p.type == ops::ParamType::DType ? DTypeTypeTable() : EpilogueTypeTable())
            << p.name;
      }
    }
  }
}

TEST(OpSchema, DefaultsAreTheDefinedOnes) {
  // The object API's structs start at the schema's defaults.
  QLinearParamsT q;
  EXPECT_EQ(q.out_dtype, DType::F16);
  EXPECT_EQ(q.epilogue, Epilogue::None);
  MoeGroupedQLinearParamsT m;
  EXPECT_EQ(m.epilogue, Epilogue::None);
  LinearParamsT l;
  EXPECT_EQ(l.out_dtype, DType::F16);
  // Every default Ops.def names is a value of its enum.
  for (const ops::OpDesc &d : ops::allOps())
    for (const ops::ParamDesc &p : d.params) {
      if (p.required())
        continue;
      SCOPED_TRACE(std::string(d.name) + "." + std::string(p.name));
      std::set<std::string> names;
      if (p.type == ops::ParamType::DType)
        for (DType v : EnumValuesDType())
          names.insert(EnumNameDType(v));
      else if (p.type == ops::ParamType::Epilogue)
        for (Epilogue v : EnumValuesEpilogue())
          names.insert(EnumNameEpilogue(v));
      else
        continue;
      EXPECT_TRUE(names.count(std::string(p.defaultValue)));
    }
}

TEST(OpSchema, OperandsAreNamedOnceAndOptionalOnesMakeTheRange) {
  for (const ops::OpDesc &d : ops::allOps()) {
    SCOPED_TRACE(std::string(d.name));
    EXPECT_FALSE(d.operands.empty());
    std::set<std::string_view> seen;
    for (const ops::OperandDesc &o : d.operands)
      EXPECT_TRUE(seen.insert(o.name).second) << o.name;
    std::set<std::string_view> params;
    for (const ops::ParamDesc &p : d.params)
      EXPECT_TRUE(params.insert(p.name).second) << p.name;
    EXPECT_LE(d.minOperands(), d.maxOperands());
  }
  EXPECT_EQ(ops::opByName("Linear")->minOperands(), 3u);
  EXPECT_EQ(ops::opByName("Linear")->maxOperands(), 4u);
  EXPECT_EQ(ops::opByName("QkNormRope")->minOperands(), 2u);
  EXPECT_EQ(ops::opByName("QkNormRope")->maxOperands(), 4u);
}

TEST(OpSchema, SnakeCaseIsHowIrAndMessagesSpellSchemaNames) {
  EXPECT_EQ(ops::snakeCase("SlotMapping"), "slot_mapping");
  EXPECT_EQ(ops::snakeCase("LogitsRows"), "logits_rows");
  EXPECT_EQ(ops::snakeCase("F16"), "f16");
  EXPECT_EQ(ops::snakeCase("F8E4M3"), "f8e4m3");
  EXPECT_EQ(ops::snakeCase("SiluMul"), "silu_mul");
  EXPECT_EQ(ops::snakeCase("None"), "none");
}

} // namespace
} // namespace volt::plan
