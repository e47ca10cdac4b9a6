//===- EngineConfig.cpp - validation of the engine's limits ---------------===//
#include "runtime/engine/EngineConfig.h"

#include <string>

namespace volt::engine {

namespace {

Status atLeast(const char *field, int64_t value, int64_t min) {
  if (value < min)
    return Error(std::string(field) + ": expected at least " + std::to_string(min) + ", found " +
                 std::to_string(value));
  return Status::success();
}

} // namespace

Status validateConfig(EngineConfig &config) {
  VOLT_RETURN_IF_ERROR(atLeast("vocab_size", config.vocabSize, 1));
  VOLT_RETURN_IF_ERROR(atLeast("block_size", config.blockSize, 1));
  VOLT_RETURN_IF_ERROR(atLeast("num_kv_blocks", config.numKvBlocks, 1));
  VOLT_RETURN_IF_ERROR(atLeast("max_num_seqs", config.maxNumSeqs, 1));
  VOLT_RETURN_IF_ERROR(atLeast("max_num_batched_tokens", config.maxNumBatchedTokens, 1));
  VOLT_RETURN_IF_ERROR(atLeast("max_model_len", config.maxModelLen, 2));
  VOLT_RETURN_IF_ERROR(atLeast("max_logprobs", config.maxLogprobs, 0));
  VOLT_RETURN_IF_ERROR(atLeast("sampler_threads", config.samplerThreads, 1));
  if (config.samplerThreads > 256)
    return Error("sampler_threads: expected at most 256, found " +
                 std::to_string(config.samplerThreads));
  VOLT_RETURN_IF_ERROR(atLeast("num_state_slots", config.numStateSlots, 0));
  if (config.numStateSlots > 0 && config.numStateSlots < config.maxNumSeqs)
    return Error("num_state_slots: expected 0 or at least max_num_seqs (" +
                 std::to_string(config.maxNumSeqs) + "), found " +
                 std::to_string(config.numStateSlots));
  if (config.numStateSlots > 0 && config.enablePrefixCaching)
    return Error("enable_prefix_caching: the model has layers with recurrent state, whose "
                 "prefixes cannot be reused; turn prefix caching off");
  VOLT_RETURN_IF_ERROR(atLeast("num_speculative_tokens", config.numSpeculativeTokens, 0));
  if (config.numSpeculativeTokens > kMaxSpeculativeTokens)
    return Error("num_speculative_tokens: expected at most " +
                 std::to_string(kMaxSpeculativeTokens) + ", found " +
                 std::to_string(config.numSpeculativeTokens));
  if (config.numSpeculativeTokens > 0) {
    VOLT_RETURN_IF_ERROR(atLeast("prompt_lookup_min", config.promptLookupMin, 1));
    if (config.promptLookupMax < config.promptLookupMin)
      return Error("prompt_lookup_max: expected at least prompt_lookup_min (" +
                   std::to_string(config.promptLookupMin) + "), found " +
                   std::to_string(config.promptLookupMax));
    // A slot per sequence and one per draft token: the copies a verify
    // step keeps to roll a rejected draft's update back.
    const int64_t slots = int64_t(config.maxNumSeqs) * (1 + config.numSpeculativeTokens);
    if (config.numStateSlots > 0 && config.numStateSlots < slots)
      return Error("num_state_slots: speculative decoding over recurrent state needs max_num_seqs "
                   "x (1 + num_speculative_tokens) = " +
                   std::to_string(slots) + " slots, found " +
                   std::to_string(config.numStateSlots));
  }
  VOLT_RETURN_IF_ERROR(atLeast("max_logits_rows", config.maxLogitsRows, 0));
  if (config.maxLogitsRows == 0)
    config.maxLogitsRows = config.maxNumSeqs * (1 + config.numSpeculativeTokens);
  if (config.maxLogitsRows < config.maxNumSeqs)
    return Error("max_logits_rows: expected at least max_num_seqs (" +
                 std::to_string(config.maxNumSeqs) + "), found " +
                 std::to_string(config.maxLogitsRows));
  int64_t needed = (int64_t(config.maxModelLen) + config.blockSize - 1) / int64_t(config.blockSize);
  if (config.maxBlocksPerSeq == 0)
    config.maxBlocksPerSeq = static_cast<int32_t>(needed);
  if (config.maxBlocksPerSeq < needed)
    return Error("max_blocks_per_seq: expected at least ceil(max_model_len / block_size) = " +
                 std::to_string(needed) + ", found " + std::to_string(config.maxBlocksPerSeq));
  for (int32_t id : config.eosTokenIds)
    if (id < 0 || id >= config.vocabSize)
      return Error("eos_token_ids: token " + std::to_string(id) +
                   " is outside the vocabulary [0, " + std::to_string(config.vocabSize) + ")");
  return Status::success();
}

} // namespace volt::engine
