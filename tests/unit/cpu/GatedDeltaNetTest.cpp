//===- GatedDeltaNetTest.cpp - causalConv1d, gatedDeltaRule ---------------===//
//
// Against transformers' own Qwen3-Next functions over a schedule of engine
// steps (tests/golden/gated_deltanet_ops.py writes the expectations): a
// first prefill longer than one 64-token chunk, short sequences, a continued
// prefill and decodes, each carrying the conv and recurrent state in slots.
// Then the properties the engine relies on: a prefill split into chunks
// gives the same bits as the whole, a batch the same bits as each sequence
// alone, and a slot of -1 keeps nothing.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/GatedDeltaNet.h"

#include "TestUtil.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace volt::cpu {
namespace {

using test::h2d;

struct Golden {
  int64_t Hk, Hv, dk, dv, K, C;
  float eps;
  std::vector<uint16_t> convWeight, normWeight;
  std::vector<float> aLog, dtBias;
  nlohmann::json steps;
};

// The file writes FP16 values with the fewest digits that round back to
// them in FP16.
std::vector<uint16_t> halves(const nlohmann::json &a) {
  std::vector<uint16_t> v;
  v.reserve(a.size());
  for (const auto &x : a)
    v.push_back(floatToHalf(x.get<float>()));
  return v;
}

std::vector<float> floats(const nlohmann::json &a) { return a.get<std::vector<float>>(); }

const Golden &golden() {
  static const Golden g = [] {
    std::ifstream in(std::string(VOLT_SOURCE_DIR) + "/tests/golden/ops/gated_deltanet.json");
    EXPECT_TRUE(in) << "tests/golden/ops/gated_deltanet.json is missing";
    const auto doc = nlohmann::json::parse(in);
    const auto &sh = doc.at("shapes");
    const auto &w = doc.at("weights");
    return Golden{sh.at("key_heads"),        sh.at("value_heads"), sh.at("key_dim"),
                  sh.at("value_dim"),        sh.at("kernel"),      sh.at("conv_dim"),
                  sh.at("norm_eps"),         halves(w.at("conv_weight")),
                  halves(w.at("norm_weight")), floats(w.at("a_log")), floats(w.at("dt_bias")),
                  doc.at("steps")};
  }();
  return g;
}

// One step of the schedule as the engine hands it to the ops: sequences
// side by side, each in its own state slot.
struct Batch {
  std::vector<int32_t> seqStarts{0}, contextLens, stateSlots;
  /// Per token, or empty: no copies.
  std::vector<int32_t> snapshots;
  std::vector<uint16_t> convIn, qkv, gates, z;
  int64_t tokens = 0;
};

// Sequence s keeps its state in slot kSlots - 1 - s, so a slot read for the
// wrong sequence shows.
constexpr int32_t kSlots = 4;
int32_t slotOf(int seq) { return kSlots - 1 - seq; }

Batch batchOf(const nlohmann::json &step, std::map<int, int32_t> &positions) {
  const Golden &g = golden();
  Batch b;
  for (const auto &e : step) {
    const int seq = e.at("seq"), n = e.at("tokens");
    positions[seq] += n;
    b.tokens += n;
    b.seqStarts.push_back(static_cast<int32_t>(b.tokens));
    b.contextLens.push_back(positions[seq]);
    b.stateSlots.push_back(slotOf(seq));
    auto append = [](std::vector<uint16_t> &to, const std::vector<uint16_t> &from) {
      to.insert(to.end(), from.begin(), from.end());
    };
    append(b.convIn, halves(e.at("conv_in")));
    append(b.qkv, halves(e.at("qkv")));
    append(b.z, halves(e.at("z")));
    const auto bb = halves(e.at("b")), aa = halves(e.at("a"));
    for (int t = 0; t < n; ++t) {
      b.gates.insert(b.gates.end(), bb.begin() + t * g.Hv, bb.begin() + (t + 1) * g.Hv);
      b.gates.insert(b.gates.end(), aa.begin() + t * g.Hv, aa.begin() + (t + 1) * g.Hv);
    }
  }
  return b;
}

struct State {
  std::vector<uint16_t> conv;
  std::vector<float> rec;
  State() {
    const Golden &g = golden();
    // Stale values everywhere: a fresh sequence must not read them.
    conv.assign(static_cast<size_t>(kSlots * (g.K - 1) * g.C), floatToHalf(7.0f));
    rec.assign(static_cast<size_t>(kSlots * g.Hv * g.dk * g.dv), 7.0f);
  }
};

void runConv(const Batch &b, State &st, std::vector<uint16_t> &out, ThreadPool &pool) {
  const Golden &g = golden();
  out.assign(static_cast<size_t>(b.tokens * g.C), 0);
  causalConv1d({b.tokens, static_cast<int64_t>(b.stateSlots.size()), g.C, g.K}, b.convIn.data(),
               g.convWeight.data(), st.conv.data(), b.seqStarts.data(), b.contextLens.data(),
               b.stateSlots.data(), b.snapshots.empty() ? nullptr : b.snapshots.data(), out.data(),
               pool);
}

void runRule(const Batch &b, State &st, std::vector<uint16_t> &out, ThreadPool &pool) {
  const Golden &g = golden();
  out.assign(static_cast<size_t>(b.tokens * g.Hv * g.dv), 0);
  gatedDeltaRule({b.tokens, static_cast<int64_t>(b.stateSlots.size()), g.Hk, g.Hv, g.dk, g.dv,
                  g.eps},
                 b.qkv.data(), b.gates.data(), b.z.data(), g.aLog.data(), g.dtBias.data(),
                 g.normWeight.data(), st.rec.data(), b.seqStarts.data(), b.contextLens.data(),
                 b.stateSlots.data(), b.snapshots.empty() ? nullptr : b.snapshots.data(),
                 out.data(), pool);
}

// The largest |volt - reference| over `scale`, the reference's largest
// magnitude (the outputs are normed, so their scale is about 1).
double maxRelError(const uint16_t *got, const std::vector<float> &want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(h2d(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return err / scale;
}

// The tolerances, from measurement (docs/golden.md, "Gated DeltaNet ops"):
// the FP16 outputs are the reference rounded, within an FP16 ulp (2^-10 of
// the largest value: the reference is FP32 and volt rounds once); the FP32
// state differs from the chunked form's only by FP32 rounding.
constexpr double kOutTol = 0x1p-10, kStateTol = 2e-6;

TEST(GatedDeltaNet, MatchesTransformersOverASchedule) {
  const Golden &g = golden();
  ThreadPool pool(2);
  State st;
  std::map<int, int32_t> positions;
  for (size_t step = 0; step < g.steps.size(); ++step) {
    const Batch b = batchOf(g.steps[step], positions);
    std::vector<uint16_t> conv, out;
    runConv(b, st, conv, pool);
    runRule(b, st, out, pool);
    for (size_t i = 0; i < g.steps[step].size(); ++i) {
      const auto &e = g.steps[step][i];
      const int seq = e.at("seq");
      SCOPED_TRACE("step " + std::to_string(step) + ", sequence " + std::to_string(seq));
      const int64_t first = b.seqStarts[i];
      EXPECT_LE(maxRelError(conv.data() + first * g.C, floats(e.at("conv_out"))), kOutTol);
      EXPECT_LE(maxRelError(out.data() + first * g.Hv * g.dv, floats(e.at("out"))), kOutTol);
      // The conv state is inputs moved, exactly.
      const auto wantConv = halves(e.at("conv_state"));
      const uint16_t *gotConv = st.conv.data() + slotOf(seq) * (g.K - 1) * g.C;
      EXPECT_TRUE(std::equal(wantConv.begin(), wantConv.end(), gotConv));
      const auto wantState = floats(e.at("state"));
      const float *gotState = st.rec.data() + slotOf(seq) * g.Hv * g.dk * g.dv;
      double err = 0, scale = 0;
      for (size_t j = 0; j < wantState.size(); ++j) {
        err = std::max(err, std::fabs(static_cast<double>(gotState[j]) - wantState[j]));
        scale = std::max(scale, std::fabs(static_cast<double>(wantState[j])));
      }
      EXPECT_LE(err / scale, kStateTol);
    }
  }
}

// The first sequence's 75-token prefill, whole, then again as the engine's
// chunked prefill cuts it (40 + 35 tokens in two steps).
TEST(GatedDeltaNet, ChunkedPrefillGivesTheSameBitsAsTheWhole) {
  const Golden &g = golden();
  ThreadPool pool(2);
  std::map<int, int32_t> positions;
  nlohmann::json only = nlohmann::json::array({g.steps[0][0]});
  const Batch whole = batchOf(only, positions);
  ASSERT_EQ(whole.tokens, 75);
  State a, b;
  std::vector<uint16_t> convWhole, outWhole;
  runConv(whole, a, convWhole, pool);
  runRule(whole, a, outWhole, pool);

  std::vector<uint16_t> convParts, outParts;
  for (int64_t begin : {0, 40}) {
    const int64_t n = begin == 0 ? 40 : 35;
    Batch part;
    part.tokens = n;
    part.seqStarts = {0, static_cast<int32_t>(n)};
    part.contextLens = {static_cast<int32_t>(begin + n)};
    part.stateSlots = {slotOf(0)};
    part.convIn.assign(whole.convIn.begin() + begin * g.C, whole.convIn.begin() + (begin + n) * g.C);
    part.qkv.assign(whole.qkv.begin() + begin * g.C, whole.qkv.begin() + (begin + n) * g.C);
    part.gates.assign(whole.gates.begin() + begin * 2 * g.Hv,
                      whole.gates.begin() + (begin + n) * 2 * g.Hv);
    part.z.assign(whole.z.begin() + begin * g.Hv * g.dv,
                  whole.z.begin() + (begin + n) * g.Hv * g.dv);
    std::vector<uint16_t> conv, out;
    runConv(part, b, conv, pool);
    runRule(part, b, out, pool);
    convParts.insert(convParts.end(), conv.begin(), conv.end());
    outParts.insert(outParts.end(), out.begin(), out.end());
  }
  EXPECT_EQ(convParts, convWhole);
  EXPECT_EQ(outParts, outWhole);
  EXPECT_EQ(a.conv, b.conv);
  EXPECT_EQ(a.rec, b.rec);
}

// A verify step's copies: the state copied after token j of a step is the
// state a step that stopped at token j leaves, bit for bit (the engine rolls
// a rejected draft back by taking that copy as the sequence's state).
TEST(GatedDeltaNet, ACopyAfterATokenIsTheStateOfAStepEndingThere) {
  const Golden &g = golden();
  ThreadPool pool(2);
  // Sequence 0's 75-token prefill, copying after tokens 9 and 40 into the
  // two slots no sequence uses here.
  std::map<int, int32_t> positions;
  Batch whole = batchOf(nlohmann::json::array({g.steps[0][0]}), positions);
  whole.snapshots.assign(static_cast<size_t>(whole.tokens), -1);
  whole.snapshots[9] = slotOf(1);
  whole.snapshots[40] = slotOf(2);
  State copied;
  std::vector<uint16_t> conv, out;
  runConv(whole, copied, conv, pool);
  runRule(whole, copied, out, pool);
  for (int64_t upTo : {9, 40}) {
    SCOPED_TRACE("copy after token " + std::to_string(upTo));
    const int64_t n = upTo + 1;
    Batch part;
    part.tokens = n;
    part.seqStarts = {0, static_cast<int32_t>(n)};
    part.contextLens = {static_cast<int32_t>(n)};
    part.stateSlots = {slotOf(0)};
    part.convIn.assign(whole.convIn.begin(), whole.convIn.begin() + n * g.C);
    part.qkv.assign(whole.qkv.begin(), whole.qkv.begin() + n * g.C);
    part.gates.assign(whole.gates.begin(), whole.gates.begin() + n * 2 * g.Hv);
    part.z.assign(whole.z.begin(), whole.z.begin() + n * g.Hv * g.dv);
    State shorter;
    std::vector<uint16_t> c, o;
    runConv(part, shorter, c, pool);
    runRule(part, shorter, o, pool);
    const int32_t copy = upTo == 9 ? slotOf(1) : slotOf(2);
    const int64_t convSlot = (g.K - 1) * g.C, recSlot = g.Hv * g.dk * g.dv;
    EXPECT_TRUE(std::equal(shorter.conv.begin() + slotOf(0) * convSlot,
                           shorter.conv.begin() + (slotOf(0) + 1) * convSlot,
                           copied.conv.begin() + copy * convSlot));
    EXPECT_TRUE(std::equal(shorter.rec.begin() + slotOf(0) * recSlot,
                           shorter.rec.begin() + (slotOf(0) + 1) * recSlot,
                           copied.rec.begin() + copy * recSlot));
    // And a copy is not the final state (the test can tell them apart).
    EXPECT_FALSE(std::equal(copied.rec.begin() + slotOf(0) * recSlot,
                            copied.rec.begin() + (slotOf(0) + 1) * recSlot,
                            copied.rec.begin() + copy * recSlot));
  }
  // The outputs and the final state are those of a step without copies.
  State plain;
  whole.snapshots.clear();
  std::vector<uint16_t> conv2, out2;
  runConv(whole, plain, conv2, pool);
  runRule(whole, plain, out2, pool);
  EXPECT_EQ(conv, conv2);
  EXPECT_EQ(out, out2);
  const int64_t recSlot = g.Hv * g.dk * g.dv;
  EXPECT_TRUE(std::equal(plain.rec.begin() + slotOf(0) * recSlot,
                         plain.rec.begin() + (slotOf(0) + 1) * recSlot,
                         copied.rec.begin() + slotOf(0) * recSlot));
}

// Step 0 batched against each of its sequences run alone, and with 1 or 2
// threads: the same bits.
TEST(GatedDeltaNet, ABatchGivesEachSequenceItsOwnBits) {
  const Golden &g = golden();
  std::map<int, int32_t> positions;
  const Batch batch = batchOf(g.steps[0], positions);
  ThreadPool two(2), one(1);
  State together;
  std::vector<uint16_t> convTogether, outTogether;
  runConv(batch, together, convTogether, two);
  runRule(batch, together, outTogether, two);
  State alone;
  for (size_t i = 0; i < g.steps[0].size(); ++i) {
    std::map<int, int32_t> pos;
    const Batch b = batchOf(nlohmann::json::array({g.steps[0][i]}), pos);
    std::vector<uint16_t> conv, out;
    runConv(b, alone, conv, one);
    runRule(b, alone, out, one);
    const int64_t first = batch.seqStarts[i];
    EXPECT_TRUE(std::equal(conv.begin(), conv.end(), convTogether.begin() + first * g.C));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), outTogether.begin() + first * g.Hv * g.dv));
  }
  // Slots no sequence used keep their stale contents in both runs.
  EXPECT_EQ(alone.conv, together.conv);
  EXPECT_EQ(alone.rec, together.rec);
}

// A slot of -1 (a sequence the engine keeps no state for) starts from zero,
// as position 0 does, and writes no slot.
TEST(GatedDeltaNet, SlotMinusOneKeepsNothing) {
  const Golden &g = golden();
  ThreadPool pool(2);
  std::map<int, int32_t> positions;
  // Sequence 0's decode (step 1) as if it had no state: its context says
  // position 75, but with slot -1 it starts from zero.
  positions[0] = 75;
  Batch b = batchOf(nlohmann::json::array({g.steps[1][0]}), positions);
  b.stateSlots = {-1};
  State st;
  const State before = st;
  std::vector<uint16_t> conv, out;
  runConv(b, st, conv, pool);
  runRule(b, st, out, pool);
  EXPECT_EQ(st.conv, before.conv);
  EXPECT_EQ(st.rec, before.rec);
  // The same token at position 0 with a slot: the same outputs.
  b.contextLens = {1};
  b.stateSlots = {slotOf(0)};
  std::vector<uint16_t> conv0, out0;
  runConv(b, st, conv0, pool);
  runRule(b, st, out0, pool);
  EXPECT_EQ(conv, conv0);
  EXPECT_EQ(out, out0);
}

} // namespace
} // namespace volt::cpu
