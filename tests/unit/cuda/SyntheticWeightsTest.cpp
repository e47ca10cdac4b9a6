//===- SyntheticWeightsTest.cpp - the cuda backend's synthetic weights ----===//
//
// A plan copied without its weight pack, loaded without it, and a
// CudaBackend created on FakeCuda in synthetic mode: every weight entry's
// device memory is filled (read back from the fake), the NVFP4 block
// scales are finite positive E4M3, the dense values small (1-D entries
// near 1), no pack is uploaded, and steps run. The fill itself
// (syntheticFill) is checked against the plan: every byte of every entry
// covered once, copies inside their pattern.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/SyntheticWeights.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"
#include "tests/unit/cuda/FakeCudaHarness.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace volt::cuda::testing {
namespace {

namespace fs = std::filesystem;

/// The GPU plan's file alone, in a folder of its own (no weights.rank0.bin),
/// one per process: ctest runs this binary's tests in parallel processes.
fs::path planWithoutPack() {
  const fs::path source = gpuPlan();
  const fs::path dir = fs::path(VOLT_BINARY_DIR) / "tests" /
                       ("synthetic-weights-plan-" + std::to_string(::getpid()));
  static struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(source, dir / "plan.vplan");
  return dir / "plan.vplan";
}

std::string entryName(const plan::WeightEntry &w) { return w.name() ? w.name()->str() : "?"; }

TEST(SyntheticWeights, LoaderRefusesAMissingPackUnlessAskedNotToLoadIt) {
  const fs::path path = planWithoutPack();
  auto refused = plan::LoadedPlan::load(path);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("weights.rank0.bin"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("copy it beside the plan"), std::string::npos)
      << refused.message();

  plan::LoadOptions options;
  options.loadWeights = false;
  auto loaded = plan::LoadedPlan::load(path, options);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_FALSE((*loaded)->weightsLoaded());
  EXPECT_TRUE((*loaded)->pack(0).empty());
}

TEST(SyntheticWeights, BackendWithoutThePackRefusesUnlessSynthetic) {
  Harness h;
  plan::LoadOptions options;
  options.loadWeights = false;
  auto loaded = plan::LoadedPlan::load(planWithoutPack(), options);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  h.plan = std::move(*loaded);
  ASSERT_FALSE(h.create());
  EXPECT_NE(h.error.find("the weight pack of rank 0 is not loaded"), std::string::npos) << h.error;
}

TEST(SyntheticWeights, FillCoversEveryEntryOnceWithinItsPattern) {
  Harness h;
  const plan::Rank &rank = *h.plan->plan().ranks()->Get(0);
  const uint64_t period = 4096;
  SyntheticFill fill = syntheticFill(rank, period);
  EXPECT_EQ(fill.period, period);
  EXPECT_EQ(fill.patterns.size(), kSyntheticPatternKinds * 2 * period);
  ASSERT_FALSE(fill.scaleCodes.empty());
  for (uint8_t c : fill.scaleCodes) {
    EXPECT_GT(c, 0);
    EXPECT_LT(c, 0x7F);
  }
  // Deterministic.
  SyntheticFill again = syntheticFill(rank, period);
  EXPECT_EQ(fill.patterns, again.patterns);
  ASSERT_EQ(fill.copies.size(), again.copies.size());

  std::vector<uint8_t> covered(rank.pack()->bytes(), 0);
  for (const SyntheticCopy &c : fill.copies) {
    ASSERT_LE(c.to + c.bytes, covered.size());
    if (c.kind != SyntheticKind::Zeros) {
      EXPECT_LE(c.bytes, period);
      EXPECT_LE(c.from + c.bytes, 2 * period);
      EXPECT_EQ(c.from % 256, 0u);
    }
    for (uint64_t i = c.to; i < c.to + c.bytes; ++i)
      ++covered[i];
  }
  // MoE entries' epilogue scales are written from the host, exactly.
  size_t writes = 0;
  for (const SyntheticFill::Write &w : fill.writes) {
    ASSERT_LE(w.to + w.bytes.size(), covered.size());
    for (uint64_t i = w.to; i < w.to + w.bytes.size(); ++i)
      ++covered[i];
    ++writes;
  }
  EXPECT_GT(writes, 0u) << "the plan has no MoE entry to check";
  size_t nvfp4 = 0;
  for (const plan::WeightEntry *w : *rank.weights()) {
    nvfp4 += w->layout() == plan::WeightLayout::Nvfp4RowMajor;
    for (uint64_t i = w->offset(); i < w->offset() + w->bytes(); ++i)
      ASSERT_EQ(covered[i], 1) << entryName(*w) << " byte " << i - w->offset();
  }
  EXPECT_GT(nvfp4, 0u) << "the plan has no NVFP4 entry to check";
  // The pattern of each kind repeats once.
  for (uint32_t k = 0; k < kSyntheticPatternKinds; ++k) {
    const uint8_t *first = fill.patterns.data() + fill.patternOffset(static_cast<SyntheticKind>(k));
    EXPECT_EQ(std::memcmp(first, first + period, period), 0) << "kind " << k;
  }
}

// A plan with FP8 rows (NVIDIA's mixed NVFP4 + FP8 layout): each FP8 entry
// is its E4M3 codes (never NaN, below 2 in magnitude) up to its row scales
// and small FP32 scales after them.
TEST(SyntheticWeights, Fp8EntriesGetFiniteCodesAndSmallRowScales) {
  volt::testing::PlanRequest r;
  r.family = "qwen3.5-moe";
  r.format = mkmodel::Format::ModelOptMixed;
  r.target = "v100-pcie-16gb";
  r.maxNumSeqs = 8;
  r.maxNumBatchedTokens = 64;
  r.extra = "gpu_memory_utilization: 0.1\n";
  auto loaded = plan::LoadedPlan::load(volt::testing::compilePlan(r));
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  const plan::Rank &rank = *(*loaded)->plan().ranks()->Get(0);
  const uint64_t period = 4096;
  SyntheticFill fill = syntheticFill(rank, period);
  const uint8_t *codes = fill.patterns.data() + fill.patternOffset(SyntheticKind::Fp8Codes);
  for (uint64_t i = 0; i < period; ++i)
    ASSERT_EQ(codes[i] & 0x40, 0) << "code " << i << " is " << int(codes[i]);
  size_t fp8 = 0;
  for (const plan::WeightEntry *w : *rank.weights()) {
    if (w->layout() != plan::WeightLayout::Fp8RowScaled)
      continue;
    ++fp8;
    uint64_t codeBytes = 0, scaleBytes = 0;
    for (const SyntheticCopy &c : fill.copies) {
      if (c.to >= w->offset() && c.to < w->offset() + w->scales_offset())
        codeBytes += c.kind == SyntheticKind::Fp8Codes ? c.bytes : 0;
      else if (c.to >= w->offset() + w->scales_offset() && c.to < w->offset() + w->bytes())
        scaleBytes += c.kind == SyntheticKind::Float ? c.bytes : 0;
    }
    EXPECT_EQ(codeBytes, w->scales_offset()) << entryName(*w);
    EXPECT_EQ(scaleBytes, w->bytes() - w->scales_offset()) << entryName(*w);
  }
  EXPECT_GT(fp8, 0u) << "the plan has no FP8 entry to check";
}

TEST(SyntheticWeights, BackendFillsEveryEntryAndRunsSteps) {
  Harness h;
  const uint64_t packBytes = h.plan->plan().ranks()->Get(0)->pack()->bytes();
  plan::LoadOptions loadOptions;
  loadOptions.loadWeights = false;
  auto loaded = plan::LoadedPlan::load(planWithoutPack(), loadOptions);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  h.plan = std::move(*loaded);
  CudaBackendOptions options = h.options();
  options.syntheticWeights = true;
  ASSERT_TRUE(h.create(options)) << h.error;

  // No pack went up: no host-to-device copy of its size; the fill is
  // device-to-device copies.
  for (const FakeCall &c : h.fake.calls())
    if (c.name == "cuMemcpyHtoD")
      EXPECT_NE(c.count, packBytes);
  EXPECT_GT(h.fake.count("cuMemcpyDtoDAsync"), 0u);

  // The weights: the one allocation of the pack's size (the patterns are
  // freed again).
  uint64_t base = 0;
  for (const auto &[at, bytes] : h.fake.allocations(0))
    if (bytes == packBytes) {
      ASSERT_EQ(base, 0u) << "two allocations of the pack's size";
      base = at;
    }
  ASSERT_NE(base, 0u);

  const plan::Rank &rank = *h.plan->plan().ranks()->Get(0);
  size_t nvfp4 = 0, matrices = 0, vectors = 0, moeEntries = 0;
  for (const plan::WeightEntry *w : *rank.weights()) {
    const std::string name = entryName(*w);
    const uint8_t *bytes = h.fake.deviceBytes(0, base + w->offset(), w->bytes(), name);
    ASSERT_NE(bytes, nullptr);
    if (w->layout() == plan::WeightLayout::Nvfp4RowMajor) {
      ++nvfp4;
      const uint64_t scalesAt = w->scales_offset();
      size_t nonZero = 0;
      for (uint64_t i = 0; i < scalesAt; ++i)
        nonZero += bytes[i] != 0;
      EXPECT_GT(nonZero, scalesAt / 2) << name << ": element codes not filled";
      uint64_t elements = 1;
      for (int64_t d : *w->shape())
        elements *= static_cast<uint64_t>(d);
      // Block scales up to the epilogue scales (MoE entries) or the end;
      // the alignment padding before the epilogue scales is not read.
      const uint64_t scalesEnd =
          w->epilogue_offset() ? scalesAt + elements / nvfp4::kBlockSize : w->bytes();
      for (uint64_t i = scalesAt; i < scalesEnd; ++i) {
        const uint8_t scale = bytes[i];
        ASSERT_TRUE(scale > 0 && scale < 0x7F) << name << ": block scale " << int(scale);
      }
      // MoE entries: the epilogue scales are the plan's, exactly.
      if (w->epilogue_offset()) {
        ++moeEntries;
        ASSERT_TRUE(w->global_scales());
        for (uint32_t i = 0; i < w->global_scales()->size(); ++i) {
          float v;
          std::memcpy(&v, bytes + w->epilogue_offset() + 4 * i, 4);
          ASSERT_EQ(v, w->global_scales()->Get(i) * 16384.0f) << name << " scale " << i;
        }
      }
      // The first row dequantizes to about 0.02 (RMS).
      ASSERT_TRUE(w->shape() && w->global_scales() && w->global_scales()->size() > 0) << name;
      const int64_t cols = w->shape()->Get(w->shape()->size() - 1);
      const float global = w->global_scales()->Get(0);
      double squares = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t code = nvfp4::packedElement({bytes, static_cast<size_t>(cols / 2)}, c);
        const float v = nvfp4::decodeE2M1(code) *
                        nvfp4::decodeE4M3(bytes[scalesAt + c / nvfp4::kBlockSize]) * global;
        squares += double(v) * v;
      }
      const double rms = std::sqrt(squares / double(cols));
      EXPECT_GT(rms, 0.002) << name;
      EXPECT_LT(rms, 0.2) << name;
      continue;
    }
    ASSERT_EQ(w->dtype(), plan::DType::F16) << name << ": a dense dtype this test does not read";
    const bool vector = w->shape() && w->shape()->size() == 1;
    (vector ? vectors : matrices)++;
    std::vector<float> values(w->bytes() / 2);
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * i, 2);
      values[i] = halfToFloat(bits);
      if (vector)
        ASSERT_TRUE(values[i] >= 0.899f && values[i] <= 1.101f) << name << "[" << i << "]";
      else
        ASSERT_TRUE(std::fabs(values[i]) <= 0.0201f) << name << "[" << i << "]";
    }
    // Not a constant: rows differ (routers above all).
    if (!vector && w->shape()->size() == 2 && w->shape()->Get(0) > 1) {
      const size_t cols = static_cast<size_t>(w->shape()->Get(1));
      EXPECT_NE(std::memcmp(bytes, bytes + 2 * cols, 2 * cols), 0) << name << ": rows 0 and 1";
    }
  }
  EXPECT_GT(nvfp4, 0u);
  EXPECT_GT(moeEntries, 0u);
  EXPECT_GT(matrices, 0u);
  EXPECT_GT(vectors, 0u);

  // Steps run as on real weights (the emulated LM head ignores them).
  h.runAndCheck(h.decode(3, 1));
  Step prefill;
  prefill.width = h.width();
  prefill.add({40, 41, 42, 43}, 4, 7);
  h.runAndCheck(prefill);
  h.runAndCheck(h.decode(5, 2));
}

} // namespace
} // namespace volt::cuda::testing
