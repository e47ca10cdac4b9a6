//===- CudaSteps.cpp - running steps on the cuda backend ------------------===//
//
// A step is submitted (inputs staged and uploaded, work enqueued on every
// rank's stream: a decode step's bucket graphs, or direct launches) and
// then finished (its logits waited for, chunk by chunk, and copied out; or,
// for runStepCandidates, the sampler's candidates, the logits staying on
// the device for fetchRows).
// The ranks enqueue in parallel, a thread each, because a rank's NCCL call
// may wait for its peers to make theirs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaBackendState.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace volt::cuda {

Status CudaBackend::checkBatch(const engine::StepBatch &batch, plan::Program program) const {
  VOLT_RETURN_IF_ERROR(plan::checkStep(plan_.plan(), batch, program));
  // A draft step starts from rows the last step wrote.
  for (int32_t row : batch.hiddenRows)
    if (row >= shared_->hiddenRowsLeft)
      return Error("hidden row " + std::to_string(row) + ": the last step left " +
                   std::to_string(shared_->hiddenRowsLeft) + " rows");
  return Status::success();
}

bool CudaBackend::hasDraftProgram() const { return plan::hasDraftProgram(plan_.plan()); }

Status CudaBackend::runDraftStep(const engine::StepBatch &batch, std::span<float> logits) {
  return run(batch, logits, plan::Program::Draft);
}
Status CudaBackend::runStep(const engine::StepBatch &batch, std::span<float> logits) {
  return run(batch, logits, plan::Program::Target);
}

Status CudaBackend::run(const engine::StepBatch &batch, std::span<float> logits,
                        plan::Program program) {
  VOLT_RETURN_IF_ERROR(shared_->usable());
  if (!shared_->inFlight.empty())
    return Error("a step submitted with submitStep is still in flight; finish it first");
  if (batch.numSeqs >= 1 && logits.size() != static_cast<size_t>(batch.numRows()) * shared_->vocab)
    return Error("logits buffer of " + std::to_string(logits.size()) + " floats for " +
                 std::to_string(batch.numRows()) + " rows x " + std::to_string(shared_->vocab));
  VOLT_ASSIGN_OR_RETURN(uint64_t ticket, submit(batch, nullptr, program));
  return finishStep(ticket, logits);
}

Result<uint64_t> CudaBackend::submitStep(const engine::StepBatch &batch) {
  return submit(batch, nullptr);
}

Result<uint64_t> CudaBackend::submit(const engine::StepBatch &batch, const float *temperatures,
                                     plan::Program program) {
  Shared &shared = *shared_;
  VOLT_RETURN_IF_ERROR(shared.usable());
  if (shared.inFlight.size() >= kStagingSlots)
    return Error(std::to_string(kStagingSlots) +
                 " steps are in flight; finish the oldest before submitting another");
  VOLT_RETURN_IF_ERROR(checkBatch(batch, program));
  // This step's kernels overwrite the logits fetchRows would read.
  shared.rowsKept = false;

  StepMode mode;
  const uint64_t ticket = shared.nextTicket;
  mode.slot = static_cast<uint32_t>(ticket % kStagingSlots);
  mode.candidates = temperatures != nullptr;
  mode.program = program;
  // Draft steps run with direct launches (their graphs would be another set).
  const uint32_t bucket = isDecodeStep(batch) && program == plan::Program::Target
                              ? bucketFor(shared.buckets, static_cast<uint32_t>(batch.numTokens))
                              : 0;
  if (bucket) {
    mode.bucket = bucket;
    mode.bucketIndex =
        static_cast<size_t>(std::lower_bound(shared.buckets.begin(), shared.buckets.end(), bucket) -
                            shared.buckets.begin());
    mode.graphIndex = mode.bucketIndex + (mode.candidates ? shared.buckets.size() : 0);
    switch (shared.bucketStates[mode.graphIndex]) {
    case BucketState::Untried:
      mode.kind = StepMode::Capture;
      break;
    case BucketState::Captured:
      mode.kind = StepMode::Replay;
      break;
    case BucketState::Failed:
      mode.kind = StepMode::Direct;
      break;
    }
  }

  std::vector<Status> results(ranks_.size());
  std::vector<std::string> captureErrors(ranks_.size());
  shared.rankThreads->run([&](size_t r) {
    results[r] = submitRank(*ranks_[r], batch, temperatures, mode, captureErrors[r]);
  });

  if (mode.kind == StepMode::Capture) {
    // Every rank pads a bucket's steps or none does (their collectives'
    // sizes must agree): one rank's failed capture turns the bucket to
    // direct launches everywhere from the next step on.
    auto failed = std::find_if(captureErrors.begin(), captureErrors.end(),
                               [](const std::string &e) { return !e.empty(); });
    if (failed == captureErrors.end()) {
      shared.bucketStates[mode.graphIndex] = BucketState::Captured;
      ++shared.stats.captures;
    } else {
      shared.bucketStates[mode.graphIndex] = BucketState::Failed;
      ++shared.stats.captureFailures;
      for (auto &rank : ranks_) {
        rank->graphs[mode.graphIndex].reset();
      }
      shared.log("cuda backend: capturing the decode step of " + std::to_string(bucket) +
                 " sequences as a CUDA graph failed (" + *failed +
                 "); decode steps of that size run with direct launches");
    }
  }
  for (Status &s : results)
    if (!s.ok())
      return shared.stopOn(s).error();
  const bool graphRan = mode.kind == StepMode::Replay ||
                        (mode.kind == StepMode::Capture &&
                         shared.bucketStates[mode.graphIndex] == BucketState::Captured);
  ++(graphRan ? shared.stats.graphSteps : shared.stats.directSteps);
  shared.inFlight.push_back({ticket, static_cast<uint32_t>(batch.numRows()), mode.candidates});
  if (plan::hasDraftProgram(plan_.plan()))
    shared.hiddenRowsLeft = batch.numTokens;
  ++shared.nextTicket;
  return ticket;
}

Status CudaBackend::submitRank(Rank &rs, const engine::StepBatch &batch, const float *temperatures,
                               const StepMode &mode, std::string &captureError) {
  CudaDriver &d = *shared_->driver;
  const std::string label = "GPU " + std::to_string(rs.deviceOrdinal);
  const StreamTarget target{&d, shared_->nccl.get(), rs.comm, rs.stream, label};
  const uint32_t slot = mode.slot;
  VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(rs.context), label + ": context"));

  // The slot's previous inputs (two steps ago) must be on the device before
  // the slot is refilled.
  if (rs.uploadPending[slot])
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuEventSynchronize(rs.inputsUploaded[slot]), label + ": step inputs"));
  const uint32_t padTo = mode.kind == StepMode::Direct ? 0 : mode.bucket;
  const auto counts = stageInputs(batch, padTo, rs.layout, rs.stagedInputs[slot]);
  for (size_t i = 0; i < kStepInputCount; ++i)
    if (counts[i])
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuMemcpyHtoDAsync(rs.inputs[i], rs.stagedInputs[slot] + rs.layout.offset[i] / 4,
                                      counts[i] * 4, rs.stream),
                  label + ": uploading the step inputs"));
  // The sampler's temperatures, beside the inputs: a captured step reads
  // them from the same device buffer every time. Padding rows get 0
  // (greedy), computed and never copied out.
  const bool sampler = mode.candidates && rs.index == 0;
  const uint32_t samplerSeqs = std::max(static_cast<uint32_t>(batch.numSeqs), padTo);
  if (sampler) {
    const CandidateLayout &layout = shared_->candidates;
    float *staged = reinterpret_cast<float *>(rs.stagedCandidates[slot] + layout.temperatures);
    std::copy(temperatures, temperatures + batch.numSeqs, staged);
    std::fill(staged + batch.numSeqs, staged + samplerSeqs, 0.0f);
    VOLT_RETURN_IF_ERROR(d.check(d.cuMemcpyHtoDAsync(rs.candidates + layout.temperatures, staged,
                                                     uint64_t{samplerSeqs} * 4, rs.stream),
                                 label + ": uploading the sampling temperatures"));
  }
  VOLT_RETURN_IF_ERROR(
      d.check(d.cuEventRecord(rs.inputsUploaded[slot], rs.stream), label + ": step inputs"));
  rs.uploadPending[slot] = true;

  const uint32_t ranks = static_cast<uint32_t>(ranks_.size());
  switch (mode.kind) {
  case StepMode::Direct: {
    VOLT_ASSIGN_OR_RETURN(auto actions,
                          buildStep(rs.view(ranks), static_cast<uint32_t>(batch.numTokens),
                                    static_cast<uint32_t>(batch.numSeqs),
                                    static_cast<uint32_t>(batch.numRows()), mode.program));
    if (sampler)
      actions.push_back(samplerAction(rs, samplerSeqs));
    VOLT_RETURN_IF_ERROR(issueActions(target, actions));
    break;
  }
  case StepMode::Capture: {
    // Built at the bucket size: the grids, TokenCount, SeqCount and
    // RowCount arguments and the collectives' sizes are those of the padded
    // step (a decode step has one row per sequence).
    VOLT_ASSIGN_OR_RETURN(auto actions,
                          buildStep(rs.view(ranks), mode.bucket, mode.bucket, mode.bucket));
    if (sampler)
      actions.push_back(samplerAction(rs, mode.bucket));
    auto captured = CapturedStep::capture(target, actions);
    if (captured.ok()) {
      rs.graphs[mode.graphIndex] = std::move(*captured);
      VOLT_RETURN_IF_ERROR(rs.graphs[mode.graphIndex]->replay(target));
    } else {
      captureError = captured.message();
      VOLT_RETURN_IF_ERROR(issueActions(target, actions));
    }
    break;
  }
  case StepMode::Replay:
    if (!rs.graphs[mode.graphIndex])
      return Error(label + ": the graph of bucket " + std::to_string(mode.bucket) + " is missing");
    VOLT_RETURN_IF_ERROR(rs.graphs[mode.graphIndex]->replay(target));
    break;
  }

  if (sampler) {
    // The real sequences' candidates only; the logits stay on the device.
    const CandidateLayout &layout = shared_->candidates;
    const uint64_t seqs = static_cast<uint64_t>(batch.numSeqs), k = shared_->samplerK;
    const std::pair<uint64_t, uint64_t> arrays[] = {
        {layout.ids, seqs * k * 4}, {layout.values, seqs * k * 4}, {layout.stats, seqs * 3 * 4}};
    for (const auto &[offset, bytes] : arrays)
      VOLT_RETURN_IF_ERROR(d.check(d.cuMemcpyDtoHAsync(rs.stagedCandidates[slot] + offset,
                                                       rs.candidates + offset, bytes, rs.stream),
                                   label + ": reading the sampling candidates"));
    VOLT_RETURN_IF_ERROR(d.check(d.cuEventRecord(rs.candidatesReady[slot], rs.stream),
                                 label + ": reading the sampling candidates"));
  } else if (rs.index == 0) {
    // The real rows only, a chunk at a time, each followed by an event
    // that finishStep waits on before copying that chunk out.
    const uint64_t rows = static_cast<uint64_t>(batch.numRows());
    const uint64_t rowBytes = uint64_t{shared_->vocab} * 4;
    for (uint64_t row = 0, c = 0; row < rows; row += shared_->logitsChunkRows, ++c) {
      const uint64_t n = std::min(shared_->logitsChunkRows, rows - row);
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuMemcpyDtoHAsync(rs.stagedLogits[slot] + row * shared_->vocab,
                                      rs.logits + row * rowBytes, n * rowBytes, rs.stream),
                  label + ": reading the logits"));
      VOLT_RETURN_IF_ERROR(d.check(d.cuEventRecord(rs.logitsReady[slot][c], rs.stream),
                                   label + ": reading the logits"));
    }
  }
  return d.check(d.cuEventRecord(rs.stepDone[slot], rs.stream), label + ": step");
}

Status CudaBackend::finishStep(uint64_t ticket, std::span<float> logits) {
  Shared &shared = *shared_;
  VOLT_RETURN_IF_ERROR(shared.usable());
  if (shared.inFlight.empty() || shared.inFlight.front().ticket != ticket)
    return Error("step " + std::to_string(ticket) + " is not the oldest step in flight" +
                 (shared.inFlight.empty()
                      ? std::string(" (none is)")
                      : " (step " + std::to_string(shared.inFlight.front().ticket) + " is)"));
  if (shared.inFlight.front().candidates)
    return Error("step " + std::to_string(ticket) +
                 " was submitted for sampling candidates; it has no logits to finish with");
  const uint64_t rows = shared.inFlight.front().rows;
  if (logits.size() != rows * shared.vocab)
    return Error("logits buffer of " + std::to_string(logits.size()) + " floats for " +
                 std::to_string(rows) + " rows x " + std::to_string(shared.vocab));
  shared.inFlight.pop_front();
  return shared.stopOn(waitForLogits(ticket, rows, logits));
}

Status CudaBackend::waitForLogits(uint64_t ticket, uint64_t rows, std::span<float> logits) {
  Shared &shared = *shared_;
  CudaDriver &d = *shared.driver;
  const uint32_t slot = static_cast<uint32_t>(ticket % kStagingSlots);
  Rank &first = *ranks_.front();
  const std::string label = "GPU " + std::to_string(first.deviceOrdinal);
  VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(first.context), label + ": context"));
  for (uint64_t row = 0, c = 0; row < rows; row += shared.logitsChunkRows, ++c) {
    const uint64_t n = std::min(shared.logitsChunkRows, rows - row);
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuEventSynchronize(first.logitsReady[slot][c]), label + ": running the step"));
    std::memcpy(logits.data() + row * shared.vocab, first.stagedLogits[slot] + row * shared.vocab,
                n * shared.vocab * 4);
  }
  return checkOtherRanks(ticket);
}

Status CudaBackend::checkOtherRanks(uint64_t ticket) {
  CudaDriver &d = *shared_->driver;
  const uint32_t slot = static_cast<uint32_t>(ticket % kStagingSlots);
  // The other ranks' last work fed rank 0's logits; a fault on one of them
  // shows here rather than at the next step.
  for (size_t r = 1; r < ranks_.size(); ++r) {
    Rank &rs = *ranks_[r];
    VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(rs.context),
                                 "GPU " + std::to_string(rs.deviceOrdinal) + ": context"));
    const CUresult done = d.cuEventQuery(rs.stepDone[slot]);
    if (done != 0 && done != kErrorNotReady)
      return d.check(done, "GPU " + std::to_string(rs.deviceOrdinal) + ": running the step");
  }
  return Status::success();
}

std::vector<uint32_t> CudaBackend::decodeBuckets() const { return shared_->buckets; }

GraphStats CudaBackend::graphStats() const { return shared_->stats; }

} // namespace volt::cuda
