//===- StepOperands.cpp ---------------------------------------------------===//
#include "runtime/plan/StepOperands.h"

#include "runtime/plan/Caches.h"
#include "runtime/schema/Ops.h"

#include <vector>

namespace volt::plan {

Result<OperandPlace> operandPlace(const Rank &rank, const Operand &o) {
  OperandPlace p;
  switch (o.kind()) {
  case OperandKind::Arena:
    if (o.index() >= rank.buffers()->size())
      break;
    p.region = Region::Arena;
    p.offset = rank.buffers()->Get(o.index())->offset();
    return p;
  case OperandKind::Weight:
    if (o.index() >= rank.weights()->size())
      break;
    p.region = Region::Weights;
    p.offset = rank.weights()->Get(o.index())->offset();
    return p;
  case OperandKind::Input:
    if (o.index() > static_cast<uint32_t>(StepInput::MAX))
      break;
    p.region = Region::Input;
    p.input = static_cast<StepInput>(o.index());
    return p;
  case OperandKind::Output:
    if (o.index() > static_cast<uint32_t>(StepOutput::MAX))
      break;
    p.region = static_cast<StepOutput>(o.index()) == StepOutput::Hidden ? Region::Hidden
                                                                        : Region::Output;
    return p;
  case OperandKind::Cache: {
    auto layer = cacheLayer(rank, o.index());
    if (!layer)
      break;
    p.region = Region::Cache;
    p.offset = layer->offset;
    return p;
  }
  case OperandKind::Workspace:
    if (o.index() >= rank.workspace_bytes())
      break;
    p.region = Region::Workspace;
    p.offset = o.index();
    return p;
  }
  return Error("operand " + std::to_string(static_cast<int>(o.kind())) + ":" +
               std::to_string(o.index()) + " is outside the plan");
}

uint64_t operandRows(const Rank &rank, const Operand &o, uint64_t tokens, uint64_t logitsRows) {
  if (o.kind() == OperandKind::Output)
    return o.index() == static_cast<uint32_t>(StepOutput::Hidden) ? tokens : logitsRows;
  if (o.kind() == OperandKind::Arena && o.index() < rank.buffers()->size() &&
      rank.buffers()->Get(o.index())->per_token_bytes() == 0)
    return logitsRows;
  return tokens;
}

uint32_t maxLogitsRows(const Limits &limits) {
  return limits.max_logits_rows() == 0 ? limits.max_num_seqs() : limits.max_logits_rows();
}

engine::EngineConfig engineConfigOf(const Plan &p) {
  const Rank *rank0 = p.ranks()->Get(0);
  const Limits *limits = p.limits();
  engine::EngineConfig config;
  config.vocabSize = static_cast<int32_t>(p.model()->vocab_size());
  // The loader checked that every rank has the paged KV group.
  config.blockSize = static_cast<int32_t>(pagedKvGroup(*rank0)->block_size());
  config.numKvBlocks = static_cast<int32_t>(pagedKvGroup(*rank0)->num_blocks());
  config.numStateSlots = static_cast<int32_t>(stateSlotCount(*rank0));
  config.maxNumSeqs = static_cast<int32_t>(limits->max_num_seqs());
  config.maxNumBatchedTokens = static_cast<int32_t>(limits->max_num_batched_tokens());
  config.maxModelLen = static_cast<int32_t>(limits->max_model_len());
  config.maxBlocksPerSeq = static_cast<int32_t>(limits->max_blocks_per_seq());
  config.enablePrefixCaching = p.enable_prefix_caching();
  config.maxLogitsRows = static_cast<int32_t>(maxLogitsRows(*limits));
  if (const Speculative *sp = p.speculative()) {
    // The loader checked them (PlanFile.cpp).
    config.numSpeculativeTokens = static_cast<int32_t>(sp->num_speculative_tokens());
    config.promptLookupMin = static_cast<int32_t>(sp->prompt_lookup_min());
    config.promptLookupMax = static_cast<int32_t>(sp->prompt_lookup_max());
    if (sp->method() && sp->method()->str() == "mtp") {
      config.draftSource = engine::DraftSource::Mtp;
      config.promptLookupMin = config.promptLookupMax = 1; // unused
    }
  }
  if (p.model()->eos_token_ids())
    config.eosTokenIds.assign(p.model()->eos_token_ids()->begin(),
                              p.model()->eos_token_ids()->end());
  config.seed = static_cast<uint64_t>(p.seed());
  return config;
}


DType operandDtype(const Rank &rank, const Operand &o) {
  if (o.kind() == OperandKind::Output)
    return o.index() == static_cast<uint32_t>(StepOutput::Hidden) ? DType::F16 : DType::F32;
  if (o.kind() == OperandKind::Arena && o.index() < rank.buffers()->size())
    return rank.buffers()->Get(o.index())->dtype();
  return DType::F16;
}

std::span<const int32_t> stepInput(const engine::StepBatch &batch, StepInput input) {
  switch (input) {
  case StepInput::Tokens:
    return batch.tokens;
  case StepInput::Positions:
    return batch.positions;
  case StepInput::SlotMapping:
    return batch.slotMapping;
  case StepInput::SeqStarts:
    return batch.seqStarts;
  case StepInput::ContextLens:
    return batch.contextLens;
  case StepInput::BlockTables:
    return batch.blockTables;
  case StepInput::LogitsRows:
    return batch.logitsRows;
  case StepInput::StateSlots:
    return batch.stateSlots;
  case StepInput::StateSnapshots:
    return batch.stateSnapshots;
  case StepInput::HiddenRows:
    return batch.hiddenRows;
  }
  return {};
}

std::pair<uint32_t, uint32_t> programOps(const Rank &rank, Program program) {
  const uint32_t n = rank.ops() ? rank.ops()->size() : 0;
  const uint32_t begin = rank.draft_ops_begin();
  if (begin == 0 || begin > n)
    return program == Program::Target ? std::pair{0u, n} : std::pair{n, n};
  return program == Program::Target ? std::pair{0u, begin} : std::pair{begin, n};
}

Status checkStep(const Plan &p, const engine::StepBatch &batch, Program program) {
  const bool draft = program == Program::Draft;
  if (draft && !hasDraftProgram(p))
    return Error("a draft step for a plan without a draft program");
  const Limits *limits = p.limits();
  const uint32_t vocab = p.model()->vocab_size();
  if (batch.numTokens < 1 ||
      static_cast<uint32_t>(batch.numTokens) > limits->max_num_batched_tokens())
    return Error("step of " + std::to_string(batch.numTokens) + " tokens; the plan serves 1.." +
                 std::to_string(limits->max_num_batched_tokens()) + " per step");
  if (batch.numSeqs < 1 || batch.numSeqs > batch.numTokens ||
      static_cast<uint32_t>(batch.numSeqs) > limits->max_num_seqs())
    return Error("step of " + std::to_string(batch.numSeqs) + " sequences; the plan serves 1.." +
                 std::to_string(limits->max_num_seqs()));
  if (static_cast<uint32_t>(batch.maxBlocksPerSeq) != limits->max_blocks_per_seq())
    return Error("block tables of width " + std::to_string(batch.maxBlocksPerSeq) +
                 ", the plan's is " + std::to_string(limits->max_blocks_per_seq()));
  const Rank &rank = *p.ranks()->Get(0);
  const uint32_t stateSlots = stateSlotCount(rank);
  const size_t T = static_cast<size_t>(batch.numTokens), S = static_cast<size_t>(batch.numSeqs);
  const size_t R = batch.logitsRows.size();
  if (R < S || R > maxLogitsRows(*limits))
    return Error("step of " + std::to_string(R) + " logits rows for " + std::to_string(S) +
                 " sequences; the plan serves one per sequence up to " +
                 std::to_string(maxLogitsRows(*limits)) + " in all");
  for (StepInput input : EnumValuesStepInput()) {
    size_t expected = T;
    switch (input) {
    case StepInput::Tokens:
    case StepInput::Positions:
    case StepInput::SlotMapping:
      expected = T;
      break;
    case StepInput::SeqStarts:
      expected = S + 1;
      break;
    case StepInput::ContextLens:
      expected = S;
      break;
    case StepInput::LogitsRows:
      expected = R;
      break;
    case StepInput::BlockTables:
      expected = S * static_cast<size_t>(batch.maxBlocksPerSeq);
      break;
    case StepInput::StateSlots:
      // A plan without recurrent state never reads it, nor a draft
      // program: empty is allowed.
      expected = (stateSlots == 0 || draft) && stepInput(batch, input).empty() ? 0 : S;
      break;
    case StepInput::StateSnapshots:
      // Empty: no copies (a draft step has no recurrent state to copy).
      expected = stepInput(batch, input).empty() || draft ? 0 : T;
      break;
    case StepInput::HiddenRows:
      expected = draft ? T : 0;
      break;
    }
    const size_t found = stepInput(batch, input).size();
    if (found != expected)
      return Error("step input " + ops::snakeCase(EnumNameStepInput(input)) + " holds " +
                   std::to_string(found) + " values; a step of " + std::to_string(T) +
                   " tokens and " + std::to_string(S) + " sequences needs " +
                   std::to_string(expected));
  }
  for (int32_t t : batch.tokens)
    if (t < 0 || static_cast<uint32_t>(t) >= vocab)
      return Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                   std::to_string(vocab - 1) + ")");
  for (size_t r = 0; r < R; ++r) {
    const int32_t row = batch.logitsRows[r];
    if (row < 0 || static_cast<size_t>(row) >= T || (r > 0 && row <= batch.logitsRows[r - 1]))
      return Error("logits row " + std::to_string(row) + " (entry " + std::to_string(r) +
                   "): expected ascending token rows of the step's " + std::to_string(T));
  }
  for (int32_t row : batch.hiddenRows)
    if (row < 0 || static_cast<uint32_t>(row) >= limits->max_num_batched_tokens())
      return Error("hidden row " + std::to_string(row) + " is outside the hidden rows (0.." +
                   std::to_string(limits->max_num_batched_tokens() - 1) + ")");
  const CacheGroup *kv = pagedKvGroup(rank);
  const uint32_t blocks = kv ? kv->num_blocks() : 0, blockSize = kv ? kv->block_size() : 0;
  for (int32_t slot : batch.slotMapping)
    if (slot >= 0 && static_cast<uint64_t>(slot) >= uint64_t{blocks} * blockSize)
      return Error("KV slot " + std::to_string(slot) + " is outside the cache (" +
                   std::to_string(blocks) + " blocks of " + std::to_string(blockSize) + ")");
  for (int32_t block : batch.blockTables)
    if (block < 0 || static_cast<uint32_t>(block) >= blocks)
      return Error("block table entry " + std::to_string(block) + " is outside the cache");
  // A plan without recurrent state reads no slot.
  std::vector<bool> used(stateSlots, false);
  for (int32_t slot : stateSlots ? batch.stateSlots : std::span<const int32_t>()) {
    if (slot == -1)
      continue;
    if (slot < 0 || static_cast<uint32_t>(slot) >= stateSlots)
      return Error("state slot " + std::to_string(slot) + " is outside the plan's " +
                   std::to_string(stateSlots) + " slots (or -1)");
    if (used[static_cast<size_t>(slot)])
      return Error("state slot " + std::to_string(slot) + " is given to two sequences");
    used[static_cast<size_t>(slot)] = true;
  }
  // A snapshot slot is no sequence's own slot and serves one token: the
  // ops write it while other sequences read theirs.
  if (!batch.stateSnapshots.empty() && stateSlots == 0)
    return Error("state snapshots for a plan without recurrent state");
  for (int32_t slot : batch.stateSnapshots) {
    if (slot == -1)
      continue;
    if (slot < 0 || static_cast<uint32_t>(slot) >= stateSlots)
      return Error("state snapshot slot " + std::to_string(slot) + " is outside the plan's " +
                   std::to_string(stateSlots) + " slots (or -1)");
    if (used[static_cast<size_t>(slot)])
      return Error("state snapshot slot " + std::to_string(slot) +
                   " is a sequence's own slot or another token's snapshot");
    used[static_cast<size_t>(slot)] = true;
  }
  return Status::success();
}

} // namespace volt::plan
