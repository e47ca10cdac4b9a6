//===- CudaSampling.cpp - sampling candidates on the cuda backend ---------===//
//
// runStepCandidates: a step whose rank 0 runs the plan's sampler
// (templates/top_candidates.cu) over the step's logits and copies back
// only each sequence's candidates and normalisers, S x (8 k + 12) bytes
// instead of S x 4 vocab; fetchRows: the few rows a request still needs,
// copied from the device while they are there (until the next step is
// submitted).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaBackendState.h"

#include <cmath>
#include <cstring>

namespace volt::cuda {

int32_t CudaBackend::candidatesPerSeq() const { return static_cast<int32_t>(shared_->samplerK); }

StepAction CudaBackend::samplerAction(const Rank &rank, uint32_t seqs) const {
  const Shared &shared = *shared_;
  const CandidateLayout &layout = shared.candidates;
  StepAction a;
  a.kind = StepAction::Kind::Launch;
  a.op = "sampler (top_candidates)";
  a.function = rank.functions[shared.samplerKernel];
  a.grid = {seqs, 1, 1};
  a.block = {shared.samplerThreads, 1, 1};
  // top_candidates(logits, temperatures, ids, values, stats, seqs): five
  // pointers, then an int, each at its natural alignment.
  const uint64_t pointers[] = {rank.logits, rank.candidates + layout.temperatures,
                               rank.candidates + layout.ids, rank.candidates + layout.values,
                               rank.candidates + layout.stats};
  const int32_t count = static_cast<int32_t>(seqs);
  a.params.resize(sizeof(pointers) + sizeof(count));
  std::memcpy(a.params.data(), pointers, sizeof(pointers));
  std::memcpy(a.params.data() + sizeof(pointers), &count, sizeof(count));
  return a;
}

Status CudaBackend::runStepCandidates(const engine::StepBatch &batch,
                                      std::span<const float> temperatures,
                                      engine::StepCandidates &out) {
  Shared &shared = *shared_;
  VOLT_RETURN_IF_ERROR(shared.usable());
  if (shared.samplerK == 0)
    return Error(plan_.path().string() +
                 ": the plan has no sampler (compiled before GPU sampling); use runStep, or "
                 "compile the spec again");
  if (!shared.inFlight.empty())
    return Error("a step submitted with submitStep is still in flight; finish it first");
  const size_t S = batch.numSeqs > 0 ? static_cast<size_t>(batch.numSeqs) : 0;
  const size_t k = shared.samplerK;
  // The sampler reads one logits row per sequence.
  if (batch.numRows() != batch.numSeqs)
    return Error("a step of " + std::to_string(batch.numRows()) + " logits rows for " +
                 std::to_string(S) +
                 " sequences: sampling candidates serve one row per sequence; run a "
                 "speculative verify step with runStep");
  if (temperatures.size() != S)
    return Error("temperatures hold " + std::to_string(temperatures.size()) + " values for " +
                 std::to_string(S) + " sequences");
  for (size_t s = 0; s < S; ++s)
    if (std::isnan(temperatures[s]))
      return Error("temperature of sequence " + std::to_string(s) +
                   " is NaN; expected a number (<= 0: greedy)");
  if (out.ids.size() != S * k || out.values.size() != S * k || out.stats.size() != S * 3)
    return Error("candidate buffers of " + std::to_string(out.ids.size()) + " ids, " +
                 std::to_string(out.values.size()) + " values and " +
                 std::to_string(out.stats.size()) + " stats for " + std::to_string(S) +
                 " sequences x " + std::to_string(k) + " candidates (expected " +
                 std::to_string(S * k) + ", " + std::to_string(S * k) + " and " +
                 std::to_string(S * 3) + ")");
  VOLT_ASSIGN_OR_RETURN(uint64_t ticket, submit(batch, temperatures.data()));
  shared.inFlight.pop_front();
  out.k = static_cast<int32_t>(k);
  VOLT_RETURN_IF_ERROR(shared.stopOn(waitForCandidates(ticket, S, out)));
  shared.rowsKept = true;
  shared.rowsSeqs = static_cast<uint32_t>(S);
  return Status::success();
}

Status CudaBackend::waitForCandidates(uint64_t ticket, uint64_t seqs, engine::StepCandidates &out) {
  CudaDriver &d = *shared_->driver;
  const CandidateLayout &layout = shared_->candidates;
  const uint32_t slot = static_cast<uint32_t>(ticket % kStagingSlots);
  Rank &first = *ranks_.front();
  const std::string label = "GPU " + std::to_string(first.deviceOrdinal);
  VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(first.context), label + ": context"));
  VOLT_RETURN_IF_ERROR(
      d.check(d.cuEventSynchronize(first.candidatesReady[slot]), label + ": running the step"));
  const uint8_t *staged = first.stagedCandidates[slot];
  const uint64_t k = shared_->samplerK;
  std::memcpy(out.ids.data(), staged + layout.ids, seqs * k * 4);
  std::memcpy(out.values.data(), staged + layout.values, seqs * k * 4);
  std::memcpy(out.stats.data(), staged + layout.stats, seqs * 3 * 4);
  return checkOtherRanks(ticket);
}

Status CudaBackend::fetchRows(std::span<const int32_t> seqs, std::span<float> rows) {
  Shared &shared = *shared_;
  VOLT_RETURN_IF_ERROR(shared.usable());
  if (!shared.rowsKept)
    return Error("no logits rows to fetch: rows stay on the GPU only from a runStepCandidates "
                 "step until the next step is submitted");
  const uint64_t vocab = shared.vocab;
  if (rows.size() != seqs.size() * vocab)
    return Error("rows buffer of " + std::to_string(rows.size()) + " floats for " +
                 std::to_string(seqs.size()) + " sequences x " + std::to_string(vocab));
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i] < 0 || static_cast<uint32_t>(seqs[i]) >= shared.rowsSeqs)
      return Error("sequence " + std::to_string(seqs[i]) + " is outside the last step's " +
                   std::to_string(shared.rowsSeqs) + " sequences");
    if (i > 0 && seqs[i] <= seqs[i - 1])
      return Error("sequences to fetch must be ascending; " + std::to_string(seqs[i]) +
                   " follows " + std::to_string(seqs[i - 1]));
  }
  if (seqs.empty())
    return Status::success();
  // No step is in flight (submitting one ends the rows' life), so the
  // logits staging of slot 0 is free; runs of consecutive sequences are
  // one copy each.
  CudaDriver &d = *shared.driver;
  Rank &first = *ranks_.front();
  const std::string label = "GPU " + std::to_string(first.deviceOrdinal);
  auto copy = [&]() -> Status {
    VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(first.context), label + ": context"));
    const uint64_t rowBytes = vocab * 4;
    for (size_t i = 0; i < seqs.size();) {
      size_t j = i + 1;
      while (j < seqs.size() && seqs[j] == seqs[j - 1] + 1)
        ++j;
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuMemcpyDtoHAsync(first.stagedLogits[0] + i * vocab,
                                      first.logits + static_cast<uint64_t>(seqs[i]) * rowBytes,
                                      (j - i) * rowBytes, first.stream),
                  label + ": reading logits rows"));
      i = j;
    }
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuStreamSynchronize(first.stream), label + ": reading logits rows"));
    std::memcpy(rows.data(), first.stagedLogits[0], rows.size() * 4);
    return Status::success();
  };
  return shared.stopOn(copy());
}

} // namespace volt::cuda
