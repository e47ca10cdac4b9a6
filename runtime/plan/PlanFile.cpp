//===- PlanFile.cpp -------------------------------------------------------===//
#include "runtime/plan/PlanFile.h"

#include "runtime/engine/EngineConfig.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/schema/Ops.h"

#include <xxhash.h>

namespace volt::plan {
namespace {

namespace ops = volt::plan::ops;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// Plan.sampler, when present: a top_candidates kernel of the plan and a
/// candidate count the kernel and the engine accept.
Status checkSampler(const Plan &p, const std::string &name) {
  const Sampler *s = p.sampler();
  if (!s)
    return Status::success();
  const uint32_t kernels = p.kernels() ? p.kernels()->size() : 0;
  if (s->kernel() >= kernels)
    return Error(name + ": sampler.kernel: expected an index below the plan's " +
                 std::to_string(kernels) + " kernels, found " + std::to_string(s->kernel()));
  const Kernel *kernel = p.kernels()->Get(s->kernel());
  const std::string kernelName = kernel->name() ? kernel->name()->str() : "";
  if (kernelName != "top_candidates")
    return Error(name + ": sampler.kernel: expected a top_candidates kernel, found kernel " +
                 std::to_string(s->kernel()) + " '" + kernelName + "'");
  const uint32_t k = s->k();
  if (k < 1 || k > 256 || (k & (k - 1)) != 0)
    return Error(name + ": sampler.k: expected a power of two in [1, 256], found " +
                 std::to_string(k));
  if (s->threads() < k || s->threads() > 1024 || s->threads() % 32 != 0)
    return Error(name + ": sampler.threads: expected a multiple of 32 in [k, 1024], found " +
                 std::to_string(s->threads()));
  if (k > p.model()->vocab_size())
    return Error(name + ": sampler.k: expected at most the vocabulary (" +
                 std::to_string(p.model()->vocab_size()) + "), found " + std::to_string(k));
  // The kernel's buffers are sized by its constants: they must be the
  // sampler's and the model's (its source reads "top_candidates(k=64,
  // vocab=151936, threads=512)").
  const std::string source = kernel->source() ? kernel->source()->str() : "";
  const std::string expected = "top_candidates(k=" + std::to_string(k) +
                               ", vocab=" + std::to_string(p.model()->vocab_size()) +
                               ", threads=" + std::to_string(s->threads()) + ")";
  if (source != expected)
    return Error(name + ": sampler: kernel " + std::to_string(s->kernel()) + " was built as '" +
                 source + "', expected '" + expected + "'");
  return Status::success();
}

/// Speculative decoding's settings, and the logits rows they need.
Status checkSpeculative(const Plan &p, const std::string &name) {
  const Limits &limits = *p.limits();
  const uint64_t seqs = limits.max_num_seqs();
  uint64_t tokens = 0;
  const bool draftProgram = hasDraftProgram(p);
  if (const Speculative *sp = p.speculative()) {
    const std::string method = sp->method() ? sp->method()->str() : "";
    if (method != "ngram" && method != "mtp")
      return Error(name + ": speculative method '" + method + "'; this runtime knows ngram and mtp");
    tokens = sp->num_speculative_tokens();
    if (tokens < 1 || tokens > uint64_t(engine::kMaxSpeculativeTokens))
      return Error(name + ": speculative settings out of range (num_speculative_tokens " +
                   std::to_string(tokens) + ")");
    if (method == "ngram" &&
        (sp->prompt_lookup_min() < 1 || sp->prompt_lookup_max() < sp->prompt_lookup_min() ||
         sp->prompt_lookup_max() > 64))
      return Error(name + ": speculative settings out of range (prompt_lookup " +
                   std::to_string(sp->prompt_lookup_min()) + ".." +
                   std::to_string(sp->prompt_lookup_max()) + ")");
    if ((method == "mtp") != draftProgram)
      return Error(name + ": speculative method " + method +
                   (draftProgram ? " with a draft program (only method mtp has one)"
                                 : " without the draft program it runs"));
  } else if (draftProgram) {
    return Error(name + ": a draft program without speculative decoding");
  }
  // Every rank runs both programs, or neither.
  for (const Rank *r : *p.ranks()) {
    const uint32_t ops = r->ops() ? r->ops()->size() : 0;
    const bool has = r->draft_ops_begin() > 0;
    if (has != draftProgram || (has && r->draft_ops_begin() >= ops))
      return Error(name + ": rank " + std::to_string(r->rank()) + "'s draft program (ops " +
                     std::to_string(r->draft_ops_begin()) + ".. of " + std::to_string(ops) +
                     ") is missing, empty or unlike rank 0's");
  }
  const uint64_t rows = limits.max_logits_rows();
  if (rows != 0 && rows != seqs * (1 + tokens))
    return Error(name + ": max_logits_rows " + std::to_string(rows) + " disagrees with " +
                 std::to_string(seqs) + " sequences of " + std::to_string(tokens) +
                 " speculative tokens");
  if (rows == 0 && tokens > 0)
    return Error(name + ": speculative decoding without max_logits_rows");
  return Status::success();
}

} // namespace

engine::GenerationDefaults generationDefaultsOf(const Plan &p) {
  engine::GenerationDefaults d;
  const GenerationDefaults *g = p.model() ? p.model()->generation_defaults() : nullptr;
  if (!g)
    return d;
  auto take = [](auto optional, auto &field) {
    if (optional.has_value())
      field = optional.value();
  };
  take(g->temperature(), d.temperature);
  take(g->top_p(), d.topP);
  take(g->top_k(), d.topK);
  take(g->min_p(), d.minP);
  take(g->repetition_penalty(), d.repetitionPenalty);
  return d;
}

namespace {

/// Structural checks the verifier cannot make: counts and ranges that must
/// agree with one another.
Status checkConsistency(const Plan &p, const std::string &name) {
  if (!p.ranks() || p.ranks()->size() == 0)
    return Error(name + ": the plan has no ranks");
  if (p.tensor_parallel_size() != p.ranks()->size())
    return Error(name + ": tensor_parallel_size " + std::to_string(p.tensor_parallel_size()) +
                 " but " + std::to_string(p.ranks()->size()) + " ranks");
  if (!p.model() || !p.limits() || !p.tokenizer())
    return Error(name + ": the plan lacks its model, limits or tokenizer section");
  if (p.model()->vocab_size() == 0 || p.limits()->max_num_batched_tokens() == 0 ||
      p.limits()->max_model_len() == 0)
    return Error(name + ": the plan's vocabulary size and limits must be positive");
  VOLT_RETURN_IF_ERROR(checkSampler(p, name));
  VOLT_RETURN_IF_ERROR(checkSpeculative(p, name));
  if (std::string problem = engine::generationDefaultsProblem(generationDefaultsOf(p));
      !problem.empty())
    return Error(name + ": model.generation_defaults: " + problem);
  for (const Rank *r : *p.ranks()) {
    std::string where = name + ": rank " + std::to_string(r->rank());
    if (!r->ops() || !r->buffers() || !r->weights() || !r->pack() || !r->caches())
      return Error(where + " lacks its program, buffers, weights, pack or caches");
    const uint32_t drafts = p.speculative() ? p.speculative()->num_speculative_tokens() : 0;
    VOLT_RETURN_IF_ERROR(checkCaches(*r, p.limits()->max_num_seqs() * (1 + drafts), where));
    for (const Buffer *b : *r->buffers())
      if (b->offset() + b->bytes() < b->offset() || b->offset() + b->bytes() > r->arena_bytes())
        return Error(where + ": buffer '" + (b->name() ? b->name()->str() : "?") +
                     "' lies outside the arena");
    uint64_t packBytes = r->pack()->bytes();
    for (const WeightEntry *w : *r->weights()) {
      if (w->offset() + w->bytes() < w->offset() || w->offset() + w->bytes() > packBytes)
        return Error(where + ": weight '" + (w->name() ? w->name()->str() : "?") +
                     "' lies outside its pack");
      if (w->epilogue_offset() != 0 &&
          (w->layout() != WeightLayout::Nvfp4RowMajor || w->epilogue_offset() < w->scales_offset() ||
           w->epilogue_offset() > w->bytes() ||
           (w->bytes() - w->epilogue_offset()) / 4 <
               (w->global_scales() ? w->global_scales()->size() : 0) ||
           !w->global_scales()))
        return Error(where + ": weight '" + (w->name() ? w->name()->str() : "?") +
                     "': epilogue scales outside the entry or not after its block scales");
      if (w->layout() == WeightLayout::Nvfp4RowMajor && w->scales_offset() > w->bytes())
        return Error(where + ": weight '" + (w->name() ? w->name()->str() : "?") +
                     "' has its block scales outside the entry");
      if (w->layout() == WeightLayout::Fp8RowScaled) {
        // [rows, cols], or [experts, rows, cols] for MoE experts; each
        // dimension below 2^24 so that the products cannot wrap.
        const auto *shape = w->shape();
        const bool ranked = shape && (shape->size() == 2 || shape->size() == 3);
        uint64_t rows = ranked ? 1 : 0, cols = 0;
        if (ranked)
          for (uint32_t d = 0; d < shape->size(); ++d) {
            const uint64_t n = shape->Get(d) > 0 && shape->Get(d) < (1 << 24) ? shape->Get(d) : 0;
            if (d + 1 < shape->size())
              rows *= n;
            else
              cols = n;
          }
        if (w->dtype() != DType::F8E4M3 || rows == 0 || cols == 0 ||
            w->scales_offset() < rows * cols || w->scales_offset() > w->bytes() ||
            (w->bytes() - w->scales_offset()) / 4 < rows)
          return Error(where + ": weight '" + (w->name() ? w->name()->str() : "?") +
                       "': an FP8 entry needs dtype F8E4M3, a [rows, cols] or [experts, rows, "
                       "cols] shape and its row scales after its bytes, inside the entry");
      }
    }
    for (const Op *op : *r->ops()) {
      const std::string opName = "op '" + (op->name() ? op->name()->str() : "?") + "'";
      const ops::OpDesc *desc = ops::opByValue(static_cast<uint16_t>(op->kind()));
      if (!desc)
        return Error(where + ": " + opName + " has op kind " +
                     std::to_string(static_cast<int>(op->kind())) +
                     ", which this runtime does not know");
      if (!op->operands() || !op->params())
        return Error(where + ": " + opName + " (" + std::string(desc->name) +
                     ") lacks its operands or params");
      if (op->params_type() != paramsTypeOf(op->kind()))
        return Error(where + ": " + opName + " (" + std::string(desc->name) + ") has params " +
                     EnumNameOpParams(op->params_type()) + ", expected " + std::string(desc->name) +
                     "Params");
      if (op->operands()->size() != desc->minOperands() &&
          op->operands()->size() != desc->maxOperands())
        return Error(where + ": " + opName + " (" + std::string(desc->name) + ") has " +
                     std::to_string(op->operands()->size()) + " operands, expected " +
                     std::to_string(desc->minOperands()) +
                     (desc->maxOperands() != desc->minOperands()
                          ? " or " + std::to_string(desc->maxOperands())
                          : std::string()));
      for (const Operand *o : *op->operands()) {
        bool ok = true;
        switch (o->kind()) {
        case OperandKind::Arena:
          ok = o->index() < r->buffers()->size();
          break;
        case OperandKind::Weight:
          ok = o->index() < r->weights()->size();
          break;
        case OperandKind::Input:
          ok = o->index() <= static_cast<uint32_t>(StepInput::MAX);
          break;
        case OperandKind::Output:
          // The hidden rows are kept only for a draft program to read.
          ok = o->index() <= static_cast<uint32_t>(StepOutput::MAX) &&
               (o->index() != static_cast<uint32_t>(StepOutput::Hidden) ||
                r->draft_ops_begin() > 0);
          break;
        case OperandKind::Cache:
          ok = o->index() < cacheLayerCount(*r);
          break;
        case OperandKind::Workspace:
          ok = o->index() < r->workspace_bytes();
          break;
        default:
          ok = false;
        }
        if (!ok)
          return Error(where + ": op '" + (op->name() ? op->name()->str() : "?") +
                       "' names an operand that does not exist");
      }
    }
  }
  // Every rank serves the same sequences: one engine's block tables and
  // state slots address all of them.
  const Rank *first = p.ranks()->Get(0);
  for (const Rank *r : *p.ranks()) {
    if (!r->caches())
      return Error(name + ": rank " + std::to_string(r->rank()) + " lacks its caches");
    const CacheGroup *kv = pagedKvGroup(*r), *kv0 = pagedKvGroup(*first);
    if (!kv)
      return Error(name + ": rank " + std::to_string(r->rank()) +
                   " has no paged KV cache group (a model without attention layers is not served)");
    if (!kv0 || kv->num_blocks() != kv0->num_blocks() || kv->block_size() != kv0->block_size() ||
        stateSlotCount(*r) != stateSlotCount(*first))
      return Error(name + ": rank " + std::to_string(r->rank()) +
                   "'s KV blocks or state slots differ from rank 0's");
  }
  return Status::success();
}

} // namespace

uint64_t LoadedPlan::fileChecksum() const {
  std::span<const uint8_t> bytes = file_->bytes();
  return XXH3_64bits(bytes.data(), bytes.size());
}

Status LoadedPlan::verifyBuffer(std::span<const uint8_t> bytes, const std::string &name) {
  if (bytes.size() < 8 || !PlanBufferHasIdentifier(bytes.data()))
    return Error(name + ": not a volt plan (no 'VPLN' file identifier)");
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), /*max_depth=*/64,
                                 /*max_tables=*/10'000'000);
  if (!VerifyPlanBuffer(verifier))
    return Error(name + ": the plan is corrupt or truncated (FlatBuffers verification failed)");
  const Plan *p = GetPlan(bytes.data());
  if (p->format_version() != kFormatVersion)
    return Error(name + ": plan format version " + std::to_string(p->format_version()) +
                 ", this runtime reads version " + std::to_string(kFormatVersion) +
                 "; recompile the plan with a matching voltc");
  return checkConsistency(*p, name);
}

Result<std::unique_ptr<LoadedPlan>> LoadedPlan::load(const std::filesystem::path &path,
                                                     const LoadOptions &options) {
  auto file = MappedFile::open(path.string());
  if (!file)
    return file.error();
  VOLT_RETURN_IF_ERROR(verifyBuffer((*file)->bytes(), path.string()));
  std::unique_ptr<LoadedPlan> loaded(new LoadedPlan());
  loaded->path_ = path;
  loaded->file_ = std::move(*file);
  loaded->plan_ = GetPlan(loaded->file_->bytes().data());
  if (!options.loadWeights)
    return loaded;

  std::filesystem::path folder = path.parent_path();
  for (const Rank *r : *loaded->plan_->ranks()) {
    const WeightPack *pack = r->pack();
    std::string fileName = pack->file() ? pack->file()->str() : "";
    if (fileName.empty() || fileName.find('/') != std::string::npos || fileName == "..")
      return Error(path.string() + ": rank " + std::to_string(r->rank()) +
                   " names an invalid weight pack file '" + fileName + "'");
    std::filesystem::path packPath = folder / fileName;
    auto mapped = MappedFile::open(packPath.string());
    if (!mapped)
      return Error(mapped.message() + " (the weight pack of rank " + std::to_string(r->rank()) +
                   "; copy it beside the plan)");
    if ((*mapped)->size() != pack->bytes())
      return Error(packPath.string() + ": " + std::to_string((*mapped)->size()) +
                   " bytes, the plan expects " + std::to_string(pack->bytes()) +
                   ": the pack is truncated or from another plan; copy it again");
    if (options.verifyChecksums) {
      auto bytes = (*mapped)->bytes();
      uint64_t sum = XXH3_64bits(bytes.data(), bytes.size());
      if (sum != pack->checksum())
        return Error(packPath.string() + ": checksum " + hex(sum) + ", the plan expects " +
                     hex(pack->checksum()) +
                     ": the pack was changed or damaged, or is from another plan; copy it again");
    }
    loaded->packs_.push_back(std::move(*mapped));
  }
  return loaded;
}

} // namespace volt::plan
