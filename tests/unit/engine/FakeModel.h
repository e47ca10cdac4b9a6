//===- FakeModel.h - a deterministic step backend for engine tests -*- C++ -*-===//
//
// A "model" whose next-token logits are a hash of the sequence's whole
// context. The context is not taken from the engine's token lists: the
// backend writes each step's tokens (and their positions) into a paged KV
// store at the slots the engine gives, and reads every sequence's context
// back through its block table. A wrong slot, block table, position or
// prefix-cache hit therefore changes the logits, and reading a slot that
// holds another position is reported as an error. The reference generator
// computes the same logits from plain token lists.
//
// With state slots (enableState), it is also a recurrent model: each
// sequence's state, a running hash of its tokens, lives in the slot the
// engine gives it (StepBatch::stateSlots), restarts at position 0, and
// must equal the hash of the context read back through the KV cache, so
// that a slot given to two sequences, kept across a preemption or lost
// between chunks is reported as an error.
//
// With a draft program (enableDraft), it is also an MTP head: each step
// leaves a "hidden row" per token, the token's whole context (position 0
// to it); a draft step pairs a row with the token after its position,
// stores the pair in a KV store of its own at the token's slot, and
// rebuilds each sequence's context from that store. A row of another
// position, a stored pair that disagrees with the one before it (a stale
// draft's, or a position never filled) is reported as an error. Its
// greedy draft is the target's own next token, except on contexts whose
// hash is 0 mod 4, where it is deliberately wrong (so some drafts are
// rejected); its hidden row for the next draft step is the context it
// drafted from.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/TopCandidates.h"
#include "runtime/engine/Sampler.h"
#include "runtime/engine/StepBackend.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace volt::engine::testing {

inline uint64_t fakeMix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// The fake model's logits for a context (all tokens so far). With
/// window > 0 only the last `window` tokens count (a Markov model, whose
/// greedy outputs repeat, so n-gram drafts get accepted).
inline void fakeLogits(std::span<const int32_t> context, std::span<float> out,
                       int32_t window = 0) {
  if (window > 0 && context.size() > size_t(window))
    context = context.subspan(context.size() - size_t(window));
  uint64_t h = 0x1234567;
  for (int32_t t : context)
    h = fakeMix(h ^ (uint64_t(uint32_t(t)) + 0x9e3779b97f4a7c15ULL));
  for (size_t v = 0; v < out.size(); ++v) {
    uint64_t r = fakeMix(h + v * 0x9e3779b97f4a7c15ULL);
    out[v] = float(r >> 40) / float(1 << 24) * 8.0f - 4.0f; // [-4, 4)
  }
}

/// What a fake step looked like.
struct StepRecord {
  int32_t numTokens = 0;
  int32_t numSeqs = 0;
  std::vector<int32_t> seqLengths; // new tokens per sequence, in batch order
  std::vector<int32_t> contextLens;
  int32_t numRows = 0;
};

class FakeModel : public StepBackend {
public:
  FakeModel(int32_t vocabSize, int32_t numBlocks, int32_t blockSize)
      : vocab_(vocabSize), blockSize_(blockSize), kv_(size_t(numBlocks) * blockSize) {}

  /// Called first in every step; a failure is returned as the step's.
  std::function<Status(const StepBatch &)> beforeStep;
  /// fakeLogits' window: 0 for the whole context.
  int32_t window = 0;
  std::vector<StepRecord> steps;

  /// With candidateK > 0 the model also serves the candidate path: each
  /// sequence's candidates from cpu::topCandidates (the GPU kernel's
  /// reference), rows kept for fetchRows until the next step.
  int32_t candidateK = 0;
  /// Rows fetched, and the temperatures of the last candidate step.
  int32_t rowsFetched = 0;
  std::vector<float> lastTemperatures;

  int32_t candidatesPerSeq() const override { return candidateK; }

  Status runStepCandidates(const StepBatch &b, std::span<const float> temperatures,
                           StepCandidates &out) override {
    const size_t seqs = size_t(b.numSeqs), k = size_t(candidateK);
    if (candidateK <= 0 || out.k != candidateK || temperatures.size() != seqs ||
        out.ids.size() != seqs * k || out.values.size() != seqs * k || out.stats.size() != seqs * 3)
      return Error("fake model: candidate arrays disagree with S and k");
    rows_.assign(seqs * vocab_, 0.0f);
    VOLT_RETURN_IF_ERROR(runStep(b, rows_));
    rowsValid_ = true;
    lastTemperatures.assign(temperatures.begin(), temperatures.end());
    cpu::ThreadPool pool(1);
    cpu::topCandidates({int64_t(seqs), vocab_, candidateK}, rows_.data(), temperatures.data(),
                       out.ids.data(), out.values.data(), out.stats.data(), pool);
    return Status::success();
  }

  /// When set, fetchRows fails (a DMA error).
  bool failFetch = false;

  /// Makes the model keep a state per slot (0: none).
  void enableState(int32_t slots) { states_.assign(size_t(slots), kNoState); }
  /// The slots each step gave, in batch order.
  std::vector<std::vector<int32_t>> slotsPerStep;
  /// State copies made through StepBatch::stateSnapshots.
  int64_t numSnapshots = 0;

  Status fetchRows(std::span<const int32_t> seqs, std::span<float> rows) override {
    if (failFetch)
      return Error("fake model: DMA failed");
    if (!rowsValid_)
      return Error("fake model: no candidate step to fetch rows of");
    if (rows.size() != seqs.size() * vocab_)
      return Error("fake model: rows do not hold the sequences asked for");
    for (size_t j = 0; j < seqs.size(); ++j) {
      if (seqs[j] < 0 || size_t(seqs[j]) * vocab_ >= rows_.size() ||
          (j > 0 && seqs[j] <= seqs[j - 1]))
        return Error("fake model: row indices out of range or not ascending");
      std::copy_n(rows_.begin() + ptrdiff_t(size_t(seqs[j]) * vocab_), vocab_,
                  rows.begin() + ptrdiff_t(j * vocab_));
    }
    rowsFetched += int32_t(seqs.size());
    return Status::success();
  }

  /// Gives the model a draft program (StepBackend::runDraftStep).
  void enableDraft() { draft_ = true; mtpKv_.assign(kv_.size(), {}); }
  bool hasDraftProgram() const override { return draft_; }
  /// Called first in every draft step; a failure is returned as the step's.
  std::function<Status(const StepBatch &)> beforeDraftStep;
  /// Draft steps run, and the tokens they carried.
  int64_t numDraftSteps = 0, numDraftTokens = 0;

  Status runDraftStep(const StepBatch &b, std::span<float> logits) override {
    rowsValid_ = false;
    if (!draft_)
      return Error("fake model: no draft program");
    if (beforeDraftStep)
      VOLT_RETURN_IF_ERROR(beforeDraftStep(b));
    VOLT_RETURN_IF_ERROR(checkShapes(b, logits));
    if (!b.stateSnapshots.empty())
      return Error("fake model: state snapshots in a draft step");
    if (int32_t(b.hiddenRows.size()) != b.numTokens)
      return Error("fake model: " + std::to_string(b.hiddenRows.size()) + " hidden rows for " +
                   std::to_string(b.numTokens) + " tokens");
    for (int32_t t = 0; t < b.numTokens; ++t) {
      const int32_t r = b.hiddenRows[size_t(t)];
      if (r < 0 || size_t(r) >= hidden_.size())
        return Error("fake model: hidden row " + std::to_string(r) + " of " +
                     std::to_string(hidden_.size()) + " the last step left");
      if (hidden_[size_t(r)].size() != size_t(b.positions[t]) + 1)
        return Error("fake model: the hidden row for position " + std::to_string(b.positions[t]) +
                     " is the state at position " +
                     std::to_string(int64_t(hidden_[size_t(r)].size()) - 1));
      mtpKv_[size_t(b.slotMapping[t])] = {b.tokens[t], b.positions[t], hidden_[size_t(r)]};
    }
    std::vector<std::vector<int32_t>> next(size_t(b.numTokens));
    int32_t row = 0;
    for (int32_t s = 0; s < b.numSeqs; ++s) {
      // The sequence's context rebuilt from the draft layer's store: its
      // first row's state, then the token after each position.
      std::vector<int32_t> context;
      for (int32_t p = 0; p < b.contextLens[s]; ++p) {
        int32_t block = b.blockTables[size_t(s) * b.maxBlocksPerSeq + p / blockSize_];
        const MtpSlot &e = mtpKv_[size_t(block) * blockSize_ + p % blockSize_];
        if (e.position != p)
          return Error("fake model: draft step of sequence " + std::to_string(s) +
                       " reads position " + std::to_string(p) +
                       " from a draft slot holding position " + std::to_string(e.position));
        if (p == 0)
          context.push_back(e.state[0]);
        if (!std::equal(e.state.begin(), e.state.end(), context.begin()))
          return Error("fake model: the draft slot of position " + std::to_string(p) +
                       " holds a state that disagrees with the tokens before it (stale or "
                       "never filled)");
        context.push_back(e.token);
      }
      for (int32_t t = b.seqStarts[s]; t < b.seqStarts[s + 1]; ++t)
        next[size_t(t)].assign(context.begin(), context.begin() + b.positions[t] + 2);
      for (; row < b.numRows() && b.logitsRows[size_t(row)] < b.seqStarts[s + 1]; ++row) {
        const std::vector<int32_t> &from = next[size_t(b.logitsRows[size_t(row)])];
        auto out = logits.subspan(size_t(row) * vocab_, vocab_);
        fakeLogits(from, out, window);
        uint64_t h = 0;
        for (int32_t t : from)
          h = fakeMix(h + uint64_t(uint32_t(t)));
        if (h % 4 == 0)
          for (float &v : out)
            v = -v; // the target's least likely token
      }
    }
    hidden_ = std::move(next);
    ++numDraftSteps;
    numDraftTokens += b.numTokens;
    return Status::success();
  }

  Status runStep(const StepBatch &b, std::span<float> logits) override {
    rowsValid_ = false;
    if (beforeStep)
      VOLT_RETURN_IF_ERROR(beforeStep(b));
    VOLT_RETURN_IF_ERROR(checkShapes(b, logits));
    if (!b.hiddenRows.empty())
      return Error("fake model: hidden rows in a target step");
    StepRecord rec{b.numTokens, b.numSeqs, {}, {}, b.numRows()};
    for (int32_t t = 0; t < b.numTokens; ++t)
      kv_[b.slotMapping[t]] = {b.tokens[t], b.positions[t]};
    if (draft_)
      hidden_.assign(size_t(b.numTokens), {});
    std::vector<int32_t> context;
    VOLT_RETURN_IF_ERROR(checkSlots(b));
    int32_t row = 0;
    for (int32_t s = 0; s < b.numSeqs; ++s) {
      rec.seqLengths.push_back(b.seqStarts[s + 1] - b.seqStarts[s]);
      rec.contextLens.push_back(b.contextLens[s]);
      uint64_t state = 0;
      if (!states_.empty()) {
        const int32_t slot = b.stateSlots[s], begin = b.seqStarts[s];
        if (b.positions[begin] == 0) {
          state = kStartState;
        } else if (slot < 0 || states_[slot] == kNoState) {
          return Error("fake model: sequence " + std::to_string(s) + " continues at position " +
                       std::to_string(b.positions[begin]) + " without a state in slot " +
                       std::to_string(slot));
        } else {
          state = states_[slot];
        }
        for (int32_t t = begin; t < b.seqStarts[s + 1]; ++t) {
          state = stateStep(state, b.tokens[t]);
          if (!b.stateSnapshots.empty() && b.stateSnapshots[t] >= 0) {
            states_[size_t(b.stateSnapshots[t])] = state;
            ++numSnapshots;
          }
        }
        if (slot >= 0)
          states_[slot] = state;
      }
      context.clear();
      for (int32_t p = 0; p < b.contextLens[s]; ++p) {
        int32_t block = b.blockTables[size_t(s) * b.maxBlocksPerSeq + p / blockSize_];
        const Slot &slot = kv_[size_t(block) * blockSize_ + p % blockSize_];
        if (slot.position != p)
          return Error("fake model: sequence " + std::to_string(s) + " reads position " +
                       std::to_string(p) + " from a slot holding position " +
                       std::to_string(slot.position));
        context.push_back(slot.token);
      }
      if (!states_.empty()) {
        uint64_t want = kStartState;
        for (int32_t t : context)
          want = stateStep(want, t);
        if (state != want)
          return Error("fake model: sequence " + std::to_string(s) + "'s state in slot " +
                       std::to_string(b.stateSlots[s]) + " is not its own history's");
      }
      if (draft_) // each token's hidden row: its context
        for (int32_t t = b.seqStarts[s]; t < b.seqStarts[s + 1]; ++t)
          hidden_[size_t(t)].assign(context.begin(), context.begin() + b.positions[t] + 1);
      // Every row of the sequence: the context up to the row's position.
      for (; row < b.numRows() && b.logitsRows[size_t(row)] < b.seqStarts[s + 1]; ++row) {
        const size_t len = size_t(b.positions[size_t(b.logitsRows[size_t(row)])]) + 1;
        fakeLogits(std::span(context).first(len), logits.subspan(size_t(row) * vocab_, vocab_),
                   window);
      }
    }
    steps.push_back(std::move(rec));
    return Status::success();
  }

private:
  std::vector<float> rows_;
  bool rowsValid_ = false;

  static constexpr uint64_t kNoState = 0, kStartState = 0x5eed;
  static uint64_t stateStep(uint64_t state, int32_t token) {
    return fakeMix(state * 31 + uint64_t(uint32_t(token)) + 1) | 1; // never kNoState
  }
  /// A state per slot (empty: a model without recurrent state).
  std::vector<uint64_t> states_;

  Status checkSlots(const StepBatch &b) {
    if (states_.empty())
      return b.stateSlots.empty() ? Status::success()
                                  : Error("fake model: state slots for a model without state");
    if (int32_t(b.stateSlots.size()) != b.numSeqs)
      return Error("fake model: " + std::to_string(b.stateSlots.size()) + " state slots for " +
                   std::to_string(b.numSeqs) + " sequences");
    std::vector<bool> used(states_.size(), false);
    for (int32_t slot : b.stateSlots) {
      if (slot < 0 || size_t(slot) >= states_.size())
        return Error("fake model: state slot " + std::to_string(slot) + " out of range");
      if (used[size_t(slot)])
        return Error("fake model: state slot " + std::to_string(slot) + " used twice in a step");
      used[size_t(slot)] = true;
    }
    if (!b.stateSnapshots.empty() && int32_t(b.stateSnapshots.size()) != b.numTokens)
      return Error("fake model: " + std::to_string(b.stateSnapshots.size()) +
                   " state snapshots for " + std::to_string(b.numTokens) + " tokens");
    for (int32_t slot : b.stateSnapshots) {
      if (slot == -1)
        continue;
      if (slot < 0 || size_t(slot) >= states_.size())
        return Error("fake model: state snapshot slot " + std::to_string(slot) + " out of range");
      if (used[size_t(slot)])
        return Error("fake model: state snapshot slot " + std::to_string(slot) +
                     " is a sequence's slot or another token's snapshot");
      used[size_t(slot)] = true;
    }
    slotsPerStep.emplace_back(b.stateSlots.begin(), b.stateSlots.end());
    return Status::success();
  }

  struct Slot {
    int32_t token = -1;
    int32_t position = -1;
  };
  /// A draft layer's KV entry: the token after `position` and the state
  /// (context) it was paired with.
  struct MtpSlot {
    int32_t token = -1;
    int32_t position = -1;
    std::vector<int32_t> state;
  };
  bool draft_ = false;
  std::vector<MtpSlot> mtpKv_;
  /// The hidden rows the last step left.
  std::vector<std::vector<int32_t>> hidden_;

  Status checkShapes(const StepBatch &b, std::span<float> logits) const {
    auto fail = [](const std::string &what) { return Error("fake model: " + what); };
    if (b.numTokens < 1 || b.numSeqs < 1)
      return fail("empty step");
    if (int32_t(b.tokens.size()) != b.numTokens || int32_t(b.positions.size()) != b.numTokens ||
        int32_t(b.slotMapping.size()) != b.numTokens ||
        int32_t(b.seqStarts.size()) != b.numSeqs + 1 ||
        int32_t(b.contextLens.size()) != b.numSeqs || b.numRows() < b.numSeqs ||
        b.blockTables.size() != size_t(b.numSeqs) * b.maxBlocksPerSeq ||
        logits.size() != size_t(b.numRows()) * vocab_)
      return fail("array sizes disagree with T, S and R");
    for (int32_t r = 0; r < b.numRows(); ++r)
      if (b.logitsRows[size_t(r)] < 0 || b.logitsRows[size_t(r)] >= b.numTokens ||
          (r > 0 && b.logitsRows[size_t(r)] <= b.logitsRows[size_t(r - 1)]))
        return fail("logits rows are not ascending token rows");
    if (b.seqStarts[0] != 0 || b.seqStarts[b.numSeqs] != b.numTokens)
      return fail("seq_starts must run from 0 to T");
    for (int32_t s = 0; s < b.numSeqs; ++s) {
      int32_t begin = b.seqStarts[s], end = b.seqStarts[s + 1];
      if (end <= begin)
        return fail("a sequence with no tokens");
      // The sequence's rows end with its last token.
      auto last = std::lower_bound(b.logitsRows.begin(), b.logitsRows.end(), end);
      if (last == b.logitsRows.begin() || *(last - 1) != end - 1)
        return fail("the sequence's last token has no logits row");
      if (b.positions[end - 1] != b.contextLens[s] - 1)
        return fail("context length disagrees with the last position");
      for (int32_t t = begin; t < end; ++t) {
        int32_t pos = b.positions[t];
        if (t > begin && pos != b.positions[t - 1] + 1)
          return fail("positions of a sequence are not consecutive");
        if (b.tokens[t] < 0 || b.tokens[t] >= vocab_)
          return fail("token outside the vocabulary");
        int32_t block = b.blockTables[size_t(s) * b.maxBlocksPerSeq + pos / blockSize_];
        if (b.slotMapping[t] != block * blockSize_ + pos % blockSize_)
          return fail("slot mapping disagrees with the block table");
      }
    }
    return Status::success();
  }

  int32_t vocab_;
  int32_t blockSize_;
  std::vector<Slot> kv_;
};

/// What the engine must produce for `prompt`: run the fake model on plain
/// token lists, sampling as the engine does (draw i of `seed` for output i).
inline std::vector<int32_t> referenceTokens(std::span<const int32_t> prompt, int32_t count,
                                            const SamplingParams &params, uint64_t seed,
                                            int32_t vocab, int32_t window = 0) {
  Sampler sampler(vocab);
  TokenHistory history;
  history.setPrompt(prompt);
  std::vector<int32_t> tokens(prompt.begin(), prompt.end());
  std::vector<float> logits(vocab);
  std::vector<int32_t> out;
  for (int32_t i = 0; i < count; ++i) {
    fakeLogits(tokens, logits, window);
    auto r = sampler.sample(logits, params, history, {}, uniformDraw(seed, i));
    if (!r.ok())
      return out;
    tokens.push_back(r->token);
    history.addOutput(r->token);
    out.push_back(r->token);
  }
  return out;
}

} // namespace volt::engine::testing
