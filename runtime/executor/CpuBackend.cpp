//===- CpuBackend.cpp -----------------------------------------------------===//
#include "runtime/executor/CpuBackend.h"
#include "runtime/cpu/TopCandidates.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/StepOperands.h"

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
  /// The cache region (Rank.cache_bytes): every cache group's layers as
  /// runtime/plan/Caches.h lays them out (a paged layer's K blocks, then
  /// its V blocks; a state layer's slots).
  AlignedBytes caches;
  uint64_t cacheBytes = 0;
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
    state->cacheBytes = r->cache_bytes();
    if (state->cacheBytes <= (1ull << 38))
      state->caches = alignedZeros(state->cacheBytes);
    if (!state->arena || !state->workspace || !state->caches)
      return Error("cannot allocate the host memory of rank " + std::to_string(r->rank()) +
                   " (arena " + std::to_string(r->arena_bytes()) + " bytes, caches " +
                   std::to_string(state->cacheBytes) + " bytes)");
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
    total += r->arenaBytes + r->cacheBytes;
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
      std::span<const int32_t> in =
          plan::stepInput(batch, static_cast<plan::StepInput>(o->index()));
      bytes = {reinterpret_cast<const uint8_t *>(in.data()), in.size_bytes()};
      break;
    }
    case OperandKind::Output: {
      const float *out = rs.index == 0 ? logits.data() : rs.outputScratch.data();
      bytes = {reinterpret_cast<const uint8_t *>(out),
               S * plan_.plan().model()->vocab_size() * sizeof(float)};
      break;
    }
    case OperandKind::Cache:
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
  const uint32_t vocab = p.model()->vocab_size();
  VOLT_RETURN_IF_ERROR(plan::checkStep(p, batch));
  if (logits.size() != static_cast<size_t>(batch.numSeqs) * vocab)
    return Error("logits buffer of " + std::to_string(logits.size()) + " floats for " +
                 std::to_string(batch.numSeqs) + " sequences x " + std::to_string(vocab));

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

  auto weight = [&](const plan::Operand *o) -> const plan::WeightEntry * {
    return o->kind() == OperandKind::Weight ? rank->weights()->Get(o->index()) : nullptr;
  };
  // Where an operand lies (plan::operandPlace, checked by the loader).
  auto pointer = [&](const plan::Operand *o) -> uint8_t * {
    auto place = plan::operandPlace(*rank, *o);
    if (!place)
      return nullptr;
    switch (place->region) {
    case plan::Region::Arena:
      return rs.arena.get() + place->offset;
    case plan::Region::Weights:
      return const_cast<uint8_t *>(rs.pack.data()) + place->offset;
    case plan::Region::Output:
      return reinterpret_cast<uint8_t *>(rs.index == 0 ? logits.data() : rs.outputScratch.data());
    case plan::Region::Input:
      return reinterpret_cast<uint8_t *>(
          const_cast<int32_t *>(plan::stepInput(batch, place->input).data()));
    case plan::Region::Cache:
      return rs.caches.get() + place->offset;
    case plan::Region::Workspace:
      return rs.workspace.get() + place->offset;
    }
    return nullptr;
  };
  auto rows = [&](const plan::Operand *o) {
    return static_cast<int64_t>(
        plan::operandRows(*rank, *o, static_cast<uint64_t>(T), static_cast<uint64_t>(S)));
  };
  auto dtype = [&](const plan::Operand *o) { return cpuDtype(plan::operandDtype(*rank, *o)); };
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
      const plan::CacheGroup *kv = plan::pagedKvGroup(*rank);
      uint16_t *keys = f16(at(1));
      const uint64_t layerHalf = plan::cacheLayerBytes(*kv) / 4; // K's halves, then V's
      cpu::PagedKvCache cache{keys, keys + layerHalf, kv->num_blocks(), kv->block_size()};
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
    case OpKind::EmaScan:
      cpu::emaScan({T, S, op->params_as_EmaScanParams()->dim()}, f16(at(0)), f16(at(1)),
                   reinterpret_cast<float *>(pointer(at(2))), i32(at(3)), i32(at(4)), i32(at(5)),
                   f16(at(6)), pool);
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
