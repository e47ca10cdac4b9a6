// The safetensors reader: every rule of the format, each broken once.
#include "compiler/model/Safetensors.h"

#include "TestFiles.h"

#include <gtest/gtest.h>

namespace volt::model {
namespace {

using testing::freshDir;
using testing::writeRaw;

Result<std::unique_ptr<SafetensorsFile>> openRaw(const std::string &header,
                                                 std::vector<uint8_t> data,
                                                 std::optional<uint64_t> len = {}) {
  auto path = freshDir("st") / "x.safetensors";
  writeRaw(path, header, data, len);
  return SafetensorsFile::open(path);
}

void expectError(const Result<std::unique_ptr<SafetensorsFile>> &r, const std::string &words) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << words;
  EXPECT_NE(r.message().find(words), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("x.safetensors"), std::string::npos) << r.message();
}

TEST(Safetensors, WriterOutputReadsBack) {
  auto path = freshDir("st-rt") / "m.safetensors";
  SafetensorsWriter w;
  w.add("b", DType::F32, {2}, {0, 0, 128, 63, 0, 0, 0, 64});
  w.add("a", DType::U8, {3}, {1, 2, 3});
  w.addZeros("z", DType::BF16, {4, 4});
  w.add("scalar", DType::F32, {}, {0, 0, 128, 63});
  w.setMetadata("format", "pt");
  ASSERT_TRUE(w.write(path).ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.message();
  const auto &h = (*file)->header();
  ASSERT_EQ(h.tensors.size(), 4u);
  EXPECT_EQ(h.dataOffset % 8, 0u) << "data starts 8-byte aligned";
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.tensors[0].name, "b");
  EXPECT_EQ((*file)->data(h.tensors[1])[2], 3);
  EXPECT_EQ(h.tensors[2].numBytes(), 32u);
  for (uint8_t byte : (*file)->data(h.tensors[2]))
    EXPECT_EQ(byte, 0);
  EXPECT_TRUE(h.tensors[3].shape.empty()) << "rank-0 tensors are legal";
}

TEST(Safetensors, TooSmallFile) {
  auto path = freshDir("st") / "x.safetensors";
  testing::spit(path, "abc");
  expectError(SafetensorsFile::open(path), "starts with an 8-byte");
}

TEST(Safetensors, HeaderLengthLargerThanFile) {
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", {1}, 5000),
              "runs past the end of the file");
}

TEST(Safetensors, HeaderLengthOverLimit) {
  expectError(openRaw("{}", {}, 200'000'000), "exceeds the limit");
}

TEST(Safetensors, HeaderNotJson) { expectError(openRaw("{nope", {}), "not valid JSON"); }

TEST(Safetensors, HeaderNotAnObject) { expectError(openRaw("[1, 2]", {}), "start with '{'"); }

TEST(Safetensors, UnknownDtype) {
  expectError(openRaw(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", {1}),
              "unsupported dtype 'Q4'");
}

TEST(Safetensors, DtypeShapeMismatch) {
  expectError(openRaw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", {1, 2, 3, 4}),
              "needs 8 bytes");
}

TEST(Safetensors, ShapeOverflow) {
  expectError(
      openRaw(
          R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
          {1, 2, 3, 4}),
      "overflows");
}

TEST(Safetensors, NegativeShape) {
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", {1}),
              "non-negative");
}

TEST(Safetensors, OffsetsEndBeforeBegin) {
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}})", {1, 2}),
              "end before they begin");
}

TEST(Safetensors, OverlappingOffsets) {
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                      R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                      {1, 2, 3}),
              "overlap");
}

TEST(Safetensors, HoleBetweenTensors) {
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                      R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                      {1, 2, 3}),
              "belong to no tensor");
}

TEST(Safetensors, TrailingBytes) {
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", {1, 2}),
              "after the last tensor");
}

TEST(Safetensors, TruncatedDataNamesTheTensor) {
  auto r = openRaw(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                   R"("big":{"dtype":"F32","shape":[4],"data_offsets":[2,18]}})",
                   {1, 2, 3});
  expectError(r, "truncated");
  EXPECT_NE(r.message().find("'big'"), std::string::npos) << r.message();
}

TEST(Safetensors, MissingFields) {
  expectError(openRaw(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", {1}), "'dtype'");
  expectError(openRaw(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", {1}), "'shape'");
  expectError(openRaw(R"({"a":{"dtype":"U8","shape":[1]}})", {1}), "'data_offsets'");
}

TEST(Safetensors, MetadataMustHoldStrings) {
  expectError(openRaw(R"({"__metadata__":{"x":1}})", {}), "must be a string");
}

TEST(Safetensors, EmptyHeaderIsValid) {
  auto r = openRaw("{}", {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE((*r)->header().tensors.empty());
}

} // namespace
} // namespace volt::model
