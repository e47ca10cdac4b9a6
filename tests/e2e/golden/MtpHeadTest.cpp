// The MTP draft program against an independent reference of the head
// (tests/golden/generate_mtp.py: the head written from its description in
// float32 around transformers' own target model and decoder layer): the
// draft logits of every prompt position after a prefill (the engine's
// catch-up step) and of one chained step, on the committed Qwen3.5-MoE
// model whose mtp.* weights are random and perturbed, at TP 1 and 2.
#include "compiler/driver/Compile.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/executor/CpuBackend.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <numeric>
#include <unistd.h>

namespace volt {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = VOLT_SOURCE_DIR;

/// One sequence's step from blocks 0.. at `positions` (slot = position).
engine::StepBuffers oneSequenceStep(std::vector<int32_t> tokens, std::vector<int32_t> positions,
                                    int32_t width) {
  engine::StepBuffers b;
  b.tokens = std::move(tokens);
  b.positions = std::move(positions);
  b.slotMapping = b.positions;
  b.seqStarts = {0, static_cast<int32_t>(b.tokens.size())};
  b.contextLens = {b.positions.back() + 1};
  b.maxBlocksPerSeq = width;
  b.blockTables.resize(static_cast<size_t>(width));
  std::iota(b.blockTables.begin(), b.blockTables.end(), 0);
  return b;
}

/// The largest |volt - reference| over a row, and the row's largest |reference|.
std::pair<double, double> rowError(std::span<const float> volt, const nlohmann::json &reference) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < volt.size(); ++i) {
    double r = reference[i].get<double>();
    worst = std::max(worst, std::fabs(static_cast<double>(volt[i]) - r));
    scale = std::max(scale, std::fabs(r));
  }
  return {worst, scale};
}

/// |Δ| within this share of the row's largest logit: FP16 activations and
/// weights against float32 (measured worst: docs/golden.md, "The MTP head").
constexpr double kRtol = 0.01;

class MtpHead : public ::testing::TestWithParam<int> {};

TEST_P(MtpHead, DraftLogitsMatchTheReference) {
  const int tp = GetParam();
  std::ifstream in(kSource / "tests/golden/expected/mtp-qwen3.5-moe-bf16.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json c = nlohmann::json::parse(in);

  fs::path dir = fs::temp_directory_path() /
                 ("volt-mtp-golden-" + std::to_string(::getpid()) + "-tp" + std::to_string(tp));
  fs::create_directories(dir);
  std::ofstream(dir / "deploy.yaml")
      << "model: " << (kSource / c["model"].get<std::string>()).string()
      << "\ntarget: cpu\ntensor_parallel_size: " << tp
      << "\nmax_num_seqs: 4\nmax_num_batched_tokens: 256\n"
         "speculative: {method: mtp, num_speculative_tokens: 7}\n";
  driver::CompileOptions options;
  options.output = dir / "plan.vplan";
  auto compiled = driver::compile(dir / "deploy.yaml", options);
  ASSERT_TRUE(compiled.ok()) << compiled.message();
  auto loaded = plan::LoadedPlan::load(options.output);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  const plan::Plan &p = (*loaded)->plan();
  auto backend = executor::CpuBackend::create(**loaded);
  ASSERT_TRUE(backend.ok()) << backend.message();
  ASSERT_TRUE((*backend)->hasDraftProgram());
  const int32_t width = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  const size_t vocab = p.model()->vocab_size();

  // The target's prefill: its greedy next token is the reference's.
  const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
  const int32_t n = static_cast<int32_t>(prompt.size());
  std::vector<int32_t> positions(prompt.size());
  std::iota(positions.begin(), positions.end(), 0);
  engine::StepBuffers prefill = oneSequenceStep(prompt, positions, width);
  prefill.logitsRows = {n - 1};
  prefill.stateSlots = {0};
  std::vector<float> logits(vocab);
  auto st = (*backend)->runStep(prefill.view(), logits);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(),
            c["target_next"].get<int>());

  // The catch-up: position p pairs the target's hidden row p with token p + 1.
  engine::StepBuffers catchUp =
      oneSequenceStep(c["draft_tokens"].get<std::vector<int32_t>>(), positions, width);
  catchUp.logitsRows = positions;
  catchUp.hiddenRows = positions;
  std::vector<float> drafts(static_cast<size_t>(n) * vocab);
  st = (*backend)->runDraftStep(catchUp.view(), drafts);
  ASSERT_TRUE(st.ok()) << st.message();
  double worstRatio = 0;
  for (int32_t r = 0; r < n; ++r) {
    auto [worst, scale] =
        rowError(std::span(drafts).subspan(size_t(r) * vocab, vocab), c["draft_logits"][size_t(r)]);
    EXPECT_LE(worst, kRtol * scale) << "position " << r;
    worstRatio = std::max(worstRatio, worst / scale);
    auto row = std::span(drafts).subspan(size_t(r) * vocab, vocab);
    EXPECT_EQ(std::max_element(row.begin(), row.end()) - row.begin(),
              c["draft_top1"][size_t(r)].get<int>())
        << "position " << r;
  }

  // A chained step: the catch-up's last normed row with the greedy draft.
  engine::StepBuffers chain = oneSequenceStep({c["chain_token"].get<int32_t>()}, {n}, width);
  chain.logitsRows = {0};
  chain.hiddenRows = {n - 1};
  std::vector<float> chained(vocab);
  st = (*backend)->runDraftStep(chain.view(), chained);
  ASSERT_TRUE(st.ok()) << st.message();
  auto [worst, scale] = rowError(chained, c["chain_logits"]);
  EXPECT_LE(worst, kRtol * scale) << "chained step";
  worstRatio = std::max(worstRatio, worst / scale);
  std::printf("mtp head tp %d: worst |delta| / row max %.4f (bound %.2f)\n", tp, worstRatio, kRtol);

  // The tolerance tells a wrong head from the right one: swapping the
  // concatenation's halves moves the logits far beyond it.
  EXPECT_GT(c["swapped_concat_max_diff"].get<double>(), 4 * kRtol * scale);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

INSTANTIATE_TEST_SUITE_P(Tp, MtpHead, ::testing::Values(1, 2));

} // namespace
} // namespace volt
