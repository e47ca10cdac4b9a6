//===- WeightPackerTest.cpp - row views of checkpoint tensors -------------===//
//
// The packer's reading of parts that are rows of one tensor (RowView): flat
// ranges (in_proj_qkv [q | k | v]), runs grouped per head (in_proj_qkvz,
// q_proj [q_h | gate_h]), one expert of a fused [E, 2I, H] tensor, a conv
// weight [C, 1, K]; each sharded over ranks as the sharding pass does, and
// each wrong view refused by name.
//
//===----------------------------------------------------------------------===//
#include "compiler/pack/WeightPacker.h"

#include "TestFiles.h"

#include "compiler/model/Checkpoint.h"

#include <cstring>
#include <gtest/gtest.h>

namespace volt::pack {
namespace {

using model::DType;

// An F32 tensor whose element (r, c) is 100 * r + c (per expert of a
// stacked one: 1000 * e added), so every copied value says where it came
// from.
std::vector<uint8_t> numbered(std::vector<int64_t> shape, bool stacked) {
  int64_t experts = stacked ? shape[0] : 1;
  int64_t rows = shape[stacked ? 1 : 0];
  int64_t cols = 1;
  for (size_t d = stacked ? 2 : 1; d < shape.size(); ++d)
    cols *= shape[d];
  std::vector<uint8_t> bytes;
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float v = static_cast<float>(1000 * e + 100 * r + c);
        const auto *p = reinterpret_cast<const uint8_t *>(&v);
        bytes.insert(bytes.end(), p, p + 4);
      }
  return bytes;
}

class WeightPacker : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = model::testing::freshDir("weight-packer");
    model::SafetensorsWriter w;
    for (auto [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"flat", {10, 2}},       // q(2) k(2) v(6)
             {"grouped", {12, 2}},    // 4 groups of [q(1) v(2)]
             {"fused", {3, 4, 2}},    // 3 experts of [gate(2) up(2)]
             {"conv", {6, 1, 3}}}) {  // [C, 1, K]
      w.add(name, DType::F32, shape, numbered(shape, name == "fused"));
    }
    // An NVFP4 module of 4 rows, K = 32: packed byte (r, j) = 16 r + j,
    // block scale (r, b) = 0x30 + 2 r + b.
    std::vector<uint8_t> packed, scales;
    for (int r = 0; r < 4; ++r) {
      for (int j = 0; j < 16; ++j)
        packed.push_back(static_cast<uint8_t>(16 * r + j));
      for (int b = 0; b < 2; ++b)
        scales.push_back(static_cast<uint8_t>(0x30 + 2 * r + b));
    }
    w.add("m.weight", DType::U8, {4, 16}, packed);
    w.add("m.weight_scale", DType::F8E4M3, {4, 2}, scales);
    // FP8 E4M3 weights: element (r, c) of f8.weight is 1.0 (0x38) in column
    // 0 and 1.5 (0x3C) in column 1, with a scale per tensor (0.5), per row
    // (r + 1) and per 128 x 128 block (2, then 3 from row 128 on).
    auto e4m3 = [](int64_t rows) {
      std::vector<uint8_t> b;
      for (int64_t r = 0; r < rows; ++r)
        b.insert(b.end(), {0x38, 0x3C});
      return b;
    };
    auto f32s = [](std::vector<float> v) {
      std::vector<uint8_t> b(v.size() * 4);
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    w.add("f8.weight", DType::F8E4M3, {4, 2}, e4m3(4));
    w.add("f8.weight_scale", DType::F32, {}, f32s({0.5f}));
    w.add("f8.row_scale", DType::F32, {4}, f32s({1, 2, 3, 4}));
    w.add("f8big.weight", DType::F8E4M3, {130, 2}, e4m3(130));
    w.add("f8big.weight_scale_inv", DType::F32, {2, 1}, f32s({2, 3}));
    ASSERT_TRUE(w.write(dir_ / "model.safetensors"));
    auto ckpt = model::Checkpoint::open(dir_);
    ASSERT_TRUE(ckpt) << ckpt.message();
    ckpt_ = std::make_unique<model::Checkpoint>(std::move(*ckpt));
  }

  // The entry's values (FP32 entries) as packed for `rank`, or the error.
  Result<std::vector<float>> pack(const WeightSpec &spec, int rank = 0) {
    auto path = dir_ / ("rank" + std::to_string(rank) + ".bin");
    VOLT_ASSIGN_OR_RETURN(PackResult r, writePack(*ckpt_, {spec}, rank, path));
    std::string bytes = model::testing::slurp(path);
    std::vector<float> values(r.entries[0].bytes / 4);
    std::memcpy(values.data(), bytes.data() + r.entries[0].offset, values.size() * 4);
    return values;
  }

  static WeightSpec spec(std::vector<std::string> names, std::vector<int64_t> partRows,
                         std::vector<int64_t> shape, std::vector<RowView> views) {
    WeightSpec s;
    s.name = "entry";
    s.names = std::move(names);
    s.partRows = std::move(partRows);
    s.elementBytes = 4;
    s.shape = std::move(shape);
    s.views = std::move(views);
    return s;
  }

  std::filesystem::path dir_;
  std::unique_ptr<model::Checkpoint> ckpt_;
};

// Rows of `flat`'s v part, split over two ranks: rank 1 holds v's last
// three rows (7, 8, 9); q and k by rows likewise.
TEST_F(WeightPacker, FlatPartsSplitOverRanks) {
  WeightSpec s = spec({"flat", "flat", "flat"}, {1, 1, 3}, {5, 2},
                      {{-1, 0, 0, 1, 10}, {-1, 2, 0, 1, 10}, {-1, 4, 0, 1, 10}});
  s.shards = {{0, 2, 1}, {0, 2, 1}, {0, 2, 1}};
  auto r1 = pack(s, 1);
  ASSERT_TRUE(r1) << r1.message();
  EXPECT_EQ(*r1, (std::vector<float>{100, 101, 300, 301, 700, 701, 800, 801, 900, 901}));
  auto r0 = pack(s, 0);
  ASSERT_TRUE(r0) << r0.message();
  EXPECT_EQ(*r0, (std::vector<float>{0, 1, 200, 201, 400, 401, 500, 501, 600, 601}));
}

// Runs grouped per head: q is rows 0, 3, 6, 9 (one per group), v rows
// 1-2, 4-5, 7-8, 10-11; two ranks take two groups each.
TEST_F(WeightPacker, GroupedRunsSplitByWholeGroups) {
  WeightSpec s = spec({"grouped", "grouped"}, {2, 4}, {6, 2},
                      {{-1, 0, 3, 4, 12}, {-1, 1, 3, 4, 12}});
  s.shards = {{0, 2, 1}, {0, 2, 1}};
  auto r1 = pack(s, 1);
  ASSERT_TRUE(r1) << r1.message();
  EXPECT_EQ(*r1, (std::vector<float>{600, 601, 900, 901, 700, 701, 800, 801, 1000, 1001, 1100,
                                     1101}));
  // Unsharded: all four groups in order.
  s.shards.clear();
  s.partRows = {4, 8};
  s.shape = {12, 2};
  auto all = pack(s);
  ASSERT_TRUE(all) << all.message();
  EXPECT_EQ((*all)[2], 300);
  EXPECT_EQ((*all)[8], 100);
}

// Experts stacked from one fused tensor: gate is rows 0-1 of each expert,
// up rows 2-3.
TEST_F(WeightPacker, OneExpertOfAFusedTensor) {
  WeightSpec s = spec({"fused", "fused", "fused", "fused"}, {2, 2}, {2, 4, 2},
                      {{2, 0, 0, 1, 4}, {2, 2, 0, 1, 4}, {0, 0, 0, 1, 4}, {0, 2, 0, 1, 4}});
  s.experts = 2;
  auto r = pack(s);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(*r, (std::vector<float>{2000, 2001, 2100, 2101, 2200, 2201, 2300, 2301, 0, 1, 100,
                                    101, 200, 201, 300, 301}));
}

// A conv weight [C, 1, K] reads as [C, K]; its q|k|v channels split over
// ranks like the projection that feeds it.
TEST_F(WeightPacker, ConvWeightWithAMiddleDimensionOfOne) {
  WeightSpec s = spec({"conv", "conv"}, {1, 2}, {3, 3}, {{-1, 0, 0, 1, 6}, {-1, 2, 0, 1, 6}});
  s.shards = {{0, 2, 1}, {0, 2, 1}};
  auto r = pack(s, 1);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(*r, (std::vector<float>{100, 101, 102, 400, 401, 402, 500, 501, 502}));
}

// NVFP4 data and block scales are read through the same runs: rows 1 and 3
// of the module (a part grouped in 2 runs of 1 row, stride 2).
TEST_F(WeightPacker, Nvfp4RowsThroughAView) {
  WeightSpec s = spec({"m"}, {2}, {2, 32}, {{-1, 1, 2, 2, 4}});
  s.nvfp4 = true;
  s.globalScales = {1.0f};
  auto path = dir_ / "nvfp4.bin";
  auto r = writePack(*ckpt_, {s}, 0, path);
  ASSERT_TRUE(r) << r.message();
  std::string bytes = model::testing::slurp(path);
  const auto *e = reinterpret_cast<const uint8_t *>(bytes.data()) + r->entries[0].offset;
  EXPECT_EQ(e[0], 16);
  EXPECT_EQ(e[15], 31);
  EXPECT_EQ(e[16], 48);
  EXPECT_EQ(e[31], 63);
  const uint8_t *sc = e + r->entries[0].scalesOffset;
  EXPECT_EQ((std::vector<uint8_t>(sc, sc + 4)), (std::vector<uint8_t>{0x32, 0x33, 0x36, 0x37}));
}

// An NVFP4 MoE entry ends with the grouped kernels' epilogue scales: one
// f32 per expert and part, 2^14 x its global scale, 256-byte aligned after
// the block scales (where codegen's nvfp4EpilogueOffset points: 512 for
// [2, 2, 32], tests/unit/codegen/LaunchesTest.cpp).
TEST_F(WeightPacker, Nvfp4MoeEntryEndsWithItsEpilogueScales) {
  WeightSpec s = spec({"m", "m"}, {2}, {2, 2, 32}, {{-1, 1, 2, 2, 4}, {-1, 1, 2, 2, 4}});
  s.nvfp4 = true;
  s.experts = 2;
  s.globalScales = {0.5f, 0.25f};
  uint64_t scalesAt = 0, epilogueAt = 0;
  const uint64_t planned = entryBytes(s, &scalesAt, &epilogueAt);
  EXPECT_EQ(scalesAt, 256u);
  EXPECT_EQ(epilogueAt, 512u);
  EXPECT_EQ(planned, 512u + 2 * 4);
  auto path = dir_ / "moe.bin";
  auto r = writePack(*ckpt_, {s}, 0, path);
  ASSERT_TRUE(r) << r.message();
  const PackedEntry &entry = r->entries[0];
  EXPECT_EQ(entry.scalesOffset, scalesAt);
  EXPECT_EQ(entry.epilogueOffset, epilogueAt);
  EXPECT_EQ(entry.bytes, planned);
  std::string bytes = model::testing::slurp(path);
  float v[2];
  std::memcpy(v, bytes.data() + entry.offset + entry.epilogueOffset, sizeof v);
  EXPECT_EQ(v[0], 0.5f * 16384.0f);
  EXPECT_EQ(v[1], 0.25f * 16384.0f);
  // One global scale per expert and part, or the entry is refused.
  s.globalScales = {0.5f};
  auto wrong = writePack(*ckpt_, {s}, 0, dir_ / "wrong.bin");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("1 global scales for 2 experts x 1 parts"), std::string::npos)
      << wrong.message();
}

// FP8 entries are E4M3 × scale, each scale as its shape says, sharded rows
// taking their own rows' scales; a missing or misshapen scale is named.
TEST_F(WeightPacker, Fp8TimesItsScalePerTensorRowAndBlock) {
  WeightSpec s = spec({"f8.weight"}, {4}, {4, 2}, {});
  s.scaleNames = {"f8.weight_scale"};
  auto perTensor = pack(s);
  ASSERT_TRUE(perTensor) << perTensor.message();
  EXPECT_EQ(*perTensor, (std::vector<float>{0.5f, 0.75f, 0.5f, 0.75f, 0.5f, 0.75f, 0.5f, 0.75f}));

  s.scaleNames = {"f8.row_scale"};
  s.partRows = {2};
  s.shape = {2, 2};
  s.shards = {{0, 2, 1}};
  auto perRow = pack(s, 1);
  ASSERT_TRUE(perRow) << perRow.message();
  EXPECT_EQ(*perRow, (std::vector<float>{3, 4.5f, 4, 6}));

  WeightSpec big = spec({"f8big.weight"}, {130}, {130, 2}, {});
  big.scaleNames = {"f8big.weight_scale_inv"};
  auto perBlock = pack(big);
  ASSERT_TRUE(perBlock) << perBlock.message();
  EXPECT_EQ((*perBlock)[127 * 2], 2.0f);
  EXPECT_EQ((*perBlock)[128 * 2 + 1], 4.5f);

  WeightSpec none = spec({"f8.weight"}, {4}, {4, 2}, {});
  auto missing = pack(none);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("'f8.weight' is FP8 and the plan names no scale"),
            std::string::npos)
      << missing.message();
  none.scaleNames = {"f8big.weight_scale_inv"};
  auto misshapen = pack(none);
  ASSERT_FALSE(misshapen);
  EXPECT_NE(misshapen.message().find("'f8big.weight_scale_inv': shape [2, 1] is not a scale of "
                                     "the [4, 2] FP8 weight"),
            std::string::npos)
      << misshapen.message();
  none.scaleNames = {"f8.absent"};
  auto absent = pack(none);
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.message().find("scale tensor 'f8.absent' is not in the checkpoint"),
            std::string::npos)
      << absent.message();
}

// FP8 rows: the E4M3 bytes as they are, then at scalesOffset one F32
// scale per row (the per-tensor scale repeated; this rank's rows of a
// per-row scale); a block-scaled tensor is refused for this layout.
TEST_F(WeightPacker, Fp8RowsKeepTheBytesAndAScalePerRow) {
  auto packBytes = [&](const WeightSpec &spec, int rank,
                       PackedEntry &entry) -> Result<std::string> {
    auto path = dir_ / ("fp8rank" + std::to_string(rank) + ".bin");
    VOLT_ASSIGN_OR_RETURN(PackResult r, writePack(*ckpt_, {spec}, rank, path));
    entry = r.entries[0];
    return model::testing::slurp(path).substr(r.entries[0].offset, r.entries[0].bytes);
  };
  auto scalesOf = [](const std::string &bytes, uint64_t offset, size_t rows) {
    std::vector<float> v(rows);
    std::memcpy(v.data(), bytes.data() + offset, rows * 4);
    return v;
  };
  WeightSpec s = spec({"f8.weight", "f8.weight"}, {4, 4}, {8, 2}, {});
  s.fp8 = true;
  s.elementBytes = 1;
  s.scaleNames = {"f8.weight_scale", "f8.row_scale"};
  PackedEntry e;
  auto both = packBytes(s, 0, e);
  ASSERT_TRUE(both) << both.message();
  EXPECT_EQ(e.scalesOffset, 256u);
  EXPECT_EQ(e.bytes, entryBytes(s));
  EXPECT_EQ(both->substr(0, 16), std::string("\x38\x3C\x38\x3C\x38\x3C\x38\x3C"
                                             "\x38\x3C\x38\x3C\x38\x3C\x38\x3C",
                                             16));
  EXPECT_EQ(scalesOf(*both, e.scalesOffset, 8),
            (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f, 1, 2, 3, 4}));

  // Rows split over two ranks: rank 1 holds rows 2 and 3 of each part.
  s.partRows = {2, 2};
  s.shape = {4, 2};
  s.shards = {{0, 2, 1}};
  auto rank1 = packBytes(s, 1, e);
  ASSERT_TRUE(rank1) << rank1.message();
  EXPECT_EQ(scalesOf(*rank1, e.scalesOffset, 4), (std::vector<float>{0.5f, 0.5f, 3, 4}));

  WeightSpec block = spec({"f8big.weight"}, {130}, {130, 2}, {});
  block.fp8 = true;
  block.elementBytes = 1;
  block.scaleNames = {"f8big.weight_scale_inv"};
  auto refused = packBytes(block, 0, e);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find("scales 128 x 128 blocks, but the plan keeps this entry as "
                                   "FP8 rows"),
            std::string::npos)
      << refused.message();
  WeightSpec dense = spec({"m.weight"}, {4}, {4, 16}, {});
  dense.fp8 = true;
  dense.elementBytes = 1;
  dense.scaleNames = {"f8.weight_scale"};
  auto notFp8 = packBytes(dense, 0, e);
  ASSERT_FALSE(notFp8);
  EXPECT_NE(notFp8.message().find("the plan keeps this entry as FP8 E4M3 rows"),
            std::string::npos)
      << notFp8.message();
}

TEST_F(WeightPacker, WrongViewsAreRefusedByName) {
  // Rows past the tensor's end.
  WeightSpec past = spec({"flat"}, {4}, {4, 2}, {{-1, 8, 0, 1, 10}});
  EXPECT_EQ(pack(past).message(),
            "weight entry 'entry': part 0 reads rows [8, 12) of a tensor of 10");
  // Runs that do not split over the ranks.
  WeightSpec runs = spec({"grouped"}, {2}, {2, 2}, {{-1, 0, 3, 4, 12}});
  runs.shards = {{0, 2, 1}};
  runs.partRows = {1};
  runs.shape = {1, 2};
  runs.views[0].groups = 3;
  EXPECT_EQ(pack(runs, 1).message(),
            "weight entry 'entry': part 0 of 2 rows in 3 runs does not split over 2 ranks");
  // The tensor is not what the view says.
  WeightSpec shape = spec({"flat"}, {4}, {4, 2}, {{-1, 0, 0, 1, 12}});
  EXPECT_EQ(pack(shape).message(),
            "tensor 'flat': shape [10, 2], the plan expects [12, 2]");
  WeightSpec expert = spec({"fused"}, {2}, {2, 2}, {{3, 0, 0, 1, 4}});
  EXPECT_EQ(pack(expert).message(),
            "tensor 'fused': shape [3, 4, 2], the plan expects [4, 4, 2] (at least that many "
            "experts)");
  WeightSpec count = spec({"flat", "flat"}, {2, 2}, {4, 2}, {{-1, 0, 0, 1, 10}});
  EXPECT_EQ(pack(count).message(), "weight entry 'entry': 1 row views for 2 names");
}

} // namespace
} // namespace volt::pack
