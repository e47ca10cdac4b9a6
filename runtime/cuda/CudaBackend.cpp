//===- CudaBackend.cpp ----------------------------------------------------===//
//
// Setting up and tearing down the backend: devices, memory, staging,
// kernels, communicators. Running steps is CudaSteps.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaBackendState.h"
#include "runtime/cuda/SyntheticWeights.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace volt::cuda {
namespace {

using plan::OperandKind;
using plan::OpKind;

/// CUDA_ERROR_NO_BINARY_FOR_GPU: a cubin for another architecture.
constexpr CUresult kNoBinaryForGpu = 209;
/// Dynamic shared memory a kernel may use without opting in.
constexpr uint32_t kDefaultDynamicShared = 48 << 10;

/// Whether graphs are on: `requested`, unless VOLT_CUDA_GRAPHS says off.
Result<bool> graphsWanted(bool requested) {
  const char *env = std::getenv("VOLT_CUDA_GRAPHS");
  if (!env)
    return requested;
  const std::string v = env;
  if (v == "0" || v == "off" || v == "false")
    return false;
  if (v == "1" || v == "on" || v == "true" || v.empty())
    return requested;
  return Error("VOLT_CUDA_GRAPHS: expected 0 or 1 (off or on), found '" + v + "'");
}

/// Fills the weights of `rank` at `weights` with synthetic contents: the
/// patterns go up once, then device-to-device copies (and memsets for
/// zeros) on `stream`; the patterns are freed before returning.
Status fillSyntheticWeights(CudaDriver &d, const plan::Rank &rank, CUdeviceptr weights,
                            CUstream stream, const std::string &label) {
  const SyntheticFill fill = syntheticFill(rank);
  CUdeviceptr patterns = 0;
  VOLT_RETURN_IF_ERROR(d.check(d.cuMemAlloc(&patterns, fill.patterns.size()),
                               label + ": allocating the synthetic weight patterns (" +
                                   formatBytes(fill.patterns.size()) + ")"));
  auto run = [&]() -> Status {
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuMemcpyHtoD(patterns, fill.patterns.data(), fill.patterns.size()),
                label + ": uploading the synthetic weight patterns"));
    // The copies run on a non-blocking stream, which does not wait for a
    // pageable upload's DMA.
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuCtxSynchronize(), label + ": uploading the synthetic weight patterns"));
    for (const SyntheticCopy &c : fill.copies) {
      const CUresult rc =
          c.kind == SyntheticKind::Zeros
              ? d.cuMemsetD8Async(weights + c.to, 0, c.bytes, stream)
              : d.cuMemcpyDtoDAsync(weights + c.to, patterns + fill.patternOffset(c.kind) + c.from,
                                    c.bytes, stream);
      VOLT_RETURN_IF_ERROR(d.check(rc, label + ": filling the synthetic weights"));
    }
    for (const SyntheticFill::Write &w : fill.writes)
      VOLT_RETURN_IF_ERROR(d.check(d.cuMemcpyHtoD(weights + w.to, w.bytes.data(), w.bytes.size()),
                                   label + ": writing the synthetic weights' epilogue scales"));
    return d.check(d.cuStreamSynchronize(stream), label + ": filling the synthetic weights");
  };
  Status filled = run();
  d.cuMemFree(patterns);
  return filled;
}

} // namespace

CudaBackend::CudaBackend(const plan::LoadedPlan &plan) : plan_(plan) {}

CudaBackend::~CudaBackend() {
  if (!shared_ || !shared_->driver)
    return;
  CudaDriver &d = *shared_->driver;
  // After a failed step, a rank's queue may hold collectives its peers
  // never issued: abort the communicators, which ends them, rather than
  // wait for them forever.
  if (!shared_->failure.empty() && shared_->nccl)
    for (auto &r : ranks_)
      if (r->comm) {
        shared_->nccl->ncclCommAbort(r->comm);
        r->comm = nullptr;
      }
  // Work still queued (a submitted step never finished) reads the memory
  // freed below: wait for it first. Graphs go before the communicators.
  for (auto &r : ranks_)
    if (r->context && r->stream) {
      d.cuCtxSetCurrent(r->context);
      d.cuStreamSynchronize(r->stream);
      r->graphs.clear();
    }
  for (auto &r : ranks_) {
    if (r->comm && shared_->nccl)
      shared_->nccl->ncclCommDestroy(r->comm);
    if (!r->context)
      continue;
    d.cuCtxSetCurrent(r->context);
    for (CUevent e : r->events)
      d.cuEventDestroy(e);
    for (void *h : r->hostAllocations)
      d.cuMemFreeHost(h);
    for (CUmodule m : r->modules)
      if (m)
        d.cuModuleUnload(m);
    for (CUdeviceptr p : r->allocations)
      d.cuMemFree(p);
    if (r->stream)
      d.cuStreamDestroy(r->stream);
    d.cuDevicePrimaryCtxRelease(r->device);
  }
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(const plan::LoadedPlan &loaded,
                                                         const CudaBackendOptions &options) {
  const plan::Plan &p = loaded.plan();
  const std::string arch = p.arch() ? p.arch()->str() : "";
  const std::string where = loaded.path().string();
  if (arch.rfind("sm_", 0) != 0)
    return Error(where + ": the plan was compiled for " + (arch.empty() ? "?" : arch) +
                 ", not for a GPU; run it with --backend cpu, or compile the spec for a GPU "
                 "target");
  std::unique_ptr<CudaBackend> backend(new CudaBackend(loaded));
  backend->shared_ = std::make_unique<Shared>();
  Shared &shared = *backend->shared_;
  shared.planSm = static_cast<uint32_t>(std::atoi(arch.c_str() + 3));
  shared.vocab = p.model()->vocab_size();
  shared.log = options.log ? options.log : [](const std::string &line) {
    std::fprintf(stderr, "volt: %s\n", line.c_str());
  };
  VOLT_ASSIGN_OR_RETURN(const bool graphs, graphsWanted(options.graphs));
  if (options.driver) {
    shared.driver = options.driver;
  } else {
    VOLT_ASSIGN_OR_RETURN(shared.driver, CudaDriver::load(options.driverLibraries));
  }
  CudaDriver &d = *shared.driver;

  const uint32_t ranks = p.ranks()->size();
  int count = 0;
  VOLT_RETURN_IF_ERROR(d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  std::vector<int> devices = options.devices;
  for (uint32_t r = static_cast<uint32_t>(devices.size()); r < ranks; ++r)
    devices.push_back(static_cast<int>(r));
  if (devices.size() != ranks)
    return Error("--devices lists " + std::to_string(devices.size()) + " GPUs for a plan of " +
                 std::to_string(ranks) + " ranks");
  for (int dev : devices)
    if (dev < 0 || dev >= count)
      return Error(where + ": the plan needs " + std::to_string(ranks) + " GPU(s) (device " +
                   std::to_string(dev) + "); this machine has " + std::to_string(count));
  if (ranks > 1) {
    if (options.nccl) {
      shared.nccl = options.nccl;
    } else {
      VOLT_ASSIGN_OR_RETURN(shared.nccl, Nccl::load(options.ncclLibraries));
    }
  }

  const plan::Limits *limits = p.limits();
  const uint64_t maxTokens = limits->max_num_batched_tokens(), maxSeqs = limits->max_num_seqs();
  // Logits rows: one per sequence, and a speculative plan's draft rows.
  const uint64_t maxRows = plan::maxLogitsRows(*limits);
  const uint64_t vocab = p.model()->vocab_size();
  if (const plan::Sampler *sampler = p.sampler()) {
    // The loader checked it (runtime/plan).
    shared.samplerK = sampler->k();
    shared.samplerKernel = sampler->kernel();
    shared.samplerThreads = sampler->threads();
    shared.candidates = CandidateLayout::forLimits(maxSeqs, shared.samplerK);
  }
  shared.logitsChunkRows = std::max<uint64_t>(1, options.logitsChunkBytes / (vocab * 4));
  shared.logitsChunks =
      static_cast<uint32_t>((maxRows + shared.logitsChunkRows - 1) / shared.logitsChunkRows);
  for (uint32_t r = 0; r < ranks; ++r) {
    auto rank = std::make_unique<Rank>();
    Rank &rs = *rank;
    rs.index = r;
    rs.plan = p.ranks()->Get(r);
    rs.deviceOrdinal = devices[r];
    backend->ranks_.push_back(std::move(rank));
    const std::string label = "GPU " + std::to_string(rs.deviceOrdinal);
    VOLT_RETURN_IF_ERROR(d.check(d.cuDeviceGet(&rs.device, rs.deviceOrdinal), label));
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof(name), rs.device);
    rs.name = name;
    int major = 0, minor = 0;
    d.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, rs.device);
    d.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, rs.device);
    rs.computeCapability = major * 10 + minor;
    if (rs.computeCapability < static_cast<int>(shared.planSm))
      return Error(where + ": the plan is for " + arch + "; " + label + " (" + rs.name +
                   ") is sm_" + std::to_string(rs.computeCapability) +
                   ", older than that; compile the spec for this GPU's SKU");
    rs.fromPtx = rs.computeCapability != static_cast<int>(shared.planSm);
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuDevicePrimaryCtxRetain(&rs.context, rs.device), label + ": context"));
    VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(rs.context), label + ": context"));
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuStreamCreate(&rs.stream, kStreamNonBlocking), label + ": stream"));

    // Memory: the pack, the arena (+ workspace), the caches, step inputs
    // and outputs, and the all-gather staging.
    const plan::Rank *pr = rs.plan;
    const uint64_t cacheBytes = pr->cache_bytes();
    uint64_t gatherBytes = 0;
    for (const plan::Op *op : *pr->ops())
      if (op->kind() == OpKind::AllGather) {
        const plan::Operand *in = op->operands()->Get(0);
        const uint64_t rows = plan::operandRows(*pr, *in, maxTokens, maxRows),
                       elem = plan::dtypeBytes(plan::operandDtype(*pr, *in));
        gatherBytes =
            std::max(gatherBytes, rows * op->params_as_AllGatherParams()->dim() * elem * ranks);
      }
    std::span<const uint8_t> pack = loaded.pack(r);
    const uint64_t weightBytes = pr->pack()->bytes();
    if (!options.syntheticWeights && pack.size() != weightBytes)
      return Error(where + ": the weight pack of rank " + std::to_string(r) + " is not loaded");
    rs.layout = InputLayout::forLimits(maxTokens, maxSeqs, limits->max_blocks_per_seq(), maxRows);
    const uint64_t inputBytes = rs.layout.totalBytes;
    // The sampler runs on rank 0 only.
    const uint64_t candidateBytes = r == 0 ? shared.candidates.totalBytes : 0;
    // A draft program's hidden rows: one per token of the largest step, FP16.
    const uint64_t hiddenBytes =
        plan::hasDraftProgram(p) ? maxTokens * uint64_t{p.model()->hidden_size()} * 2 : 0;
    const uint64_t need = weightBytes + pr->arena_bytes() + pr->workspace_bytes() + cacheBytes +
                          inputBytes + maxRows * vocab * 4 + gatherBytes + candidateBytes +
                          hiddenBytes;
    size_t freeBytes = 0, totalBytes = 0;
    VOLT_RETURN_IF_ERROR(d.check(d.cuMemGetInfo(&freeBytes, &totalBytes), label + ": memory"));
    if (need > freeBytes)
      return Error(where + ": rank " + std::to_string(r) + " needs " + formatBytes(need) +
                   " of device memory (weights " + formatBytes(weightBytes) + ", caches " +
                   formatBytes(cacheBytes) + ", activations " + formatBytes(pr->arena_bytes()) +
                   "); " + label + " (" + rs.name + ") has " + formatBytes(freeBytes) +
                   " free; lower gpu_memory_utilization or max_model_len in the spec, or free "
                   "the GPU");
    auto allocate = [&](uint64_t bytes, CUdeviceptr &out, const char *what) -> Status {
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuMemAlloc(&out, std::max<uint64_t>(bytes, 256)),
                  label + ": allocating " + what + " (" + formatBytes(bytes) + ")"));
      rs.allocations.push_back(out);
      rs.allocated += bytes;
      return Status::success();
    };
    VOLT_RETURN_IF_ERROR(allocate(weightBytes, rs.weights, "the weights"));
    if (options.syntheticWeights) {
      VOLT_RETURN_IF_ERROR(fillSyntheticWeights(d, *pr, rs.weights, rs.stream, label));
    } else {
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuMemcpyHtoD(rs.weights, pack.data(), pack.size()), label + ": uploading"));
      // From pageable memory the copy may return before its DMA lands, and
      // the kernels run on non-blocking streams that do not wait for it.
      VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSynchronize(), label + ": uploading the weights"));
    }
    VOLT_RETURN_IF_ERROR(
        allocate(pr->arena_bytes() + pr->workspace_bytes(), rs.arena, "the activation arena"));
    VOLT_RETURN_IF_ERROR(allocate(cacheBytes, rs.caches, "the caches"));
    VOLT_RETURN_IF_ERROR(allocate(maxRows * vocab * 4, rs.logits, "the logits"));
    if (gatherBytes)
      VOLT_RETURN_IF_ERROR(allocate(gatherBytes, rs.gather, "the all-gather staging"));
    if (hiddenBytes)
      VOLT_RETURN_IF_ERROR(allocate(hiddenBytes, rs.hidden, "the draft program's hidden rows"));
    if (candidateBytes)
      VOLT_RETURN_IF_ERROR(
          allocate(candidateBytes, rs.candidates, "the sampling temperatures and candidates"));
    CUdeviceptr inputBase = 0;
    VOLT_RETURN_IF_ERROR(allocate(inputBytes, inputBase, "the step inputs"));
    for (size_t i = 0; i < kStepInputCount; ++i)
      rs.inputs[i] = inputBase + rs.layout.offset[i];

    // Pinned staging and the events that order its reuse.
    auto pinned = [&](uint64_t bytes, void *&out, const char *what) -> Status {
      VOLT_RETURN_IF_ERROR(d.check(d.cuMemAllocHost(&out, std::max<uint64_t>(bytes, 256)),
                                   label + ": allocating pinned host memory for " + what + " (" +
                                       formatBytes(bytes) + ")"));
      rs.hostAllocations.push_back(out);
      return Status::success();
    };
    auto event = [&](CUevent &out) -> Status {
      VOLT_RETURN_IF_ERROR(d.check(d.cuEventCreate(&out, kEventDisableTiming), label + ": event"));
      rs.events.push_back(out);
      return Status::success();
    };
    for (uint32_t slot = 0; slot < kStagingSlots; ++slot) {
      void *host = nullptr;
      VOLT_RETURN_IF_ERROR(pinned(inputBytes, host, "the step inputs"));
      rs.stagedInputs[slot] = static_cast<int32_t *>(host);
      VOLT_RETURN_IF_ERROR(event(rs.inputsUploaded[slot]));
      VOLT_RETURN_IF_ERROR(event(rs.stepDone[slot]));
      if (r != 0)
        continue;
      VOLT_RETURN_IF_ERROR(pinned(maxRows * vocab * 4, host, "the logits"));
      rs.stagedLogits[slot] = static_cast<float *>(host);
      rs.logitsReady[slot].resize(shared.logitsChunks);
      for (CUevent &e : rs.logitsReady[slot])
        VOLT_RETURN_IF_ERROR(event(e));
      if (!candidateBytes)
        continue;
      VOLT_RETURN_IF_ERROR(
          pinned(candidateBytes, host, "the sampling temperatures and candidates"));
      rs.stagedCandidates[slot] = static_cast<uint8_t *>(host);
      VOLT_RETURN_IF_ERROR(event(rs.candidatesReady[slot]));
    }

    // Kernels: the cubin on the plan's architecture, the PTX elsewhere.
    uint32_t kernelCount = p.kernels() ? p.kernels()->size() : 0;
    std::vector<uint32_t> dynamicShared(kernelCount, 0);
    for (const plan::Op *op : *pr->ops())
      if (op->launches())
        for (const plan::Launch *l : *op->launches()) {
          if (l->kernel() >= kernelCount)
            return Error(where + ": op '" + (op->name() ? op->name()->str() : "?") +
                         "' launches kernel " + std::to_string(l->kernel()) + " of " +
                         std::to_string(kernelCount));
          dynamicShared[l->kernel()] = std::max(dynamicShared[l->kernel()], l->shared_bytes());
        }
    for (uint32_t k = 0; k < kernelCount; ++k) {
      const plan::Kernel *kernel = p.kernels()->Get(k);
      const std::string kernelName = kernel->name() ? kernel->name()->str() : "";
      CUmodule module = nullptr;
      CUresult rc = kNoBinaryForGpu;
      if (!rs.fromPtx && kernel->cubin() && kernel->cubin()->size()) {
        // A heap copy: the ELF image wants the alignment the FlatBuffer
        // does not promise.
        std::vector<uint8_t> image(kernel->cubin()->begin(), kernel->cubin()->end());
        rc = d.cuModuleLoadData(&module, image.data());
      }
      const std::string what = label + ": loading kernel " + kernelName + " (" +
                               (kernel->source() ? kernel->source()->str() : "") + ")";
      if (rc == kNoBinaryForGpu && kernel->ptx()) {
        rs.fromPtx = true;
        VOLT_ASSIGN_OR_RETURN(module, d.loadPtx(kernel->ptx()->str(), what));
        rc = 0;
      }
      VOLT_RETURN_IF_ERROR(d.check(rc, what));
      rs.modules.push_back(module);
      CUfunction function = nullptr;
      VOLT_RETURN_IF_ERROR(d.check(d.cuModuleGetFunction(&function, module, kernelName.c_str()),
                                   label + ": kernel " + kernelName));
      if (dynamicShared[k] > kDefaultDynamicShared)
        VOLT_RETURN_IF_ERROR(
            d.check(d.cuFuncSetAttribute(function, kFuncAttrMaxDynamicSharedSizeBytes,
                                         static_cast<int>(dynamicShared[k])),
                    label + ": kernel " + kernelName + " asks for " +
                        std::to_string(dynamicShared[k]) + " bytes of shared memory"));
      rs.functions.push_back(function);
    }
  }
  if (graphs) {
    // Bucket limits include every launch's max_tokens, so that padding a
    // step never changes the kernel variant an op selects.
    std::vector<uint32_t> launchLimits;
    for (const plan::Rank *pr : *p.ranks())
      for (const plan::Op *op : *pr->ops())
        if (op->launches())
          for (const plan::Launch *l : *op->launches())
            launchLimits.push_back(l->max_tokens());
    shared.buckets = cuda::decodeBuckets(static_cast<uint32_t>(maxSeqs),
                                         static_cast<uint32_t>(maxTokens), launchLimits);
    // Two graph sets: steps returning logits, and steps returning
    // candidates (CudaBackendState.h).
    shared.bucketStates.assign(2 * shared.buckets.size(), BucketState::Untried);
    for (auto &rank : backend->ranks_)
      rank->graphs.resize(2 * shared.buckets.size());
  }
  if (ranks > 1) {
    std::vector<NcclComm> comms(ranks, nullptr);
    VOLT_RETURN_IF_ERROR(shared.nccl->check(
        shared.nccl->ncclCommInitAll(comms.data(), static_cast<int>(ranks), devices.data()),
        "ncclCommInitAll over " + std::to_string(ranks) + " GPUs"));
    for (uint32_t r = 0; r < ranks; ++r)
      backend->ranks_[r]->comm = comms[r];
  }
  shared.rankThreads = std::make_unique<RankThreads>(backend->ranks_.size());
  return backend;
}

std::vector<std::string> CudaBackend::describeDevices() const {
  std::vector<std::string> lines;
  for (const auto &r : ranks_)
    lines.push_back("GPU " + std::to_string(r->deviceOrdinal) + ": " + r->name + " (sm_" +
                    std::to_string(r->computeCapability) + "), kernels from " +
                    (r->fromPtx ? "PTX compiled by the driver" : "the plan's cubins"));
  return lines;
}

uint64_t CudaBackend::deviceBytes() const {
  uint64_t total = 0;
  for (const auto &r : ranks_)
    total += r->allocated;
  return total;
}

} // namespace volt::cuda
