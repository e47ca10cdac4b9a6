// The cpu backend against Hugging Face transformers: logits of every
// checked position and the greedy continuation of each committed case in
// tests/golden/expected/ (produced by tests/golden/generate.py, float32, on
// the CPU; see docs/golden.md for the tolerance rule and why it holds for
// an FP16 implementation).
#include "compiler/driver/Compile.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Matmul.h"
#include "runtime/executor/CpuBackend.h"
#include "runtime/serving/Generate.h"
#include "runtime/serving/Session.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <numeric>
#include <optional>
#include <unistd.h>

namespace volt {
namespace {

/// How the cpu backend multiplies in a case: the reference numerics, or
/// --cpu-numerics fast on its BF16 path (AVX512_BF16) or its FMA path (the
/// path a CPU without AVX512_BF16 takes, run here by limiting dotBlock to
/// AVX-512 without VBMI).
enum class Mode { Reference, FastBf16, FastFma };

const char *modeName(Mode m) {
  return m == Mode::Reference ? "reference" : m == Mode::FastBf16 ? "fast" : "fast_fma";
}

// gtest names a case's mode by this (found by argument lookup).
void PrintTo(Mode m, std::ostream *os) { *os << modeName(m); }

namespace fs = std::filesystem;

const fs::path kSource = VOLT_SOURCE_DIR;

nlohmann::json readCase(const std::string &name) {
  std::ifstream in(kSource / "tests/golden/expected" / (name + ".json"));
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

/// This process's scratch folder (plans), removed at exit.
fs::path scratch() {
  static struct Root {
    fs::path path = fs::temp_directory_path() / ("volt-golden-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } root;
  return root.path;
}

/// Compiles the case's committed model for the cpu backend.
fs::path compileCase(const nlohmann::json &c, int tp) {
  fs::path dir = scratch() / (c["case"].get<std::string>() + "-tp" + std::to_string(tp));
  fs::create_directories(dir);
  std::ofstream(dir / "deploy.yaml") << "model: " << (kSource / c["model"].get<std::string>()).string()
                                     << "\ntarget: cpu\ntensor_parallel_size: " << tp
                                     << "\nmax_num_seqs: 4\nmax_num_batched_tokens: 1024\n";
  driver::CompileOptions options;
  options.output = dir / "plan.vplan";
  auto r = driver::compile(dir / "deploy.yaml", options);
  EXPECT_TRUE(r.ok()) << r.message();
  return options.output;
}

/// Logits at the last token of `ids` (one prefill step, blocks 0..).
std::vector<float> lastLogits(executor::CpuBackend &backend, const plan::Plan &p,
                              const std::vector<int32_t> &ids) {
  int32_t width = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  int32_t n = static_cast<int32_t>(ids.size());
  std::vector<int32_t> positions(ids.size()), starts = {0, n}, lens = {n},
      table(static_cast<size_t>(width)), rows = {n - 1}, stateSlots = {0};
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<int32_t> slots = positions;
  std::iota(table.begin(), table.end(), 0);
  engine::StepBatch batch;
  batch.numTokens = n;
  batch.numSeqs = 1;
  batch.maxBlocksPerSeq = width;
  batch.tokens = ids;
  batch.positions = positions;
  batch.slotMapping = slots;
  batch.seqStarts = starts;
  batch.contextLens = lens;
  batch.blockTables = table;
  batch.logitsRows = rows;
  // Recurrent layers: the prefill starts at position 0, from a zero state.
  batch.stateSlots = stateSlots;
  std::vector<float> logits(p.model()->vocab_size());
  auto st = backend.runStep(batch, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  return logits;
}

struct Comparison {
  int compared = 0;
  int skipped = 0;
  double worstRatio = 0; ///< worst |Δ| / (rtol × row max)
};

/// Numerics::Fast rounds every GEMM's activations to BF16 (8 times the
/// FP16 unit roundoff), which moves logits and routing gaps several times
/// as far as the reference's roundings. It is held to the rule of
/// tolerance.py with the constants of FAST_TOLERANCE there (measured on
/// these cases: docs/golden.md, "Fast numerics").
double fastTolerance(const std::string &key) {
  static const std::map<std::string, double> fast = {
      {"tie_router_gap", 0.002},           {"rtol_before_tie", 0.03},
      {"rtol_after_tie", 0.1},             {"tie_router_gap_after_tie", 0.015},
      {"min_margin_for_token", 0.02},
  };
  return fast.at(key);
}

/// The case's tolerance per position of its sequence (null: not compared)
/// and its greedy robust prefix: as committed for the reference, recomputed
/// as tolerance.py's position_rtol and robust_prefix do with
/// FAST_TOLERANCE for Fast.
struct Rule {
  nlohmann::json sequenceRtol;
  int robustPrefix = 0;
};

Rule ruleFor(const nlohmann::json &c, cpu::Numerics numerics) {
  if (numerics == cpu::Numerics::Reference)
    return {c["sequence_rtol"], c["greedy_robust_prefix"].get<int>()};
  auto scaled = [](const char *key) { return fastTolerance(key); };
  const nlohmann::json &gaps = c["sequence_router_min_gap"];
  const size_t length = c["sequence_rtol"].size();
  std::optional<size_t> tie;
  if (!gaps.is_null())
    for (size_t p = 0; p < gaps.size() && !tie; ++p)
      if (gaps[p].get<double>() < scaled("tie_router_gap"))
        tie = p;
  Rule rule;
  rule.sequenceRtol = nlohmann::json::array();
  for (size_t p = 0; p < length; ++p) {
    if (!tie || p < *tie)
      rule.sequenceRtol.push_back(scaled("rtol_before_tie"));
    else if (gaps[p].get<double>() < scaled("tie_router_gap_after_tie"))
      rule.sequenceRtol.push_back(nullptr);
    else
      rule.sequenceRtol.push_back(scaled("rtol_after_tie"));
  }
  const size_t promptLength = c["prompt_ids"].size();
  const nlohmann::json &margins = c["step_margins"];
  rule.robustPrefix = static_cast<int>(margins.size());
  for (size_t i = 0; i < margins.size(); ++i)
    if (margins[i].get<double>() < scaled("min_margin_for_token") ||
        (tie && promptLength - 1 + i >= *tie)) {
      rule.robustPrefix = static_cast<int>(i);
      break;
    }
  return rule;
}

/// Compares volt's logits at `position` of the case's sequence with the
/// reference row, under the rule's tolerance for that position.
void compareRow(const nlohmann::json &c, const Rule &rule, size_t position,
                const std::vector<float> &volt, const nlohmann::json &reference,
                Comparison &cmp) {
  const nlohmann::json &rtol = rule.sequenceRtol[position];
  if (rtol.is_null()) {
    ++cmp.skipped;
    return;
  }
  float rowMax = 0;
  for (const auto &v : reference)
    rowMax = std::max(rowMax, std::fabs(v.get<float>()));
  double bound = rtol.get<double>() * rowMax;
  double worst = 0;
  for (size_t i = 0; i < volt.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(volt[i]) - reference[i].get<double>()));
  EXPECT_LE(worst, bound) << c["case"] << " position " << position << " (rtol " << rtol << ")";
  cmp.worstRatio = std::max(cmp.worstRatio, worst / bound);
  ++cmp.compared;
}

/// The case, the tensor-parallel size, and the mode (FastBf16 is held to
/// the scaled rule, FastFma to the reference's: fusing a product into its
/// sum is never less accurate than rounding it first).
class GoldenCase : public ::testing::TestWithParam<std::tuple<std::string, int, Mode>> {};

TEST_P(GoldenCase, LogitsAndGreedyTokensMatchTransformers) {
  auto [name, tp, mode] = GetParam();
  const cpu::Numerics numerics =
      mode == Mode::Reference ? cpu::Numerics::Reference : cpu::Numerics::Fast;
  struct PathLimit {
    explicit PathLimit(Mode m) {
      if (m == Mode::FastFma)
        cpu::detail::setDotBlockPathLimit(cpu::detail::DotBlockPath::Avx512);
    }
    ~PathLimit() { cpu::detail::setDotBlockPathLimit(cpu::detail::DotBlockPath::Avx512Vbmi); }
  } limit(mode);
  const cpu::detail::GemmPath path = cpu::detail::gemmPath(numerics);
  if ((mode == Mode::FastBf16 && path != cpu::detail::GemmPath::Bf16) ||
      (mode == Mode::FastFma && path != cpu::detail::GemmPath::Fma))
    std::printf("this CPU has no %s path: the case runs the one it takes\n",
                mode == Mode::FastBf16 ? "BF16" : "FMA");
  nlohmann::json c = readCase(name);
  fs::path planPath = compileCase(c, tp);
  auto loaded = plan::LoadedPlan::load(planPath);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  executor::CpuBackendOptions backendOptions;
  backendOptions.numerics = numerics;
  auto backend = executor::CpuBackend::create(**loaded, backendOptions);
  ASSERT_TRUE(backend.ok()) << backend.message();
  const plan::Plan &p = (*loaded)->plan();
  const Rule rule = ruleFor(c, mode == Mode::FastBf16 ? cpu::Numerics::Fast
                                                      : cpu::Numerics::Reference);

  std::vector<int32_t> prompt = c["prompt_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> generated = c["generated_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> sequence = prompt;
  sequence.insert(sequence.end(), generated.begin(), generated.end() - 1);

  // Prompt positions: prefill each prefix and compare its last row.
  Comparison cmp;
  const auto &positions = c["prompt_logit_positions"];
  for (size_t i = 0; i < positions.size(); ++i) {
    size_t pos = positions[i].get<size_t>();
    std::vector<int32_t> prefix(sequence.begin(), sequence.begin() + static_cast<long>(pos) + 1);
    compareRow(c, rule, pos, lastLogits(**backend, p, prefix), c["prompt_logits"][i], cmp);
  }
  // Generation steps, teacher-forced with the reference tokens: row i is
  // the position of the token before generated_ids[i].
  for (size_t i = 0; i < c["step_logits"].size(); ++i) {
    size_t pos = prompt.size() - 1 + i;
    std::vector<int32_t> prefix(sequence.begin(), sequence.begin() + static_cast<long>(pos) + 1);
    compareRow(c, rule, pos, lastLogits(**backend, p, prefix), c["step_logits"][i], cmp);
  }
  EXPECT_GT(cmp.compared, 0);
  std::printf("%s tp=%d %s: %d rows compared (worst at %.2f of its bound), %d skipped\n",
              name.c_str(), tp, modeName(mode), cmp.compared, cmp.worstRatio, cmp.skipped);

  // Greedy generation through the engine: the robust prefix must match.
  int robust = rule.robustPrefix;
  loaded->reset();
  serving::SessionOptions sessionOptions;
  sessionOptions.cpuNumerics = numerics;
  auto session = serving::Session::open(planPath, sessionOptions);
  ASSERT_TRUE(session.ok()) << session.message();
  engine::SamplingParams greedy;
  greedy.temperature = 0;
  greedy.maxTokens = static_cast<int32_t>(generated.size());
  greedy.ignoreEos = true;
  auto g = serving::generate(**session, prompt, greedy);
  ASSERT_TRUE(g.ok()) << g.message();
  ASSERT_EQ(g->tokens.size(), generated.size());
  for (int i = 0; i < robust; ++i)
    ASSERT_EQ(g->tokens[static_cast<size_t>(i)], generated[static_cast<size_t>(i)])
        << name << ": greedy token " << i << " of the " << robust << " that must match";
}

const auto kCases = ::testing::Values(
    "qwen3-moe-modelopt", "qwen3-moe-compressed-tensors", "qwen3-moe-bf16", "qwen2-moe-modelopt",
    "mixtral-modelopt", "qwen3-modelopt", "qwen3-moe-modelopt-long", "qwen3-next-bf16",
    "qwen3-next-bf16-long", "qwen3.5-moe-bf16", "qwen3.5-moe-bf16-long", "qwen3.5-bf16-long",
    "qwen3.5-moe-mixed", "qwen3.5-moe-ct-fp8");

std::string caseName(const ::testing::TestParamInfo<GoldenCase::ParamType> &info) {
  std::string n = std::get<0>(info.param) + "_tp" + std::to_string(std::get<1>(info.param));
  if (std::get<2>(info.param) != Mode::Reference)
    n += std::string("_") + modeName(std::get<2>(info.param));
  for (char &ch : n)
    if (ch == '-' || ch == '.')
      ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenCase,
                         ::testing::Combine(kCases, ::testing::Values(1, 2),
                                            ::testing::Values(Mode::Reference)),
                         caseName);

// Fast numerics at TP 1, on both of its paths (the all-reduce adds nothing
// the reference cases do not already cover).
INSTANTIATE_TEST_SUITE_P(GoldenFast, GoldenCase,
                         ::testing::Combine(kCases, ::testing::Values(1),
                                            ::testing::Values(Mode::FastBf16, Mode::FastFma)),
                         caseName);

} // namespace
} // namespace volt
