//===- CpuBackend.cpp -----------------------------------------------------===//
//
// Set-up (each rank's host memory), the step's checks and threads, the op
// observer. Each op runs through the runner of its kind (OpContext.h,
// runtime/executor/ops/).
//
//===----------------------------------------------------------------------===//
#include "runtime/executor/CpuBackend.h"

#include "runtime/cpu/Communicator.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/TopCandidates.h"
#include "runtime/executor/OpContext.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/support/HugePages.h"
#include "runtime/support/Strings.h"

#include <cstdlib>
#include <cstring>
#include <thread>

namespace volt::executor {
namespace {

using plan::OperandKind;

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
  std::string weightsDescription;
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
  /// The pack's copy in huge pages (cpu::WeightMemory::HugePages), which `pack`
  /// then spans; null when the pack is read in place.
  std::unique_ptr<HugePageCopy> packCopy;
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
  /// The hidden rows (StepOutput.Hidden) of a plan with a draft program:
  /// max_num_batched_tokens x hidden_size FP16, and how many rows the
  /// last step left.
  AlignedBytes hidden;
  uint64_t hiddenBytes = 0;
  /// FP16 rows on their way to an FP32 buffer.
  std::vector<uint16_t> scratch;
  /// The operand spans handed to the op observer.
  std::vector<std::span<const uint8_t>> observed;
  /// Each op's numerics (Rank.ops order): the backend's, except for the
  /// GEMMs that produce router logits (see routerGemmsInReference).
  std::vector<cpu::Numerics> opNumerics;
};

namespace {

/// `numerics` for every op of `rank`, except that the ops writing a
/// MoeRouter's logits stay in Reference: a top-k decision is the fragile
/// point of a MoE model (a near-tie flips on a rounding, docs/golden.md),
/// and BF16 activations move the routing gaps several times more than the
/// reference's FP16 ones, for a GEMM of num_experts columns that costs
/// nothing next to the experts'.
std::vector<cpu::Numerics> routerGemmsInReference(const plan::Rank &rank,
                                                  cpu::Numerics numerics) {
  const auto &ops = *rank.ops();
  std::vector<cpu::Numerics> out(ops.size(), numerics);
  if (numerics == cpu::Numerics::Reference)
    return out;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const plan::Op *router = ops.Get(i);
    if (router->kind() != plan::OpKind::MoeRouter || router->operands()->size() == 0)
      continue;
    const plan::Operand *logits = router->operands()->Get(0);
    if (logits->kind() != plan::OperandKind::Arena)
      continue;
    for (uint32_t j = 0; j < i; ++j) {
      const auto *operands = ops.Get(j)->operands();
      if (operands->size() == 0)
        continue;
      const plan::Operand *last = operands->Get(operands->size() - 1);
      if (last->kind() == plan::OperandKind::Arena && last->index() == logits->index())
        out[j] = cpu::Numerics::Reference;
    }
  }
  return out;
}

} // namespace

Result<std::unique_ptr<CpuBackend>> CpuBackend::create(const plan::LoadedPlan &loaded,
                                                       const CpuBackendOptions &options) {
  const plan::Plan &p = loaded.plan();
  // Any plan runs here, whatever its arch: the ops and the weight layouts
  // are the same for every target (GPU plans add kernel launches, which the
  // cpu backend does not need).
  for (const plan::Rank *r : *p.ranks())
    for (const plan::WeightEntry *w : *r->weights())
      if (w->layout() != plan::WeightLayout::Dense &&
          w->layout() != plan::WeightLayout::Nvfp4RowMajor &&
          w->layout() != plan::WeightLayout::Fp8RowScaled)
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
      static_cast<uint64_t>(plan::maxLogitsRows(*p.limits())) * p.model()->vocab_size();
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
    if (plan::hasDraftProgram(p)) {
      state->hiddenBytes = uint64_t{p.limits()->max_num_batched_tokens()} *
                           p.model()->hidden_size() * sizeof(uint16_t);
      state->hidden = alignedZeros(state->hiddenBytes);
      if (!state->hidden)
        return Error("cannot allocate the hidden rows of rank " + std::to_string(r->rank()) +
                     " (" + std::to_string(state->hiddenBytes) + " bytes)");
    }
    state->pool = std::make_unique<cpu::ThreadPool>(backend->shared_->threadsPerRank);
    state->opNumerics = routerGemmsInReference(*r, options.numerics);
    if (r->rank() != 0)
      state->outputScratch.assign(outputFloats, 0.0f);
    backend->ranks_.push_back(std::move(state));
  }

  uint64_t packBytes = 0;
  for (const auto &rs : backend->ranks_)
    packBytes += rs->pack.size();
  std::string why;
  const bool copy =
      options.weights == cpu::WeightMemory::HugePages ||
      (options.weights == cpu::WeightMemory::Auto &&
       hugePageCopyPays(transparentHugePages(), packBytes, availableMemoryBytes(), why));
  if (!copy) {
    backend->shared_->weightsDescription =
        "weights read in place from the mapped packs (" +
        (options.weights == cpu::WeightMemory::Mapped ? std::string("as asked") : why) + ")";
    return backend;
  }
  uint64_t hugeBytes = 0;
  for (auto &rs : backend->ranks_) {
    auto held = HugePageCopy::of(rs->pack, "the weight pack of rank " + std::to_string(rs->index) +
                                               " (--cpu-weights mapped reads it in place)");
    if (!held)
      return held.error();
    rs->packCopy = std::move(*held);
    rs->pack = rs->packCopy->bytes();
    hugeBytes += rs->packCopy->hugeBytes();
    loaded.dropPackPages(rs->index);
  }
  backend->shared_->weightsDescription = "weights in huge pages (" + formatBytes(packBytes) +
                                         " copied, " + formatBytes(hugeBytes) +
                                         " of it in huge pages)";
  return backend;
}

const std::string &CpuBackend::weightsDescription() const {
  return shared_->weightsDescription;
}

CpuBackend::CpuBackend(const plan::LoadedPlan &plan) : plan_(plan) {}

CpuBackend::~CpuBackend() = default;

uint64_t CpuBackend::hostBytes() const {
  uint64_t total = 0;
  for (const auto &r : ranks_)
    total += r->arenaBytes + r->cacheBytes + r->hiddenBytes;
  return total + shared_->rows.capacity() * sizeof(float); // the candidate steps' rows
}

int CpuBackend::threadsPerRank() const { return shared_->threadsPerRank; }

void CpuBackend::setOpObserver(OpObserver observer) { shared_->observer = std::move(observer); }

void CpuBackend::observe(RankState &rs, uint32_t opIndex, const plan::Op &op,
                         const engine::StepBatch &batch, std::span<float> logits) {
  const plan::Rank *rank = rs.rank;
  const uint64_t T = static_cast<uint64_t>(batch.numTokens);
  const uint64_t R = static_cast<uint64_t>(batch.numRows());
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
      if (o->index() == static_cast<uint32_t>(plan::StepOutput::Hidden)) {
        bytes = {rs.hidden.get(), T * plan_.plan().model()->hidden_size() * sizeof(uint16_t)};
        break;
      }
      const float *out = rs.index == 0 ? logits.data() : rs.outputScratch.data();
      bytes = {reinterpret_cast<const uint8_t *>(out),
               R * plan_.plan().model()->vocab_size() * sizeof(float)};
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
  return run(batch, logits, plan::Program::Target);
}

bool CpuBackend::hasDraftProgram() const { return plan::hasDraftProgram(plan_.plan()); }

Status CpuBackend::runDraftStep(const engine::StepBatch &batch, std::span<float> logits) {
  return run(batch, logits, plan::Program::Draft);
}

Status CpuBackend::run(const engine::StepBatch &batch, std::span<float> logits,
                       plan::Program program) {
  shared_->rowSeqs = 0; // a candidate step's rows are gone
  const plan::Plan &p = plan_.plan();
  const uint32_t vocab = p.model()->vocab_size();
  VOLT_RETURN_IF_ERROR(plan::checkStep(p, batch, program));
  if (logits.size() != static_cast<size_t>(batch.numRows()) * vocab)
    return Error("logits buffer of " + std::to_string(logits.size()) + " floats for " +
                 std::to_string(batch.numRows()) + " rows x " + std::to_string(vocab));
  // A draft step starts from rows the last step wrote.
  for (int32_t row : batch.hiddenRows)
    if (row >= hiddenRowsLeft_)
      return Error("hidden row " + std::to_string(row) + ": the last step left " +
                   std::to_string(hiddenRowsLeft_) + " rows");

  // Ranks 1.. run on their own threads; rank 0 on the caller's.
  std::vector<std::thread> others;
  for (size_t r = 1; r < ranks_.size(); ++r)
    others.emplace_back([&, r] { runRank(*ranks_[r], batch, logits, program); });
  runRank(*ranks_[0], batch, logits, program);
  for (std::thread &t : others)
    t.join();
  hiddenRowsLeft_ = hasDraftProgram() ? batch.numTokens : 0;
  return Status::success();
}

void CpuBackend::runRank(RankState &rs, const engine::StepBatch &batch, std::span<float> logits,
                         plan::Program program) {
  RankMemory memory;
  memory.arena = rs.arena.get();
  memory.weights = rs.pack.data();
  memory.caches = rs.caches.get();
  memory.workspace = rs.workspace.get();
  memory.output = rs.index == 0 ? logits.data() : rs.outputScratch.data();
  memory.hidden = rs.hidden.get();
  const bool observed = static_cast<bool>(shared_->observer);
  const auto [first, last] = plan::programOps(*rs.rank, program);
  for (uint32_t opIndex = first; opIndex < last; ++opIndex) {
    const plan::Op *op = rs.rank->ops()->Get(opIndex);
    // The loader checked the kind: every kind has a runner.
    OpContext context(*rs.rank, rs.index, *op, batch, memory, *rs.pool, *shared_->communicator,
                      rs.scratch, rs.opNumerics[opIndex]);
    runnerOf(op->kind())(context);
    if (observed)
      observe(rs, opIndex, *op, batch, logits);
  }
}

} // namespace volt::executor
