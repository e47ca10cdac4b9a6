//===- EngineOverSimTest.cpp - the serving engine over the emulated GPU ---===//
//
// CudaSimtEndToEndTest drives the backends with hand-made steps; this runs
// the engine itself (runtime/engine: continuous batching, chunked prefill,
// admission as sequences finish, prefix caching, preemption and recompute
// in a KV cache too small, the candidate sampling path with its row
// fetches) over the cuda backend on the fake driver, every launch executed
// by the SIMT emulator (SimDevice.h), and over the cpu backend, with the
// same engine options and the same requests, stepping the two engines in
// lockstep.
//
// Each backend is wrapped in a recorder that keeps, per step, every
// sampling sequence's whole row (fetched after the engine's step, which
// fetches the rows it needs itself) and its token's routing gaps, and
// tells which request each row belongs to by the tokens and positions it
// ran. Then, per request and output token:
//   - each side's token is what Sampler::sample chooses from that side's
//     own row with the request's draw (uniformDraw(seed, index)): whether
//     the engine decided it from the candidates or fetched the row, it
//     depends on the row and the seed only;
//   - the two sides' rows agree within RouterTies.h's bound, except rows
//     on a routing near tie (either side's gap), which are counted;
//   - greedy tokens agree wherever the top two (penalised) logits are
//     decided and the row is off a tie; a request whose tokens part on an
//     undecided row is compared only up to there, its later rows having
//     other inputs on the two sides. Seeded sampled tokens agree unless the
//     draw lands between the two rows' cumulative weights: given the first
//     two checks that is all a difference can mean, so a sampled request
//     is likewise compared up to its first difference, which is counted.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"
#include "runtime/engine/Engine.h"
#include "runtime/executor/CpuBackend.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/PlanFile.h"
#include "tests/support/RouterTies.h"
#include "tests/unit/codegen/NvrtcAvailable.h"
#include "tests/unit/cuda/FakeCuda.h"
#include "tests/unit/cuda/PlanEmulator.h"
#include "tests/unit/cudasim/HostKernels.h"
#include "tests/unit/cudasim/SimDevice.h"
#include "tests/unit/cudasim/SimModels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace volt::cudasim {
namespace {

/// One request as one side saw it.
struct Tracked {
  std::vector<int32_t> prompt;
  engine::SamplingParams params;
  /// Prompt and outputs so far; tokens whose KV the backend has computed.
  std::vector<int32_t> known;
  int32_t computed = 0;
  std::vector<int32_t> outputs;
  /// Per output token, the row it was sampled from and the smallest
  /// routing gap of the row's own token.
  std::vector<std::vector<float>> rows;
  std::vector<double> gaps;
  /// Every token fed, in order (a recomputed one again): the digest of
  /// the experts it went to (RouterGaps::route); and per output, how many
  /// had been fed through its step. Where the two sides' digests part, the
  /// tokens went to different experts, and recurrent state carries that
  /// into every later row.
  std::vector<uint64_t> routes;
  std::vector<size_t> fedThrough;
  bool finished = false;
  engine::RequestOutput last;
};

/// An engine over a backend wrapped to record each sampling row and to
/// tell which request it belongs to.
class Side : public engine::StepBackend {
public:
  Side(std::string name, engine::StepBackend &inner, int32_t vocab, int32_t blockSize,
       testing::RouterGaps &gaps)
      : name_(std::move(name)), inner_(inner), vocab_(vocab), blockSize_(blockSize), gaps_(gaps) {}

  std::unique_ptr<engine::Engine> engine;
  std::vector<Tracked> requests;

  void submit(std::vector<int32_t> prompt, const engine::SamplingParams &params) {
    const size_t index = requests.size();
    Tracked t;
    t.prompt = prompt;
    t.params = params;
    t.known = prompt;
    requests.push_back(std::move(t));
    engine::Request r;
    r.promptTokens = std::move(prompt);
    r.sampling = params;
    r.onOutput = [this, index](const engine::RequestOutput &o) {
      Tracked &t = requests[index];
      if (o.token) {
        t.known.push_back(*o.token);
        t.outputs.push_back(*o.token);
      }
      t.finished = o.finished;
      t.last = o;
    };
    auto id = engine->submit(std::move(r));
    ASSERT_TRUE(id.ok()) << name_ << ": " << id.message();
  }

  int32_t candidatesPerSeq() const override { return inner_.candidatesPerSeq(); }

  Status runStep(const engine::StepBatch &batch, std::span<float> logits) override {
    gaps_.clear();
    VOLT_RETURN_IF_ERROR(inner_.runStep(batch, logits));
    record(batch, logits);
    return Status::success();
  }

  Status runStepCandidates(const engine::StepBatch &batch, std::span<const float> temperatures,
                           engine::StepCandidates &out) override {
    gaps_.clear();
    VOLT_RETURN_IF_ERROR(inner_.runStepCandidates(batch, temperatures, out));
    record(batch, {});
    return Status::success();
  }

  /// Fetches the rows of the last candidate step that record() left for
  /// later: after the engine's own fetches, so that what those read comes
  /// from the device, not from a staging buffer this fetch filled.
  Status fetchPendingRows() {
    if (pending_.empty())
      return Status::success();
    std::vector<int32_t> seqs;
    for (const Pending &p : pending_)
      seqs.push_back(p.seq);
    rows_.resize(seqs.size() * static_cast<size_t>(vocab_));
    VOLT_RETURN_IF_ERROR(inner_.fetchRows(seqs, rows_));
    const size_t v = static_cast<size_t>(vocab_);
    for (size_t i = 0; i < pending_.size(); ++i)
      requests[pending_[i].request].rows[pending_[i].output].assign(
          rows_.begin() + static_cast<ptrdiff_t>(i * v),
          rows_.begin() + static_cast<ptrdiff_t>((i + 1) * v));
    pending_.clear();
    return Status::success();
  }

  Status fetchRows(std::span<const int32_t> seqs, std::span<float> rows) override {
    return inner_.fetchRows(seqs, rows);
  }

private:
  /// Gives each sequence of the step to the one request whose next
  /// uncomputed tokens it ran, and a row that ends a request's known
  /// tokens to that request.
  void record(const engine::StepBatch &b, std::span<const float> rows) {
    for (int32_t s = 0; s < b.numSeqs; ++s) {
      const int32_t start = b.seqStarts[s], end = b.seqStarts[s + 1];
      const int32_t first = b.positions[start], context = b.contextLens[s];
      // The request whose computed tokens end where the step's begin; else
      // one that restarts at a block boundary: a prefix-cache hit at
      // admission, or a recompute after preemption.
      std::vector<size_t> matches, restarts;
      for (size_t r = 0; r < requests.size(); ++r) {
        const Tracked &t = requests[r];
        if (t.finished || static_cast<int32_t>(t.known.size()) < context)
          continue;
        bool same = true;
        for (int32_t j = start; j < end && same; ++j)
          same = t.known[static_cast<size_t>(first + j - start)] == b.tokens[j];
        if (same && t.computed == first)
          matches.push_back(r);
        else if (same && first % blockSize_ == 0)
          restarts.push_back(r);
      }
      if (matches.empty())
        matches = restarts;
      ASSERT_EQ(matches.size(), 1u)
          << name_ << ": step sequence " << s << " (positions " << first << ".." << context - 1
          << ") matches " << matches.size() << " requests";
      Tracked &t = requests[matches[0]];
      t.computed = context;
      for (int32_t j = start; j < end; ++j)
        t.routes.push_back(gaps_.route(static_cast<size_t>(j)));
      if (context == static_cast<int32_t>(t.known.size())) {
        const size_t v = static_cast<size_t>(vocab_);
        if (rows.empty()) {
          pending_.push_back({matches[0], t.rows.size(), s});
          t.rows.emplace_back();
        } else {
          t.rows.emplace_back(rows.begin() + static_cast<ptrdiff_t>(s * v),
                              rows.begin() + static_cast<ptrdiff_t>((s + 1) * v));
        }
        const size_t row = static_cast<size_t>(b.logitsRows[s]);
        t.gaps.push_back(gaps_.smallest(row, row + 1));
        t.fedThrough.push_back(t.routes.size());
      }
    }
  }

  std::string name_;
  engine::StepBackend &inner_;
  int32_t vocab_, blockSize_;
  testing::RouterGaps &gaps_;
  std::vector<float> rows_;
  /// Rows of the last candidate step still on the backend: the request,
  /// its output index, the sequence's index in the step.
  struct Pending {
    size_t request, output;
    int32_t seq;
  };
  std::vector<Pending> pending_;
};

/// The request's repetition penalty applied to `row` over `history`, as
/// the sampler applies it before a greedy argmax.
std::vector<float> penalised(std::span<const float> row, const engine::SamplingParams &p,
                             const std::vector<int32_t> &history) {
  std::vector<float> out(row.begin(), row.end());
  if (p.repetitionPenalty == 1.0f)
    return out;
  std::vector<bool> seen(out.size(), false);
  for (int32_t t : history)
    seen[static_cast<size_t>(t)] = true;
  for (size_t v = 0; v < out.size(); ++v)
    if (seen[v])
      out[v] = out[v] > 0 ? out[v] / p.repetitionPenalty : out[v] * p.repetitionPenalty;
  return out;
}

std::vector<int32_t> promptOf(int32_t length, int32_t salt, int32_t vocab) {
  std::vector<int32_t> p(static_cast<size_t>(length));
  for (int32_t i = 0; i < length; ++i)
    p[static_cast<size_t>(i)] = (17 + 31 * i + 101 * salt) % vocab;
  return p;
}

} // namespace

/// Test names show the model's name, not its bytes (defined in
/// CudaSimtEndToEndTest.cpp; googletest's name for it).
void PrintTo(const SimModel &m, std::ostream *os); // NOLINT(readability-identifier-naming)

namespace {

/// Runs the requests on both engines and compares them; `kvBlocks` (0:
/// the plan's) limits the engines' KV cache, so that they preempt.
void runBothEngines(const SimModel &m, int32_t kvBlocks) {
  auto path = compileSimPlanHere(m);
  ASSERT_TRUE(path.ok()) << path.message();
  auto loaded = plan::LoadedPlan::load(*path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  const plan::LoadedPlan &planFile = **loaded;
  const plan::Plan &p = planFile.plan();

  cuda::testing::FakeCuda fake(m.tensorParallelSize);
  fake.fillDeviceMemory = 0xFF;
  cuda::testing::PlanEmulator checks(planFile, fake);
  checks.install();
  SimDevice device(planFile, fake);
  Status ready = device.ready();
  ASSERT_TRUE(ready.ok()) << ready.message();
  device.install();
  cuda::CudaBackendOptions options;
  options.driver = fake.driver();
  options.nccl = fake.nccl();
  options.log = [](const std::string &) {};
  auto created = cuda::CudaBackend::create(planFile, options);
  ASSERT_TRUE(created.ok()) << created.message();
  cuda::CudaBackend &gpu = **created;
  const int32_t k = gpu.candidatesPerSeq();
  ASSERT_GT(k, 0) << "the plan has no sampler";
  // The cpu side takes the candidate path too, with the same k, so that
  // the two engines make the same decisions and fetch the same rows.
  executor::CpuBackendOptions cpuOptions;
  cpuOptions.candidates = k;
  auto cpuCreated = executor::CpuBackend::create(planFile, cpuOptions);
  ASSERT_TRUE(cpuCreated.ok()) << cpuCreated.message();
  executor::CpuBackend &cpu = **cpuCreated;
  testing::RouterGaps cpuGaps;
  testing::observeRouterGaps(cpu, cpuGaps);

  const int32_t vocab = static_cast<int32_t>(p.model()->vocab_size());
  const plan::Rank *rank0 = p.ranks()->Get(0);
  engine::EngineConfig config;
  config.vocabSize = vocab;
  config.blockSize = static_cast<int32_t>(plan::pagedKvGroup(*rank0)->block_size());
  config.numKvBlocks = static_cast<int32_t>(plan::pagedKvGroup(*rank0)->num_blocks());
  config.maxNumSeqs = static_cast<int32_t>(p.limits()->max_num_seqs());
  config.maxNumBatchedTokens = static_cast<int32_t>(p.limits()->max_num_batched_tokens());
  config.maxModelLen = static_cast<int32_t>(p.limits()->max_model_len());
  config.maxBlocksPerSeq = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  // Prefix caching, where the model has no recurrent state.
  config.numStateSlots = static_cast<int32_t>(plan::stateSlotCount(*rank0));
  config.enablePrefixCaching = config.numStateSlots == 0;
  config.seed = 5;
  if (kvBlocks > 0) {
    ASSERT_LE(kvBlocks, config.numKvBlocks);
    config.numKvBlocks = kvBlocks;
  }

  Side gpuSide("cuda", gpu, vocab, config.blockSize, device.routerGaps),
      cpuSide("cpu", cpu, vocab, config.blockSize, cpuGaps);
  for (Side *side : {&gpuSide, &cpuSide}) {
    auto e = engine::Engine::create(config, *side);
    ASSERT_TRUE(e.ok()) << e.message();
    side->engine = std::move(*e);
  }

  // The requests: four greedy ones of different lengths arriving together
  // (one prefilled in two chunks beside the others' decodes; then decode
  // batches through the graph buckets), one with a repetition penalty (its
  // row is fetched), a sampled top_k within the candidates (decided by
  // them) and one beyond them (fetched), queued behind the first four; and
  // two sharing a four-block prefix, the second arriving once the first
  // has been prefilled (a prefix-cache hit).
  auto greedy = [](int32_t maxTokens) {
    engine::SamplingParams s;
    s.temperature = 0;
    s.maxTokens = maxTokens;
    s.ignoreEos = true;
    return s;
  };
  engine::SamplingParams penalty = greedy(10);
  penalty.repetitionPenalty = 1.3f;
  engine::SamplingParams fewTop = greedy(10);
  fewTop.temperature = 0.8f;
  fewTop.topK = 3;
  fewTop.seed = 1234;
  engine::SamplingParams manyTop = greedy(8);
  manyTop.temperature = 0.9f;
  manyTop.topK = 2 * k;
  manyTop.seed = 99;
  ASSERT_LT(manyTop.topK, vocab);
  std::vector<int32_t> prefix = promptOf(4 * config.blockSize, 9, vocab);
  auto withTail = [&](int32_t tail, int32_t salt) {
    std::vector<int32_t> out = prefix;
    for (int32_t t : promptOf(tail, salt, vocab))
      out.push_back(t);
    return out;
  };
  const int32_t longPrompt = config.maxNumBatchedTokens + 44;
  const std::vector<std::pair<std::vector<int32_t>, engine::SamplingParams>> requests = {
      {promptOf(5, 0, vocab), greedy(14)},
      {promptOf(23, 1, vocab), greedy(10)},
      {promptOf(longPrompt, 2, vocab), greedy(8)},
      {promptOf(17, 3, vocab), penalty},
      {promptOf(12, 4, vocab), fewTop},
      {promptOf(9, 5, vocab), manyTop},
      {withTail(6, 6), greedy(6)},
  };
  const size_t sharer = requests.size() - 1;
  for (Side *side : {&gpuSide, &cpuSide})
    for (const auto &[prompt, params] : requests)
      side->submit(prompt, params);
  bool lateSubmitted = false;
  size_t steps = 0;
  while (gpuSide.engine->hasWork() || cpuSide.engine->hasWork()) {
    SCOPED_TRACE("step " + std::to_string(steps));
    ASSERT_LT(steps++, 400u) << "the engines do not finish";
    if (!lateSubmitted && !gpuSide.requests[sharer].outputs.empty()) {
      ASSERT_FALSE(cpuSide.requests[sharer].outputs.empty()) << "the two engines' schedules part";
      for (Side *side : {&gpuSide, &cpuSide})
        side->submit(withTail(11, 7), greedy(6));
      lateSubmitted = true;
    }
    auto ranGpu = gpuSide.engine->step();
    ASSERT_TRUE(ranGpu.ok()) << ranGpu.message();
    auto ranCpu = cpuSide.engine->step();
    ASSERT_TRUE(ranCpu.ok()) << ranCpu.message();
    for (Side *side : {&gpuSide, &cpuSide}) {
      Status fetched = side->fetchPendingRows();
      ASSERT_TRUE(fetched.ok()) << fetched.message();
    }
    // The schedule depends on lengths only (every request ignores EOS).
    ASSERT_EQ(ranGpu->numTokens, ranCpu->numTokens);
    ASSERT_EQ(ranGpu->numSeqs, ranCpu->numSeqs);
    ASSERT_EQ(ranGpu->numDecodeTokens, ranCpu->numDecodeTokens);
  }
  ASSERT_TRUE(lateSubmitted);
  for (Side *side : {&gpuSide, &cpuSide}) {
    Status consistent = side->engine->checkConsistency();
    EXPECT_TRUE(consistent.ok()) << consistent.message();
  }

  engine::Sampler sampler(vocab);
  size_t compared = 0, onTies = 0, tokensMatched = 0, tokensCompared = 0, parted = 0,
         greedyDecided = 0, carried = 0;
  const bool recurrent = config.numStateSlots > 0;
  for (size_t r = 0; r < gpuSide.requests.size(); ++r) {
    SCOPED_TRACE("request " + std::to_string(r));
    const Tracked &g = gpuSide.requests[r], &c = cpuSide.requests[r];
    ASSERT_TRUE(g.finished && c.finished);
    EXPECT_EQ(g.last.finishReason, engine::FinishReason::Length) << g.last.error;
    EXPECT_EQ(c.last.finishReason, engine::FinishReason::Length) << c.last.error;
    ASSERT_EQ(g.outputs.size(), static_cast<size_t>(*g.params.maxTokens));
    ASSERT_EQ(c.outputs.size(), g.outputs.size());
    ASSERT_EQ(g.rows.size(), g.outputs.size());
    ASSERT_EQ(c.rows.size(), c.outputs.size());
    EXPECT_EQ(g.last.usage.cachedPromptTokens, c.last.usage.cachedPromptTokens);
    bool together = true;
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      // Each side's token is the sampler's on that side's own row.
      for (const Tracked *t : {&g, &c}) {
        engine::TokenHistory history;
        if (t->params.repetitionPenalty != 1.0f)
          history.setPrompt(t->prompt);
        for (size_t j = 0; j < i; ++j)
          history.addOutput(t->outputs[j]);
        auto want = sampler.sample(t->rows[i], t->params, history, {},
                                   engine::uniformDraw(t->params.seed.value_or(0), i));
        ASSERT_TRUE(want.ok()) << want.message();
        EXPECT_EQ(t->outputs[i], want->token) << (t == &g ? "cuda" : "cpu") << " side";
      }
      if (!together)
        continue;
      const bool tie = g.gaps[i] < testing::kRouterTie || c.gaps[i] < testing::kRouterTie;
      // An earlier token of the sequence on a near tie: with recurrent
      // state the two sides carry different states from there on (on KV
      // alone, one position of many differs, which the bound absorbs).
      if (recurrent && !tie) {
        ASSERT_EQ(g.routes.size(), c.routes.size());
        const size_t before = g.fedThrough[i] - 1; // the tokens before this row's
        const auto part = std::mismatch(g.routes.begin(), g.routes.begin() + before,
                                        c.routes.begin());
        if (part.first != g.routes.begin() + before) {
          together = false;
          carried += g.outputs.size() - i;
          std::printf("%s: request %zu not compared from output %zu on: its token %zu went to "
                      "other experts on the two sides (a routing tie), which the recurrent "
                      "state carries\n",
                      m.name.c_str(), r, i, static_cast<size_t>(part.first - g.routes.begin()));
          continue;
        }
      }
      const testing::RowComparison rc = testing::compareRow(c.rows[i], g.rows[i]);
      if (tie) {
        ++onTies;
      } else {
        ++compared;
        EXPECT_LE(rc.diff, rc.bound)
            << "logit " << rc.worstAt << ": cpu " << c.rows[i][rc.worstAt] << ", cuda "
            << g.rows[i][rc.worstAt] << testing::routerTieNote(std::min(g.gaps[i], c.gaps[i]));
      }
      ++tokensCompared;
      std::vector<int32_t> history = c.prompt;
      history.insert(history.end(), c.outputs.begin(), c.outputs.begin() + i);
      const testing::RowComparison pc = testing::compareRow(
          penalised(c.rows[i], c.params, history), penalised(g.rows[i], g.params, history));
      greedyDecided += g.params.greedy() && !tie && pc.greedyDecided;
      if (g.outputs[i] == c.outputs[i]) {
        ++tokensMatched;
        continue;
      }
      together = false;
      ++parted;
      if (g.params.greedy()) {
        EXPECT_FALSE(!tie && pc.greedyDecided) << "greedy tokens differ on a decided row: cpu "
                                               << c.outputs[i] << ", cuda " << g.outputs[i];
      }
      std::printf("%s: request %zu parts at output %zu (cpu %d, cuda %d; %s, routing gap %.2e)\n",
                  m.name.c_str(), r, i, c.outputs[i], g.outputs[i],
                  g.params.greedy() ? (pc.greedyDecided ? "decided" : "top two within the bound")
                                    : "sampled",
                  std::min(g.gaps[i], c.gaps[i]));
    }
  }
  std::printf("%s: %zu steps, %zu of %zu tokens the same on both sides (%zu greedy ones on "
              "decided rows), %zu requests parted; %zu rows compared, %zu on a routing tie, %zu "
              "after one in the recurrent state\n",
              m.name.c_str(), steps, tokensMatched, tokensCompared, greedyDecided, parted, compared,
              onTies, carried);
  EXPECT_GT(greedyDecided, 0u) << "no greedy token was decided by its row";
  EXPECT_TRUE(testing::fewEnoughTies(onTies, compared + onTies))
      << "too many rows on routing ties to compare";
  // The tiny models route a token to other experts on the two sides now
  // and then (8 experts, top 2, ulp-level router inputs apart): with
  // recurrent state, long prompts are often carried (measured: five of the eight requests on qwen3-next);
  // enough rows must remain.
  EXPECT_GE(compared, 24u) << "too few rows compared: most were carried past a routing tie";
  EXPECT_GE(tokensMatched * 4, tokensCompared * 3)
      << "too many tokens differ between the sides (requests compared up to where they part)";

  // The paths the engine claims to take on the cuda backend.
  const engine::EngineStats gs = gpuSide.engine->stats(), cs = cpuSide.engine->stats();
  EXPECT_GT(gs.sampledFromCandidates, 0u);
  EXPECT_GT(gs.rowsFetched, 0u);
  EXPECT_EQ(gs.sampledFromCandidates, cs.sampledFromCandidates);
  EXPECT_EQ(gs.rowsFetched, cs.rowsFetched);
  if (config.enablePrefixCaching) {
    EXPECT_GT(gs.prefixCacheHits, 0u);
  }
  EXPECT_EQ(gs.prefixCacheHits, cs.prefixCacheHits);
  EXPECT_EQ(gs.numPreemptions, cs.numPreemptions);
  if (kvBlocks > 0)
    EXPECT_GT(gs.numPreemptions, 0u) << "no sequence was preempted";
  else
    EXPECT_EQ(gs.numPreemptions, 0u);
  const cuda::GraphStats graphs = gpu.graphStats();
  EXPECT_EQ(graphs.captureFailures, 0u);
  EXPECT_GT(graphs.graphSteps, graphs.captures) << "no captured graph was replayed";
  EXPECT_GT(graphs.directSteps, 0u);
  EXPECT_GT(device.graphLaunches, 0u);
  EXPECT_EQ(device.skipped, 0u);
  std::printf("%s: %llu tokens from candidates, %llu rows fetched, %llu prefix-cache hit tokens; "
              "%llu preemptions; graphs: %llu captures, %llu graph steps, %llu direct steps\n",
              m.name.c_str(), static_cast<unsigned long long>(gs.sampledFromCandidates),
              static_cast<unsigned long long>(gs.rowsFetched),
              static_cast<unsigned long long>(gs.prefixCacheHits),
              static_cast<unsigned long long>(gs.numPreemptions),
              static_cast<unsigned long long>(graphs.captures),
              static_cast<unsigned long long>(graphs.graphSteps),
              static_cast<unsigned long long>(graphs.directSteps));
}

class EngineOverSim : public ::testing::TestWithParam<SimModel> {};

TEST_P(EngineOverSim, MatchesEngineOverCpuBackend) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  // NVRTC is here now: a table generated without it is stale, not a reason.
  ASSERT_TRUE(hostKernelsUnavailable().empty())
      << hostKernelsUnavailable()
      << " (NVRTC is installed now: rebuild the target cudasim_instances)";
  runBothEngines(GetParam(), 0);
}

// A KV cache too small for the four running sequences: the newest gives its
// blocks back and is recomputed later (its blocks meanwhile written by the
// others, its prefix perhaps still cached).
TEST(EngineOverSimPreempting, MatchesEngineOverCpuBackend) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  // NVRTC is here now: a table generated without it is stale, not a reason.
  ASSERT_TRUE(hostKernelsUnavailable().empty())
      << hostKernelsUnavailable()
      << " (NVRTC is installed now: rebuild the target cudasim_instances)";
  const SimModel &m = simModels().front();
  ASSERT_EQ(m.name, "qwen3-moe-nvfp4-tp1");
  runBothEngines(m, 20);
}

// The same with recurrent state (the toy EMA hybrid, and Qwen3-Next's and
// Qwen3.5's conv and delta-rule states): a preempted sequence gives its state slots back
// and is recomputed from its first token in whichever slot is free.
TEST(EngineOverSimPreempting, WithRecurrentStateMatchesEngineOverCpuBackend) {
  VOLT_REQUIRE_NVRTC(nvrtc, 70);
  ASSERT_TRUE(hostKernelsUnavailable().empty())
      << hostKernelsUnavailable()
      << " (NVRTC is installed now: rebuild the target cudasim_instances)";
  for (const SimModel &m : simModels())
    if (m.name == "toy-ema-bf16-tp1" || m.name == "qwen3-next-nvfp4-tp2" ||
        m.name == "qwen3.5-moe-nvfp4-tp1") {
      SCOPED_TRACE(m.name);
      runBothEngines(m, 20);
    }
}

/// The deployments the engine runs over: one per tensor-parallel size.
std::vector<SimModel> engineModels() {
  std::vector<SimModel> out;
  for (const SimModel &m : simModels())
    if (m.name == "qwen3-moe-nvfp4-tp1" || m.name == "qwen3-moe-nvfp4-tp2" ||
        m.name == "toy-ema-bf16-tp1" || m.name == "qwen3-next-nvfp4-tp2" ||
        m.name == "qwen3.5-moe-nvfp4-tp1")
      out.push_back(m);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Plans, EngineOverSim, ::testing::ValuesIn(engineModels()),
                         [](const ::testing::TestParamInfo<SimModel> &info) {
                           return simTestName(info.param);
                         });

} // namespace
} // namespace volt::cudasim
