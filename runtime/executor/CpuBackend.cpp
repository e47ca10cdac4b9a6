//===- CpuBackend.cpp -----------------------------------------------------===//
#include "runtime/executor/CpuBackend.h"
#include "runtime/cpu/TopCandidates.h"

#include "runtime/cpu/Ops.h"
#include "runtime/numerics/Half.h"

#include <cstdlib>
#include <cstring>
#include <thread>

namespace volt::executor {
namespace {

using plan::OperandKind;
using plan::OpKind;

cpu::DType cpuDtype(plan::DType d) {
  return d == plan::DType::F32 ? cpu::DType::F32 : cpu::DType::F16;
}

struct AlignedFree {
  void operator()(uint8_t *p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t[], AlignedFree>;

AlignedBytes alignedZeros(uint64_t bytes) {
  uint64_t rounded = (std::max<uint64_t>(bytes, 64) + 63) / 64 * 64;
  auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, rounded));
  if (p)
    std::memset(p, 0, rounded);
  return AlignedBytes(p);
}

std::span<const int32_t> stepInput(const engine::StepBatch &batch, plan::StepInput input) {
  switch (input) {
  case plan::StepInput::Tokens:
    return batch.tokens;
  case plan::StepInput::Positions:
    return batch.positions;
  case plan::StepInput::SlotMapping:
    return batch.slotMapping;
  case plan::StepInput::SeqStarts:
    return batch.seqStarts;
  case plan::StepInput::ContextLens:
    return batch.contextLens;
  case plan::StepInput::BlockTables:
    return batch.blockTables;
  case plan::StepInput::LogitsRows:
    return batch.logitsRows;
  }
  return {};
}

} // namespace

struct CpuBackend::Shared {
  std::unique_ptr<cpu::Communicator> communicator;
  int threadsPerRank = 1;
  /// Candidates per sequence (0: none), the last candidate step's rows and
  /// how many sequences they hold (0: none to fetch).
  int candidates = 0;
  std::vector<float> rows;
  size_t rowSeqs = 0;
  std::unique_ptr<cpu::ThreadPool> candidatePool;
  /// Called after each op (empty: none).
  OpObserver observer;
};

struct CpuBackend::RankState {
  uint32_t index = 0;
  const plan::Rank *rank = nullptr;
  std::span<const uint8_t> pack;
  AlignedBytes arena;
  uint64_t arenaBytes = 0;
  /// Kernel scratch (Rank.workspace_bytes); the cpu ops need none, but
  /// operands may point into it.
  AlignedBytes workspace;
  /// K and V of every layer: [layers][blocks][block_size][kv_heads][head_dim].
  std::vector<uint16_t> keys, values;
  uint64_t layerElements = 0;
  std::unique_ptr<cpu::ThreadPool> pool;
  /// Where ranks other than 0 write step outputs (only rank 0's are read).
  std::vector<float> outputScratch;
  /// FP16 rows on their way to an FP32 buffer.
  std::vector<uint16_t> scratch;
  /// The operand spans handed to the op observer.
  std::vector<std::span<const uint8_t>> observed;
};

Result<std::unique_ptr<CpuBackend>> CpuBackend::create(const plan::LoadedPlan &loaded,
                                                       const CpuBackendOptions &options) {
  const plan::Plan &p = loaded.plan();
  // Any plan runs here, whatever its arch: the ops and the weight layouts
  // are the same for every target (GPU plans add kernel launches, which the
  // cpu backend does not need).
  for (const plan::Rank *r : *p.ranks())
    for (const plan::WeightEntry *w : *r->weights())
      if (w->layout() != plan::WeightLayout::Dense &&
          w->layout() != plan::WeightLayout::Nvfp4RowMajor)
        return Error(loaded.path().string() + ": weight '" + (w->name() ? w->name()->str() : "?") +
                     "' has a layout the cpu backend does not read");
  std::unique_ptr<CpuBackend> backend(new CpuBackend(loaded));
  int ranks = static_cast<int>(p.ranks()->size());
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  backend->shared_ = std::make_unique<Shared>();
  backend->shared_->threadsPerRank = std::max(1, threads / ranks);
  backend->shared_->communicator = std::make_unique<cpu::Communicator>(ranks);
  const int k = options.candidates;
  if (k < 0 || k > 256 || (k & (k - 1)) != 0 || static_cast<uint32_t>(k) > p.model()->vocab_size())
    return Error("sampling candidates: expected 0 or a power of two up to 256 and the "
                 "vocabulary, found " +
                 std::to_string(k));
  backend->shared_->candidates = k;
  if (k > 0)
    backend->shared_->candidatePool =
        std::make_unique<cpu::ThreadPool>(backend->shared_->threadsPerRank * ranks);
  uint64_t outputFloats =
      static_cast<uint64_t>(p.limits()->max_num_seqs()) * p.model()->vocab_size();
  for (const plan::Rank *r : *p.ranks()) {
    auto state = std::make_unique<RankState>();
    state->index = r->rank();
    state->rank = r;
    state->pack = loaded.pack(r->rank());
    if (state->pack.size() != r->pack()->bytes())
      return Error(loaded.path().string() + ": the weight pack of rank " +
                   std::to_string(r->rank()) + " is not loaded");
    state->arenaBytes = r->arena_bytes();
    state->arena = alignedZeros(r->arena_bytes());
    state->workspace = alignedZeros(r->workspace_bytes());
    const plan::KvCache *kv = r->kv_cache();
    state->layerElements = static_cast<uint64_t>(kv->num_blocks()) * kv->block_size() *
                           kv->num_kv_heads() * kv->head_dim();
    uint64_t kvElements = state->layerElements * kv->num_layers();
    if (!state->arena || kvElements > (1ull << 36))
      return Error("cannot allocate the host memory of rank " + std::to_string(r->rank()) +
                   " (arena " + std::to_string(r->arena_bytes()) + " bytes, KV cache " +
                   std::to_string(kvElements * 4) + " bytes)");
    state->keys.assign(kvElements, 0);
    state->values.assign(kvElements, 0);
    state->pool = std::make_unique<cpu::ThreadPool>(backend->shared_->threadsPerRank);
    if (r->rank() != 0)
      state->outputScratch.assign(outputFloats, 0.0f);
    backend->ranks_.push_back(std::move(state));
  }
  return backend;
}

CpuBackend::CpuBackend(const plan::LoadedPlan &plan) : plan_(plan) {}

CpuBackend::~CpuBackend() = default;

uint64_t CpuBackend::hostBytes() const {
  uint64_t total = 0;
  for (const auto &r : ranks_)
    total += r->arenaBytes + (r->keys.size() + r->values.size()) * 2;
  return total + shared_->rows.capacity() * sizeof(float); // the candidate steps' rows
}

int CpuBackend::threadsPerRank() const { return shared_->threadsPerRank; }

void CpuBackend::setOpObserver(OpObserver observer) { shared_->observer = std::move(observer); }

void CpuBackend::observe(RankState &rs, uint32_t opIndex, const plan::Op &op,
                         const engine::StepBatch &batch, std::span<float> logits) {
  const plan::Rank *rank = rs.rank;
  const uint64_t T = static_cast<uint64_t>(batch.numTokens);
  const uint64_t S = static_cast<uint64_t>(batch.numSeqs);
  rs.observed.clear();
  for (const plan::Operand *o : *op.operands()) {
    std::span<const uint8_t> bytes;
    switch (o->kind()) {
    case OperandKind::Arena: {
      const plan::Buffer *b = rank->buffers()->Get(o->index());
      bytes = {rs.arena.get() + b->offset(),
               std::min(b->bytes(), b->per_token_bytes() * T + b->fixed_bytes())};
      break;
    }
    case OperandKind::Weight: {
      const plan::WeightEntry *w = rank->weights()->Get(o->index());
      bytes = rs.pack.subspan(w->offset(), w->bytes());
      break;
    }
    case OperandKind::Input: {
      std::span<const int32_t> in = stepInput(batch, static_cast<plan::StepInput>(o->index()));
      bytes = {reinterpret_cast<const uint8_t *>(in.data()), in.size_bytes()};
      break;
    }
    case OperandKind::Output: {
      const float *out = rs.index == 0 ? logits.data() : rs.outputScratch.data();
      bytes = {reinterpret_cast<const uint8_t *>(out),
               S * plan_.plan().model()->vocab_size() * sizeof(float)};
      break;
    }
    case OperandKind::KvCache:
    case OperandKind::Workspace:
      break;
    }
    rs.observed.push_back(bytes);
  }
  OpObservation seen;
  seen.rank = rs.index;
  seen.opIndex = opIndex;
  seen.op = &op;
  seen.kind = op.kind();
  if (op.name())
    seen.name = std::string_view(op.name()->c_str(), op.name()->size());
  seen.numTokens = batch.numTokens;
  seen.numSeqs = batch.numSeqs;
  seen.operands = rs.observed;
  shared_->observer(seen);
}

int32_t CpuBackend::candidatesPerSeq() const { return shared_->candidates; }

Status CpuBackend::runStepCandidates(const engine::StepBatch &batch,
                                     std::span<const float> temperatures,
                                     engine::StepCandidates &out) {
  const size_t seqs = static_cast<size_t>(std::max(batch.numSeqs, 0));
  const size_t k = static_cast<size_t>(shared_->candidates);
  if (k == 0)
    return Error("this backend was created without sampling candidates");
  if (out.k != shared_->candidates || temperatures.size() != seqs || out.ids.size() != seqs * k ||
      out.values.size() != seqs * k || out.stats.size() != seqs * 3)
    return Error("sampling candidates: arrays of " + std::to_string(out.ids.size()) + ", " +
                 std::to_string(out.values.size()) + " and " + std::to_string(out.stats.size()) +
                 " for " + std::to_string(seqs) + " sequences x " + std::to_string(k));
  const size_t vocab = plan_.plan().model()->vocab_size();
  shared_->rowSeqs = 0;
  shared_->rows.resize(seqs * vocab);
  VOLT_RETURN_IF_ERROR(runStep(batch, shared_->rows));
  shared_->rowSeqs = seqs;
  cpu::topCandidates(
      {static_cast<int64_t>(seqs), static_cast<int64_t>(vocab), static_cast<int64_t>(k)},
      shared_->rows.data(), temperatures.data(), out.ids.data(), out.values.data(),
      out.stats.data(), *shared_->candidatePool);
  return Status::success();
}

Status CpuBackend::fetchRows(std::span<const int32_t> seqs, std::span<float> rows) {
  const size_t vocab = plan_.plan().model()->vocab_size();
  if (shared_->rowSeqs == 0)
    return Error("no step's rows to fetch (after runStepCandidates only)");
  if (rows.size() != seqs.size() * vocab)
    return Error("rows buffer of " + std::to_string(rows.size()) + " floats for " +
                 std::to_string(seqs.size()) + " rows x " + std::to_string(vocab));
  for (size_t j = 0; j < seqs.size(); ++j) {
    if (seqs[j] < 0 || static_cast<size_t>(seqs[j]) >= shared_->rowSeqs ||
        (j > 0 && seqs[j] <= seqs[j - 1]))
      return Error("row " + std::to_string(seqs[j]) + ": expected ascending sequences of the " +
                   std::to_string(shared_->rowSeqs) + " in the last step");
    std::copy_n(shared_->rows.begin() + static_cast<std::ptrdiff_t>(seqs[j] * vocab), vocab,
                rows.begin() + static_cast<std::ptrdiff_t>(j * vocab));
  }
  return Status::success();
}

Status CpuBackend::runStep(const engine::StepBatch &batch, std::span<float> logits) {
  shared_->rowSeqs = 0; // a candidate step's rows are gone
  const plan::Plan &p = plan_.plan();
  const plan::Limits *limits = p.limits();
  uint32_t vocab = p.model()->vocab_size();
  if (batch.numTokens < 1 ||
      static_cast<uint32_t>(batch.numTokens) > limits->max_num_batched_tokens())
    return Error("step of " + std::to_string(batch.numTokens) + " tokens; the plan serves 1.." +
                 std::to_string(limits->max_num_batched_tokens()) + " per step");
  if (batch.numSeqs < 1 || batch.numSeqs > batch.numTokens ||
      static_cast<uint32_t>(batch.numSeqs) > limits->max_num_seqs())
    return Error("step of " + std::to_string(batch.numSeqs) + " sequences; the plan serves 1.." +
                 std::to_string(limits->max_num_seqs()));
  if (logits.size() != static_cast<size_t>(batch.numSeqs) * vocab)
    return Error("logits buffer of " + std::to_string(logits.size()) + " floats for " +
                 std::to_string(batch.numSeqs) + " sequences x " + std::to_string(vocab));
  for (int32_t t : batch.tokens)
    if (t < 0 || static_cast<uint32_t>(t) >= vocab)
      return Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                   std::to_string(vocab - 1) + ")");
  if (static_cast<uint32_t>(batch.maxBlocksPerSeq) != limits->max_blocks_per_seq())
    return Error("block tables of width " + std::to_string(batch.maxBlocksPerSeq) +
                 ", the plan's is " + std::to_string(limits->max_blocks_per_seq()));
  uint32_t blocks = ranks_.front()->rank->kv_cache()->num_blocks();
  uint32_t blockSize = ranks_.front()->rank->kv_cache()->block_size();
  for (int32_t slot : batch.slotMapping)
    if (slot >= 0 && static_cast<uint64_t>(slot) >= static_cast<uint64_t>(blocks) * blockSize)
      return Error("KV slot " + std::to_string(slot) + " is outside the cache (" +
                   std::to_string(blocks) + " blocks of " + std::to_string(blockSize) + ")");
  for (int32_t block : batch.blockTables)
    if (block < 0 || static_cast<uint32_t>(block) >= blocks)
      return Error("block table entry " + std::to_string(block) + " is outside the cache");

  // Ranks 1.. run on their own threads; rank 0 on the caller's.
  std::vector<std::thread> others;
  for (size_t r = 1; r < ranks_.size(); ++r)
    others.emplace_back([&, r] { runRank(*ranks_[r], batch, logits); });
  runRank(*ranks_[0], batch, logits);
  for (std::thread &t : others)
    t.join();
  return Status::success();
}

void CpuBackend::runRank(RankState &rs, const engine::StepBatch &batch, std::span<float> logits) {
  const plan::Rank *rank = rs.rank;
  const int64_t T = batch.numTokens, S = batch.numSeqs;
  cpu::ThreadPool &pool = *rs.pool;
  const plan::KvCache *kv = rank->kv_cache();

  auto buffer = [&](const plan::Operand *o) -> const plan::Buffer * {
    return o->kind() == OperandKind::Arena ? rank->buffers()->Get(o->index()) : nullptr;
  };
  auto weight = [&](const plan::Operand *o) -> const plan::WeightEntry * {
    return o->kind() == OperandKind::Weight ? rank->weights()->Get(o->index()) : nullptr;
  };
  auto pointer = [&](const plan::Operand *o) -> uint8_t * {
    switch (o->kind()) {
    case OperandKind::Arena:
      return rs.arena.get() + rank->buffers()->Get(o->index())->offset();
    case OperandKind::Weight:
      return const_cast<uint8_t *>(rs.pack.data()) + rank->weights()->Get(o->index())->offset();
    case OperandKind::Output:
      return reinterpret_cast<uint8_t *>(rs.index == 0 ? logits.data() : rs.outputScratch.data());
    case OperandKind::Input:
      return reinterpret_cast<uint8_t *>(
          const_cast<int32_t *>(stepInput(batch, static_cast<plan::StepInput>(o->index())).data()));
    case OperandKind::KvCache:
      return nullptr;
    case OperandKind::Workspace:
      return rs.workspace.get() + o->index();
    }
    return nullptr;
  };
  // Rows of an activation: per-token buffers hold T rows; per-sequence
  // buffers (what follows the gather of each sequence's last token) and the
  // step output hold S.
  auto rows = [&](const plan::Operand *o) -> int64_t {
    if (o->kind() == OperandKind::Output)
      return S;
    const plan::Buffer *b = buffer(o);
    return b && b->per_token_bytes() == 0 ? S : T;
  };
  auto dtype = [&](const plan::Operand *o) {
    const plan::Buffer *b = buffer(o);
    if (o->kind() == OperandKind::Output)
      return cpu::DType::F32;
    return b ? cpuDtype(b->dtype()) : cpu::DType::F16;
  };
  auto f16 = [&](const plan::Operand *o) { return reinterpret_cast<uint16_t *>(pointer(o)); };
  auto i32 = [&](const plan::Operand *o) { return reinterpret_cast<int32_t *>(pointer(o)); };
  auto nvfp4 = [&](const plan::Operand *o) {
    const plan::WeightEntry *w = weight(o);
    cpu::Nvfp4Matrix m;
    m.packed = pointer(o);
    m.scales = m.packed + w->scales_offset();
    auto shape = w->shape();
    m.cols = shape->Get(shape->size() - 1);
    m.rows = shape->size() == 3 ? shape->Get(0) * shape->Get(1) : shape->Get(0);
    return m;
  };
  auto parts = [&](const plan::Operand *o) {
    const plan::WeightEntry *w = weight(o);
    return std::span<const uint32_t>(w->part_rows()->data(), w->part_rows()->size());
  };
  auto scales = [&](const plan::Operand *o) {
    const plan::WeightEntry *w = weight(o);
    return std::span<const float>(w->global_scales()->data(), w->global_scales()->size());
  };

  const bool observed = static_cast<bool>(shared_->observer);
  uint32_t opIndex = 0;
  for (const plan::Op *op : *rank->ops()) {
    auto ops = op->operands();
    auto at = [&](unsigned i) { return ops->Get(i); };
    unsigned n = ops->size();
    switch (op->kind()) {
    case OpKind::Embedding: {
      const auto *pm = op->params_as_EmbeddingParams();
      cpu::EmbeddingParams e{T, pm->dim(),
                             plan::vocabStart(pm->vocab_rows(), pm->vocab_parallel(), rs.index),
                             pm->vocab_rows() ? pm->vocab_rows() : weight(at(1))->shape()->Get(0)};
      if (dtype(at(2)) == cpu::DType::F16) {
        cpu::embedding(e, i32(at(0)), f16(at(1)), f16(at(2)), pool);
        break;
      }
      // An FP32 residual stream starts with the (exactly widened) rows.
      rs.scratch.resize(static_cast<size_t>(T * pm->dim()));
      cpu::embedding(e, i32(at(0)), f16(at(1)), rs.scratch.data(), pool);
      float *out = reinterpret_cast<float *>(pointer(at(2)));
      for (size_t i = 0; i < rs.scratch.size(); ++i)
        out[i] = halfToFloat(rs.scratch[i]);
      break;
    }
    case OpKind::RmsNorm: {
      const auto *pm = op->params_as_RmsNormParams();
      cpu::rmsNorm({rows(at(0)), pm->dim(), pm->eps(), dtype(at(0))}, pointer(at(0)), f16(at(1)),
                   f16(at(2)), pool);
      break;
    }
    case OpKind::AddRmsNorm: {
      const auto *pm = op->params_as_AddRmsNormParams();
      cpu::addRmsNorm({rows(at(0)), pm->dim(), pm->eps(), dtype(at(0)), dtype(at(1))},
                      pointer(at(0)), pointer(at(1)), f16(at(2)), f16(at(3)), pool);
      break;
    }
    case OpKind::Linear: {
      const auto *pm = op->params_as_LinearParams();
      cpu::linear({rows(at(0)), pm->dim(), pm->out_features(), cpuDtype(pm->out_dtype())},
                  f16(at(0)), f16(at(1)), n == 4 ? f16(at(2)) : nullptr, pointer(at(n - 1)), pool);
      break;
    }
    case OpKind::QLinear: {
      const auto *pm = op->params_as_QLinearParams();
      cpu::QLinearParams q;
      q.tokens = rows(at(0));
      q.inFeatures = pm->dim();
      q.outFeatures = pm->out_features();
      q.partRows = parts(at(1));
      q.globalScales = scales(at(1));
      q.outDtype = cpuDtype(pm->out_dtype());
      q.epilogue = static_cast<cpu::Epilogue>(pm->epilogue());
      cpu::qlinear(q, f16(at(0)), nvfp4(at(1)), n == 4 ? f16(at(2)) : nullptr, pointer(at(n - 1)),
                   pool);
      break;
    }
    case OpKind::QkNormRope: {
      const auto *pm = op->params_as_QkNormRopeParams();
      cpu::qkNormRope(
          {T, pm->num_heads(), pm->num_kv_heads(), pm->head_dim(), pm->rope_theta(), pm->eps()},
          f16(at(0)), i32(at(1)), n == 4 ? f16(at(2)) : nullptr, n == 4 ? f16(at(3)) : nullptr,
          pool);
      break;
    }
    case OpKind::Attention: {
      const auto *pm = op->params_as_AttentionParams();
      uint64_t layer = at(1)->index();
      cpu::PagedKvCache cache{rs.keys.data() + layer * rs.layerElements,
                              rs.values.data() + layer * rs.layerElements, kv->num_blocks(),
                              kv->block_size()};
      cpu::StepBatch meta{i32(at(2)), i32(at(3)), i32(at(4)), i32(at(5)), batch.maxBlocksPerSeq};
      cpu::attention({T, S, pm->num_heads(), pm->num_kv_heads(), pm->head_dim()}, f16(at(0)), meta,
                     cache, f16(at(6)), pool);
      break;
    }
    case OpKind::SiluMul:
      cpu::siluMul({rows(at(0)), op->params_as_SiluMulParams()->dim()}, f16(at(0)), f16(at(1)),
                   pool);
      break;
    case OpKind::MoeRouter: {
      const auto *pm = op->params_as_MoeRouterParams();
      cpu::moeRouter({T, pm->num_experts(), pm->top_k(), pm->renormalize()},
                     reinterpret_cast<const float *>(pointer(at(0))), i32(at(1)),
                     reinterpret_cast<float *>(pointer(at(2))), pool);
      break;
    }
    case OpKind::MoeAlign: {
      const auto *pm = op->params_as_MoeAlignParams();
      cpu::moeAlign({T, pm->top_k(), pm->num_experts()}, i32(at(0)), i32(at(1)), i32(at(2)));
      break;
    }
    case OpKind::MoeGroupedQLinear: {
      const auto *pm = op->params_as_MoeGroupedQLinearParams();
      cpu::MoeGroupedQLinearParams q;
      q.tokens = T;
      q.topK = pm->top_k();
      q.numExperts = pm->num_experts();
      q.inFeatures = pm->dim();
      q.outFeatures = pm->out_features();
      q.partRows = parts(at(3));
      q.globalScales = scales(at(3));
      q.gatherTokens = pm->gather_tokens();
      q.epilogue = static_cast<cpu::Epilogue>(pm->epilogue());
      cpu::moeGroupedQLinear(q, f16(at(0)), i32(at(1)), i32(at(2)), nvfp4(at(3)), f16(at(4)), pool);
      break;
    }
    case OpKind::MoeGroupedLinear: {
      const auto *pm = op->params_as_MoeGroupedLinearParams();
      cpu::MoeGroupedLinearParams q;
      q.tokens = T;
      q.topK = pm->top_k();
      q.numExperts = pm->num_experts();
      q.inFeatures = pm->dim();
      q.outFeatures = pm->out_features();
      q.gatherTokens = pm->gather_tokens();
      q.epilogue = static_cast<cpu::Epilogue>(pm->epilogue());
      cpu::moeGroupedLinear(q, f16(at(0)), i32(at(1)), i32(at(2)), f16(at(3)), f16(at(4)), pool);
      break;
    }
    case OpKind::MoeCombine: {
      const auto *pm = op->params_as_MoeCombineParams();
      cpu::moeCombine({T, pm->top_k(), pm->dim(), pm->accumulate()}, f16(at(0)), i32(at(1)),
                      reinterpret_cast<const float *>(pointer(at(2))), f16(at(3)), pool);
      break;
    }
    case OpKind::SigmoidGateAdd:
      cpu::sigmoidGateAdd({rows(at(0)), op->params_as_SigmoidGateAddParams()->dim(), dtype(at(2))},
                          f16(at(0)), f16(at(1)), pointer(at(2)), pool);
      break;
    case OpKind::AllReduce:
      shared_->communicator->allReduce(static_cast<int>(rs.index), pointer(at(0)),
                                       rows(at(0)) * op->params_as_AllReduceParams()->dim(),
                                       dtype(at(0)));
      break;
    case OpKind::AllGather:
      shared_->communicator->allGather(static_cast<int>(rs.index), pointer(at(0)), pointer(at(1)),
                                       rows(at(0)), op->params_as_AllGatherParams()->dim(),
                                       dtype(at(0)));
      break;
    case OpKind::GatherRows:
      cpu::gatherRows({S, op->params_as_GatherRowsParams()->dim(), dtype(at(0))}, pointer(at(0)),
                      i32(at(1)), pointer(at(2)), pool);
      break;
    }
    if (observed)
      observe(rs, opIndex, *op, batch, logits);
    ++opIndex;
  }
}

} // namespace volt::executor
