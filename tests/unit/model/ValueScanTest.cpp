// voltc check --deep's scan: NaN, infinity and negative scales in every
// floating-point dtype, located by tensor and element, across chunk and
// thread boundaries; packed and integer data are not read.
#include "compiler/model/Checkpoint.h"
#include "compiler/model/ValueScan.h"
#include "runtime/numerics/Half.h"
#include "tests/unit/model/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace volt::model {
namespace {

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &values) {
  std::vector<uint8_t> b(values.size() * sizeof(T));
  std::memcpy(b.data(), values.data(), b.size());
  return b;
}

ValueFinding scan(const std::vector<uint8_t> &data, DType dtype, bool scale = false) {
  ValueFinding f;
  scanValues(data, dtype, scale, f);
  return f;
}

TEST(ValueScan, Bf16) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  std::vector<uint16_t> v(1000, floatToBf16(0.5f));
  ValueFinding clean;
  EXPECT_TRUE(scanValues(bytesOf(v), DType::BF16, false, clean));
  v[17] = floatToBf16(nan);
  v[400] = floatToBf16(-inf);
  v[401] = floatToBf16(inf);
  v[500] = floatToBf16(-2.0f); // negative weights are fine
  ValueFinding f = scan(bytesOf(v), DType::BF16);
  EXPECT_EQ(f.nans, 1u);
  EXPECT_EQ(f.infinities, 2u);
  EXPECT_EQ(f.negatives, 0u);
  EXPECT_EQ(f.firstIndex, 17u);
  // The largest finite BF16 is not infinite.
  std::vector<uint16_t> big = {0x7f7f, 0xff7f};
  ValueFinding finite;
  EXPECT_TRUE(scanValues(bytesOf(big), DType::BF16, false, finite));
}

TEST(ValueScan, F16AndF32) {
  std::vector<uint16_t> h = {floatToHalf(1.0f), 0x7c00, 0x7e00, 0x7bff};
  ValueFinding f = scan(bytesOf(h), DType::F16);
  EXPECT_EQ(f.infinities, 1u);
  EXPECT_EQ(f.nans, 1u);
  EXPECT_EQ(f.firstIndex, 1u);
  std::vector<float> s = {1.0f, std::numeric_limits<float>::max(), -0.0f,
                          std::nanf(""), -std::numeric_limits<float>::infinity()};
  f = scan(bytesOf(s), DType::F32);
  EXPECT_EQ(f.nans, 1u);
  EXPECT_EQ(f.infinities, 1u);
  EXPECT_EQ(f.firstIndex, 3u);
}

// E4M3FN has no infinity: only S.1111.111 is NaN; 0x7e (448) is finite.
// A scale tensor must also be >= 0 (-0 is allowed).
TEST(ValueScan, Fp8ScalesAndNegatives) {
  std::vector<uint8_t> e4m3 = {0x38, 0x7e, 0xfe, 0x7f, 0xff, 0x80};
  ValueFinding w = scan(e4m3, DType::F8E4M3, false);
  EXPECT_EQ(w.nans, 2u);
  EXPECT_EQ(w.infinities, 0u);
  EXPECT_EQ(w.negatives, 0u);
  EXPECT_EQ(w.firstIndex, 3u);
  ValueFinding s = scan(e4m3, DType::F8E4M3, true);
  EXPECT_EQ(s.nans, 2u);
  EXPECT_EQ(s.negatives, 1u); // 0xfe = -448; 0x80 is -0
  EXPECT_EQ(s.firstIndex, 2u);
  std::vector<uint8_t> e5m2 = {0x3c, 0x7c, 0x7d};
  ValueFinding f = scan(e5m2, DType::F8E5M2);
  EXPECT_EQ(f.infinities, 1u);
  EXPECT_EQ(f.nans, 1u);
  std::vector<uint8_t> e8m0 = {0x7f, 0xfe, 0xff};
  f = scan(e8m0, DType::F8E8M0, true);
  EXPECT_EQ(f.nans, 1u);
  EXPECT_EQ(f.negatives, 0u); // no sign bit
}

TEST(ValueScan, WhichTensorsAreScales) {
  EXPECT_TRUE(isScaleTensor("model.layers.0.mlp.experts.3.down_proj.weight_scale"));
  EXPECT_TRUE(isScaleTensor("model.layers.0.mlp.experts.3.down_proj.weight_scale_2"));
  EXPECT_TRUE(isScaleTensor("model.layers.0.self_attn.q_proj.input_scale"));
  EXPECT_TRUE(isScaleTensor("model.layers.0.self_attn.q_proj.weight_scale_inv"));
  EXPECT_TRUE(isScaleTensor("model.layers.0.self_attn.q_proj.weight_global_scale"));
  EXPECT_FALSE(isScaleTensor("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_FALSE(isScaleTensor("model.layers.0.linear_attn.A_log"));
  EXPECT_FALSE(isScaleTensor("model.norm.weight"));
  EXPECT_FALSE(isScannedDType(DType::U8));
  EXPECT_FALSE(isScannedDType(DType::I32));
  EXPECT_TRUE(isScannedDType(DType::F8E4M3));
}

// A whole checkpoint: tensors larger than one chunk (8 MiB), the bad value
// far into one, two threads; findings come out in checkpoint order, with
// the element index counted from the tensor's start; U8 data is skipped.
TEST(ValueScan, Checkpoint) {
  auto dir = testing::freshDir("value-scan");
  const size_t big = (9u << 20) / 2 + 123; // BF16 elements: more than one chunk
  std::vector<uint16_t> a(big, floatToBf16(0.25f));
  a[big - 5] = floatToBf16(std::numeric_limits<float>::infinity());
  std::vector<uint16_t> b(big, floatToBf16(-0.25f));
  std::vector<uint8_t> packed(4096, 0xff); // NVFP4 nibbles: -6, never NaN
  std::vector<uint8_t> scales(256, 0x38);
  scales[200] = 0xb8; // -1.0
  SafetensorsWriter w;
  w.add("a.weight", DType::BF16, {static_cast<int64_t>(big)}, bytesOf(a));
  w.add("b.weight", DType::BF16, {static_cast<int64_t>(big)}, bytesOf(b));
  w.add("c.weight", DType::U8, {4096}, packed);
  w.add("c.weight_scale", DType::F8E4M3, {256}, scales);
  ASSERT_TRUE(w.write(dir / "model.safetensors").ok());
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.message();
  int calls = 0;
  uint64_t last = 0;
  ValueScanOptions options;
  options.progress = [&](const ValueScanProgress &p) {
    ++calls;
    EXPECT_GE(p.bytesDone, last);
    last = p.bytesDone;
    EXPECT_EQ(p.bytesTotal, big * 4 + 256);
  };
  ValueScanReport r = scanCheckpoint(*ckpt, options);
  EXPECT_GE(calls, 1);
  EXPECT_EQ(last, big * 4 + 256);
  EXPECT_EQ(r.tensorsScanned, 3u);
  EXPECT_EQ(r.bytesScanned, big * 4 + 256);
  EXPECT_EQ(r.bytesSkipped, 4096u);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].tensor, "a.weight");
  EXPECT_EQ(r.findings[0].infinities, 1u);
  EXPECT_EQ(r.findings[0].firstIndex, big - 5);
  EXPECT_EQ(r.findings[0].file, "model.safetensors");
  EXPECT_EQ(r.findings[1].tensor, "c.weight_scale");
  EXPECT_EQ(r.findings[1].negatives, 1u);
  EXPECT_EQ(r.findings[1].firstIndex, 200u);
}

} // namespace
} // namespace volt::model
