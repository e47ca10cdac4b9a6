// A model with recurrent state (tests/support/ToyEmaModel.h: layers 0 and
// 2 a per-channel moving average with a state slot per sequence, layers 1
// and 3 attention) compiled and run on the cpu backend: its plan holds the
// state group beside a KV cache of layers 1 and 3; every EmaScan the
// engine runs, through continuous batching, chunked prefill and
// preemption, matches the recurrence written here, state and all; and
// every request's tokens are the ones it gets alone.
#include "PlanFixture.h"
#include "tests/support/GreedyRequests.h"

#include "compiler/driver/Check.h"
#include "compiler/driver/Inspect.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/executor/CpuBackend.h"
#include "runtime/numerics/Half.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/StepOperands.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>

namespace volt {
namespace {

constexpr int kMaxNumSeqs = 4, kMaxNumBatchedTokens = 64;

testing::PlanRequest toyRequest(int tp) {
  testing::PlanRequest r;
  r.family = "toy-ema";
  r.format = mkmodel::Format::BF16;
  r.tensorParallelSize = tp;
  r.maxNumSeqs = kMaxNumSeqs;
  r.maxNumBatchedTokens = kMaxNumBatchedTokens;
  r.extra = "max_model_len: 512\n";
  return r;
}

TEST(StateModel, PlansStateSlotsBesideTheKvCache) {
  for (int tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    auto path = testing::compilePlan(toyRequest(tp));
    auto loaded = plan::LoadedPlan::load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    for (const plan::Rank *r : *(*loaded)->plan().ranks()) {
      ASSERT_EQ(r->caches()->size(), 2u);
      const plan::CacheGroup *kv = r->caches()->Get(0), *state = r->caches()->Get(1);
      EXPECT_EQ(kv->kind(), plan::CacheKind::PagedKv);
      EXPECT_EQ(std::vector<uint32_t>(kv->layers()->begin(), kv->layers()->end()),
                (std::vector<uint32_t>{1, 3}));
      EXPECT_EQ(kv->num_kv_heads(), 2u / static_cast<uint32_t>(tp));
      EXPECT_EQ(state->kind(), plan::CacheKind::StateSlots);
      EXPECT_EQ(state->name()->str(), "ema");
      EXPECT_EQ(std::vector<uint32_t>(state->layers()->begin(), state->layers()->end()),
                (std::vector<uint32_t>{0, 2}));
      EXPECT_EQ(state->dtype(), plan::DType::F32);
      // Replicated: every rank keeps the whole state (64 channels).
      EXPECT_EQ(state->slot_bytes(), 64u * 4);
      EXPECT_EQ(state->num_slots(), static_cast<uint32_t>(kMaxNumSeqs));
      EXPECT_EQ(state->bytes(), 2u * kMaxNumSeqs * 64 * 4);
    }
    auto report = driver::inspect(path);
    ASSERT_TRUE(report.ok()) << report.message();
    const std::string text = driver::formatInspectReport(*report);
    EXPECT_NE(text.find("recurrent state 'ema'"), std::string::npos) << text;
    EXPECT_NE(text.find("4 slots x 512 B per sequence (2 layers, F32)"), std::string::npos) << text;
    EXPECT_NE(text.find("(2 attention layers)"), std::string::npos) << text;
  }
}

TEST(StateModel, PrefixCachingIsRefusedAtCheck) {
  testing::PlanRequest r = toyRequest(1);
  r.extra += "enable_prefix_caching: true\n";
  auto spec = testing::specFor(r, "prefix");
  auto checked = driver::check(spec, {});
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.message().find("enable_prefix_caching: the model's layers 0, 2 keep a "
                                   "recurrent state per sequence"),
            std::string::npos)
      << checked.message();
}

/// The recurrence EmaScan computes, written out: per (rank, layer, slot)
/// the state, reset where a step starts a sequence at position 0.
class ReferenceEma {
public:
  void check(const executor::OpObservation &o) {
    ASSERT_EQ(o.operands.size(), 8u);
    const auto *in = reinterpret_cast<const uint16_t *>(o.operands[0].data());
    const auto *decay = reinterpret_cast<const uint16_t *>(o.operands[1].data());
    const auto *starts = reinterpret_cast<const int32_t *>(o.operands[3].data());
    const auto *contexts = reinterpret_cast<const int32_t *>(o.operands[4].data());
    const auto *slots = reinterpret_cast<const int32_t *>(o.operands[5].data());
    // Copies of the state after some tokens (a verify step's), or none.
    const auto *copies = o.operands[6].empty()
                             ? nullptr
                             : reinterpret_cast<const int32_t *>(o.operands[6].data());
    const auto *out = reinterpret_cast<const uint16_t *>(o.operands[7].data());
    const int64_t dim = o.op->params_as_EmaScanParams()->dim();
    const uint32_t layer = o.op->params_as_EmaScanParams()->layer();
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t s = 0; s < o.numSeqs; ++s) {
      const int32_t first = starts[s], last = starts[s + 1];
      std::vector<float> &st = state_[{o.rank, layer, slots[s]}];
      if (contexts[s] - (last - first) == 0 || slots[s] < 0)
        st.assign(static_cast<size_t>(dim), 0.0f);
      ASSERT_EQ(st.size(), static_cast<size_t>(dim))
          << "a sequence continues in slot " << slots[s] << " that holds no state";
      for (int32_t t = first; t < last; ++t) {
        for (int64_t i = 0; i < dim; ++i) {
          const float a = halfToFloat(decay[i]);
          float &v = st[static_cast<size_t>(i)];
          v = a * v + (1.0f - a) * halfToFloat(in[t * dim + i]);
          const uint16_t want = floatToHalf(v), got = out[t * dim + i];
          if (want != got) {
            ++mismatches;
            ADD_FAILURE() << "layer " << layer << ", slot " << slots[s] << ", token " << t
                          << ", channel " << i << ": " << halfToFloat(got) << ", expected "
                          << halfToFloat(want);
            return;
          }
        }
        if (copies && copies[t] >= 0) {
          state_[{o.rank, layer, copies[t]}] = st;
          ++copiedTokens;
        }
      }
      checkedTokens += static_cast<size_t>(last - first);
    }
  }

  size_t checkedTokens = 0, mismatches = 0, copiedTokens = 0;

private:
  std::mutex mu_;
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, std::vector<float>> state_;
};

struct EngineRun {
  std::vector<std::vector<int32_t>> tokens;
  engine::EngineStats stats;
};

engine::EngineConfig engineConfig(const plan::Plan &p, int32_t kvBlocks) {
  engine::EngineConfig c = plan::engineConfigOf(p);
  if (kvBlocks > 0)
    c.numKvBlocks = kvBlocks;
  return c;
}

/// Runs `prompts` (greedy, `maxTokens` each) on one engine over `plan`.
EngineRun runEngine(const plan::LoadedPlan &plan, const std::vector<std::vector<int32_t>> &prompts,
                    int32_t maxTokens, int32_t kvBlocks, ReferenceEma *reference) {
  EngineRun run;
  auto backend = executor::CpuBackend::create(plan, {2, 0});
  EXPECT_TRUE(backend.ok()) << backend.message();
  if (!backend.ok())
    return run;
  if (reference)
    (*backend)->setOpObserver([reference](const executor::OpObservation &o) {
      if (o.kind == plan::OpKind::EmaScan)
        reference->check(o);
    });
  auto engine = engine::Engine::create(engineConfig(plan.plan(), kvBlocks), **backend);
  EXPECT_TRUE(engine.ok()) << engine.message();
  if (!engine.ok())
    return run;
  run.tokens = testing::runGreedyRequests(**engine, prompts, maxTokens);
  run.stats = (*engine)->stats();
  return run;
}

/// Six prompts of mixed lengths, one longer than a step's token budget,
/// each repeating a short phrase (so that prompt lookup finds drafts).
std::vector<std::vector<int32_t>> repeatingPrompts(int32_t vocab) {
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t length : {90, 9, 30, 14, 45, 21}) {
    std::vector<int32_t> p;
    for (int32_t i = 0; i < length; ++i)
      p.push_back((5 + 13 * (i % (3 + length % 4)) + length) % (vocab - 3));
    prompts.push_back(p);
  }
  return prompts;
}

TEST(StateModel, EngineMatchesTheReferenceAndEachRequestAlone) {
  for (int tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    auto path = testing::compilePlan(toyRequest(tp));
    auto loaded = plan::LoadedPlan::load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    const int32_t vocab = static_cast<int32_t>((*loaded)->plan().model()->vocab_size());
    // Six requests for four slots: one prompt longer than a step's token
    // budget (prefilled in chunks beside the others' decodes), and a KV
    // cache of 14 blocks of 16 tokens for prompts and outputs of up to 174
    // tokens each (preemption and recompute).
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t length : {150, 7, 33, 12, 61, 20}) {
      std::vector<int32_t> p;
      for (int32_t i = 0; i < length; ++i)
        p.push_back((11 + 37 * i + 101 * length) % (vocab - 3));
      prompts.push_back(p);
    }
    ReferenceEma reference;
    const EngineRun batched = runEngine(**loaded, prompts, 24, 14, &reference);
    EXPECT_GT(batched.stats.numPreemptions, 0u) << "the test needs a preemption";
    EXPECT_EQ(reference.mismatches, 0u);
    EXPECT_GT(reference.checkedTokens, 2u * 300) << "too few EmaScan tokens checked";
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      const EngineRun alone = runEngine(**loaded, {prompts[i]}, 24, 0, nullptr);
      ASSERT_EQ(batched.tokens[i].size(), 24u);
      EXPECT_EQ(batched.tokens[i], alone.tokens[0]);
    }
  }
}

// Qwen3-Next (Gated DeltaNet layers with a conv and a recurrent state
// slot each, gated attention, MoE): the same schedule, preemption and
// recompute included, gives every request the tokens it gets alone.
TEST(StateModel, Qwen3NextBatchedWithPreemptionEqualsEachRequestAlone) {
  for (int tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    testing::PlanRequest r = toyRequest(tp);
    r.family = "qwen3-next";
    auto path = testing::compilePlan(r);
    auto loaded = plan::LoadedPlan::load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    const plan::Rank *rank0 = (*loaded)->plan().ranks()->Get(0);
    ASSERT_EQ(rank0->caches()->size(), 3u) << "a KV group and the conv and gdn state groups";
    const int32_t vocab = static_cast<int32_t>((*loaded)->plan().model()->vocab_size());
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t length : {150, 7, 33, 12, 61, 20}) {
      std::vector<int32_t> p;
      for (int32_t i = 0; i < length; ++i)
        p.push_back((11 + 37 * i + 101 * length) % (vocab - 3));
      prompts.push_back(p);
    }
    const EngineRun batched = runEngine(**loaded, prompts, 24, 14, nullptr);
    EXPECT_GT(batched.stats.numPreemptions, 0u) << "the test needs a preemption";
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      const EngineRun alone = runEngine(**loaded, {prompts[i]}, 24, 0, nullptr);
      ASSERT_EQ(batched.tokens[i].size(), 24u);
      EXPECT_EQ(batched.tokens[i], alone.tokens[0]);
    }
  }
}

// checkStep refuses state slots and snapshot slots a backend would misuse:
// outside the plan's slots, one slot for two sequences, a copy into a
// sequence's own slot or two copies into one, copies for a plan without
// state, and arrays of the wrong length.
TEST(StateModel, StepsWithBadStateSlotsAreRefused) {
  testing::PlanRequest r = toyRequest(1);
  r.extra += "speculative: {method: ngram, num_speculative_tokens: 2}\n";
  auto loaded = plan::LoadedPlan::load(testing::compilePlan(r));
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  const plan::Plan &p = (*loaded)->plan();
  const int32_t slots = kMaxNumSeqs * 3;
  // Two sequences: a decode of one token, and a verify step of three.
  engine::StepBuffers buf;
  buf.maxBlocksPerSeq = static_cast<int32_t>(p.limits()->max_blocks_per_seq());
  buf.tokens = {5, 6, 7, 8};
  buf.positions = {3, 9, 10, 11};
  buf.slotMapping = {3, 25, 26, 27};
  buf.seqStarts = {0, 1, 4};
  buf.contextLens = {4, 12};
  buf.blockTables.assign(2 * size_t(buf.maxBlocksPerSeq), 0);
  buf.blockTables[size_t(buf.maxBlocksPerSeq)] = 1;
  buf.logitsRows = {0, 1, 2, 3};
  buf.stateSlots = {0, 1};
  buf.stateSnapshots = {-1, 4, 5, -1};
  std::vector<int32_t> &own = buf.stateSlots, &copies = buf.stateSnapshots;
  auto check = [&]() { return plan::checkStep(p, buf.view()); };
  Status ok = check();
  ASSERT_TRUE(ok.ok()) << ok.message();
  auto refused = [&](const std::string &want) {
    Status st = check();
    ASSERT_FALSE(st.ok()) << want;
    EXPECT_EQ(st.message(), want);
  };
  own = {0, slots};
  refused("state slot " + std::to_string(slots) + " is outside the plan's " +
          std::to_string(slots) + " slots (or -1)");
  own = {1, 1};
  refused("state slot 1 is given to two sequences");
  own = {0, 1};
  copies = {-1, 1, 5, -1};
  refused("state snapshot slot 1 is a sequence's own slot or another token's snapshot");
  copies = {-1, 4, 4, -1};
  refused("state snapshot slot 4 is a sequence's own slot or another token's snapshot");
  copies = {-1, 4, -2, -1};
  refused("state snapshot slot -2 is outside the plan's " + std::to_string(slots) +
          " slots (or -1)");
  copies = {-1, 4, 5};
  refused("step input state_snapshots holds 3 values; a step of 4 tokens and 2 sequences needs 4");
  copies.clear(); // no copies: a step without drafts to roll back
  EXPECT_TRUE(check().ok());

  // A plan without recurrent state takes no copies.
  testing::PlanRequest plain;
  plain.family = "llama";
  plain.maxNumSeqs = kMaxNumSeqs;
  plain.maxNumBatchedTokens = kMaxNumBatchedTokens;
  auto llama = plan::LoadedPlan::load(testing::compilePlan(plain));
  ASSERT_TRUE(llama.ok()) << llama.message();
  engine::StepBuffers one;
  one.maxBlocksPerSeq = static_cast<int32_t>((*llama)->plan().limits()->max_blocks_per_seq());
  one.tokens = {5};
  one.positions = {0};
  one.slotMapping = {0};
  one.seqStarts = {0, 1};
  one.contextLens = {1};
  one.blockTables.assign(size_t(one.maxBlocksPerSeq), 0);
  one.logitsRows = {0};
  one.stateSnapshots = {3};
  Status noState = plan::checkStep((*llama)->plan(), one.view());
  ASSERT_FALSE(noState.ok());
  EXPECT_EQ(noState.message(), "state snapshots for a plan without recurrent state");
}

// Speculative decoding over recurrent state: a verify step copies each
// draft-carrying token's state (StepInput.StateSnapshots), and a rejected
// draft rolls the sequence back to the copy. With n-gram drafts on
// repetitive prompts, greedy outputs are the plain plan's token for token,
// for the toy EMA model (every EmaScan, copies included, checked against
// the recurrence written above) and for Qwen3-Next's Gated DeltaNet layers,
// through batching, chunked prefill and preemption.
TEST(StateModel, SpeculativeDecodingRollsRejectedDraftsBack) {
  for (const char *family : {"toy-ema", "qwen3-next"}) {
    SCOPED_TRACE(family);
    testing::PlanRequest plain = toyRequest(1);
    plain.family = family;
    testing::PlanRequest spec = plain;
    spec.extra += "speculative: {method: ngram, num_speculative_tokens: 3, "
                  "prompt_lookup_min: 1, prompt_lookup_max: 2}\n";
    auto plainPlan = plan::LoadedPlan::load(testing::compilePlan(plain));
    auto specPlan = plan::LoadedPlan::load(testing::compilePlan(spec));
    ASSERT_TRUE(plainPlan.ok()) << plainPlan.message();
    ASSERT_TRUE(specPlan.ok()) << specPlan.message();
    // A slot per sequence and one per draft token, in every state group.
    for (const plan::CacheGroup *g : *(*specPlan)->plan().ranks()->Get(0)->caches())
      if (g->kind() == plan::CacheKind::StateSlots)
        EXPECT_EQ(g->num_slots(), uint32_t(kMaxNumSeqs * 4));
    const int32_t vocab = static_cast<int32_t>((*plainPlan)->plan().model()->vocab_size());
    // Prompts that repeat a short phrase (so that lookups find drafts),
    // one longer than a step's budget; a KV cache small enough to preempt.
    const std::vector<std::vector<int32_t>> prompts = repeatingPrompts(vocab);
    ReferenceEma reference;
    const bool ema = std::string(family) == "toy-ema";
    const EngineRun want = runEngine(**plainPlan, prompts, 32, 0, nullptr);
    const EngineRun got = runEngine(**specPlan, prompts, 32, 12, ema ? &reference : nullptr);
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      ASSERT_EQ(got.tokens[i].size(), 32u);
      EXPECT_EQ(got.tokens[i], want.tokens[i]);
    }
    const engine::SpecDecodeStats &st = got.stats.specDecode;
    EXPECT_GT(st.numAcceptedTokens, 0u);
    EXPECT_LT(st.numAcceptedTokens, st.numDraftTokens) << "the test needs rejected drafts";
    EXPECT_GT(got.stats.numPreemptions, 0u) << "the test needs a preemption";
    if (ema) {
      EXPECT_EQ(reference.mismatches, 0u);
      EXPECT_GT(reference.copiedTokens, 0u);
    }
  }
}

} // namespace
} // namespace volt

namespace volt {
namespace {

// MTP drafts on the cpu backend (Qwen3.5-MoE: Gated DeltaNet layers with
// state slots, gated attention, and the checkpoint's MTP head as a draft
// program): greedy outputs equal the plan's without drafts at k = 1, 3, 7,
// for a batch of mixed lengths with chunked prefill and a preemption.
TEST(StateModel, MtpDraftsKeepGreedyOutputs) {
  testing::PlanRequest plain = toyRequest(1);
  plain.family = "qwen3.5-moe";
  auto plainPlan = plan::LoadedPlan::load(testing::compilePlan(plain));
  ASSERT_TRUE(plainPlan.ok()) << plainPlan.message();
  const int32_t vocab = static_cast<int32_t>((*plainPlan)->plan().model()->vocab_size());
  const std::vector<std::vector<int32_t>> prompts = repeatingPrompts(vocab);
  const EngineRun want = runEngine(**plainPlan, prompts, 24, 0, nullptr);
  for (int k : {1, 3, 7}) {
    SCOPED_TRACE("k " + std::to_string(k));
    testing::PlanRequest spec = plain;
    spec.extra += "speculative: {method: mtp, num_speculative_tokens: " + std::to_string(k) + "}\n";
    auto specPlan = plan::LoadedPlan::load(testing::compilePlan(spec));
    ASSERT_TRUE(specPlan.ok()) << specPlan.message();
    ASSERT_TRUE(plan::hasDraftProgram((*specPlan)->plan()));
    const EngineRun got = runEngine(**specPlan, prompts, 24, 12, nullptr);
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      ASSERT_EQ(got.tokens[i].size(), 24u);
      EXPECT_EQ(got.tokens[i], want.tokens[i]);
    }
    const engine::SpecDecodeStats &st = got.stats.specDecode;
    EXPECT_GT(st.numDrafts, 0u);
    EXPECT_GT(st.numDraftSteps, st.numDrafts / uint64_t(kMaxNumSeqs));
    EXPECT_GT(got.stats.numPreemptions, 0u) << "the test needs a preemption";
  }
}

} // namespace
} // namespace volt
