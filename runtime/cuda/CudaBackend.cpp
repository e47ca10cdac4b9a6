//===- CudaBackend.cpp ----------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/LaunchArgs.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <thread>

namespace volt::cuda {
namespace {

using plan::OperandKind;
using plan::OpKind;

/// CUDA_ERROR_NO_BINARY_FOR_GPU: a cubin for another architecture.
constexpr CUresult kNoBinaryForGpu = 209;
/// Dynamic shared memory a kernel may use without opting in.
constexpr uint32_t kDefaultDynamicShared = 48 << 10;

uint64_t dtypeBytes(plan::DType d) {
  return d == plan::DType::F32 || d == plan::DType::I32 ? 4 : 2;
}

} // namespace

struct CudaBackend::Shared {
  std::shared_ptr<CudaDriver> driver;
  std::shared_ptr<Nccl> nccl;
  uint32_t planSm = 0;
};

/// One rank's device, memory, kernels and communicator.
struct CudaBackend::Rank {
  uint32_t index = 0;
  const plan::Rank *plan = nullptr;
  CUdevice device = 0;
  int deviceOrdinal = 0;
  std::string name;
  int computeCapability = 0;
  bool fromPtx = false;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr weights = 0, arena = 0, kv = 0, logits = 0, gather = 0;
  /// One per plan.StepInput.
  std::vector<CUdeviceptr> inputs;
  uint64_t kvLayerBytes = 0;
  uint64_t allocated = 0;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;
  NcclComm comm = nullptr;
  std::vector<CUdeviceptr> allocations;
};

CudaBackend::CudaBackend(const plan::LoadedPlan &plan) : plan_(plan) {}

CudaBackend::~CudaBackend() {
  if (!shared_ || !shared_->driver)
    return;
  CudaDriver &d = *shared_->driver;
  for (auto &r : ranks_) {
    if (r->comm && shared_->nccl)
      shared_->nccl->ncclCommDestroy(r->comm);
    if (!r->context)
      continue;
    d.cuCtxSetCurrent(r->context);
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
  VOLT_ASSIGN_OR_RETURN(shared.driver, CudaDriver::load(options.driverLibraries));
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
    VOLT_ASSIGN_OR_RETURN(shared.nccl, Nccl::load(options.ncclLibraries));
  }

  const plan::Limits *limits = p.limits();
  const uint64_t maxTokens = limits->max_num_batched_tokens(), maxSeqs = limits->max_num_seqs();
  const uint64_t vocab = p.model()->vocab_size();
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

    // Memory: the pack, the arena (+ workspace), the KV cache, step inputs
    // and outputs, and the all-gather staging.
    const plan::Rank *pr = rs.plan;
    const plan::KvCache *kvPlan = pr->kv_cache();
    rs.kvLayerBytes = uint64_t{kvPlan->num_blocks()} * kvPlan->block_size() *
                      kvPlan->num_kv_heads() * kvPlan->head_dim() * 2;
    const uint64_t kvBytes = rs.kvLayerBytes * 2 * kvPlan->num_layers();
    uint64_t gatherBytes = 0;
    for (const plan::Op *op : *pr->ops())
      if (op->kind() == OpKind::AllGather) {
        const plan::Operand *in = op->operands()->Get(0);
        uint64_t rows = maxTokens, elem = 2;
        if (in->kind() == OperandKind::Arena) {
          const plan::Buffer *b = pr->buffers()->Get(in->index());
          rows = b->per_token_bytes() == 0 ? maxSeqs : maxTokens;
          elem = dtypeBytes(b->dtype());
        }
        gatherBytes = std::max(gatherBytes, rows * op->params()->dim() * elem * ranks);
      }
    std::span<const uint8_t> pack = loaded.pack(r);
    if (pack.size() != pr->pack()->bytes())
      return Error(where + ": the weight pack of rank " + std::to_string(r) + " is not loaded");
    const uint64_t inputBytes =
        (5 * maxTokens + 2 * maxSeqs + 1 + maxSeqs * limits->max_blocks_per_seq()) * 4;
    const uint64_t need = pack.size() + pr->arena_bytes() + pr->workspace_bytes() + kvBytes +
                          inputBytes + maxSeqs * vocab * 4 + gatherBytes;
    size_t freeBytes = 0, totalBytes = 0;
    VOLT_RETURN_IF_ERROR(d.check(d.cuMemGetInfo(&freeBytes, &totalBytes), label + ": memory"));
    if (need > freeBytes)
      return Error(where + ": rank " + std::to_string(r) + " needs " + formatBytes(need) +
                   " of device memory (weights " + formatBytes(pack.size()) + ", KV cache " +
                   formatBytes(kvBytes) + ", activations " + formatBytes(pr->arena_bytes()) +
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
    VOLT_RETURN_IF_ERROR(allocate(pack.size(), rs.weights, "the weights"));
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuMemcpyHtoD(rs.weights, pack.data(), pack.size()), label + ": uploading"));
    VOLT_RETURN_IF_ERROR(
        allocate(pr->arena_bytes() + pr->workspace_bytes(), rs.arena, "the activation arena"));
    VOLT_RETURN_IF_ERROR(allocate(kvBytes, rs.kv, "the KV cache"));
    VOLT_RETURN_IF_ERROR(allocate(maxSeqs * vocab * 4, rs.logits, "the logits"));
    if (gatherBytes)
      VOLT_RETURN_IF_ERROR(allocate(gatherBytes, rs.gather, "the all-gather staging"));
    const uint64_t inputElems[] = {maxTokens,   maxTokens, maxTokens,
                                   maxSeqs + 1, maxSeqs,   maxSeqs * limits->max_blocks_per_seq(),
                                   maxSeqs};
    for (uint64_t elems : inputElems) {
      CUdeviceptr ptr = 0;
      VOLT_RETURN_IF_ERROR(allocate(elems * 4, ptr, "the step inputs"));
      rs.inputs.push_back(ptr);
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
      if (rc == kNoBinaryForGpu && kernel->ptx()) {
        rs.fromPtx = true;
        std::string ptx = kernel->ptx()->str(); // NUL-terminated for the JIT
        rc = d.cuModuleLoadData(&module, ptx.c_str());
      }
      VOLT_RETURN_IF_ERROR(d.check(rc, label + ": loading kernel " + kernelName + " (" +
                                           (kernel->source() ? kernel->source()->str() : "") +
                                           ")"));
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
  if (ranks > 1) {
    std::vector<NcclComm> comms(ranks, nullptr);
    VOLT_RETURN_IF_ERROR(shared.nccl->check(
        shared.nccl->ncclCommInitAll(comms.data(), static_cast<int>(ranks), devices.data()),
        "ncclCommInitAll over " + std::to_string(ranks) + " GPUs"));
    for (uint32_t r = 0; r < ranks; ++r)
      backend->ranks_[r]->comm = comms[r];
  }
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

Status CudaBackend::runStep(const engine::StepBatch &batch, std::span<float> logits) {
  const plan::Plan &p = plan_.plan();
  const plan::Limits *limits = p.limits();
  const uint32_t vocab = p.model()->vocab_size();
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
  if (static_cast<uint32_t>(batch.maxBlocksPerSeq) != limits->max_blocks_per_seq())
    return Error("block tables of width " + std::to_string(batch.maxBlocksPerSeq) +
                 ", the plan's is " + std::to_string(limits->max_blocks_per_seq()));
  for (int32_t t : batch.tokens)
    if (t < 0 || static_cast<uint32_t>(t) >= vocab)
      return Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                   std::to_string(vocab - 1) + ")");
  const plan::KvCache *kv = ranks_.front()->plan->kv_cache();
  const uint64_t slots = uint64_t{kv->num_blocks()} * kv->block_size();
  for (int32_t slot : batch.slotMapping)
    if (slot >= 0 && static_cast<uint64_t>(slot) >= slots)
      return Error("KV slot " + std::to_string(slot) + " is outside the cache (" +
                   std::to_string(kv->num_blocks()) + " blocks of " +
                   std::to_string(kv->block_size()) + ")");
  for (int32_t block : batch.blockTables)
    if (block < 0 || static_cast<uint32_t>(block) >= kv->num_blocks())
      return Error("block table entry " + std::to_string(block) + " is outside the cache");

  std::vector<Status> results(ranks_.size());
  std::vector<std::thread> others;
  for (size_t r = 1; r < ranks_.size(); ++r)
    others.emplace_back([&, r] { results[r] = runRank(*ranks_[r], batch, logits); });
  results[0] = runRank(*ranks_[0], batch, logits);
  for (std::thread &t : others)
    t.join();
  for (Status &s : results)
    if (!s.ok())
      return s;
  return Status::success();
}

Status CudaBackend::runRank(Rank &rs, const engine::StepBatch &batch, std::span<float> logits) {
  CudaDriver &d = *shared_->driver;
  const plan::Rank *pr = rs.plan;
  const uint32_t T = static_cast<uint32_t>(batch.numTokens);
  const uint32_t S = static_cast<uint32_t>(batch.numSeqs);
  const std::string label = "GPU " + std::to_string(rs.deviceOrdinal);
  VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(rs.context), label + ": context"));

  const std::span<const int32_t> inputs[] = {batch.tokens,    batch.positions,   batch.slotMapping,
                                             batch.seqStarts, batch.contextLens, batch.blockTables,
                                             batch.logitsRows};
  for (size_t i = 0; i < std::size(inputs); ++i)
    if (!inputs[i].empty())
      VOLT_RETURN_IF_ERROR(d.check(
          d.cuMemcpyHtoDAsync(rs.inputs[i], inputs[i].data(), inputs[i].size_bytes(), rs.stream),
          label + ": uploading the step inputs"));

  auto buffer = [&](const plan::Operand *o) -> const plan::Buffer * {
    return o->kind() == OperandKind::Arena && o->index() < pr->buffers()->size()
               ? pr->buffers()->Get(o->index())
               : nullptr;
  };
  OperandAddress address = [&](const plan::Operand &o) -> Result<uint64_t> {
    switch (o.kind()) {
    case OperandKind::Arena:
      if (o.index() >= pr->buffers()->size())
        break;
      return rs.arena + pr->buffers()->Get(o.index())->offset();
    case OperandKind::Weight:
      if (o.index() >= pr->weights()->size())
        break;
      return rs.weights + pr->weights()->Get(o.index())->offset();
    case OperandKind::Input:
      if (o.index() >= rs.inputs.size())
        break;
      return rs.inputs[o.index()];
    case OperandKind::Output:
      return rs.logits;
    case OperandKind::KvCache:
      if (o.index() >= pr->kv_cache()->num_layers())
        break;
      return rs.kv + uint64_t{o.index()} * 2 * rs.kvLayerBytes;
    case OperandKind::Workspace:
      // The workspace follows the arena in the same allocation.
      if (o.index() >= pr->workspace_bytes())
        break;
      return rs.arena + pr->arena_bytes() + o.index();
    }
    return Error("operand " + std::to_string(static_cast<int>(o.kind())) + ":" +
                 std::to_string(o.index()) + " is outside the plan");
  };
  // Rows of an activation: T per token, S per sequence (as the cpu backend).
  auto rows = [&](const plan::Operand *o) -> uint64_t {
    if (o->kind() == OperandKind::Output)
      return S;
    const plan::Buffer *b = buffer(o);
    return b && b->per_token_bytes() == 0 ? S : T;
  };
  auto dtype = [&](const plan::Operand *o) {
    const plan::Buffer *b = buffer(o);
    return o->kind() == OperandKind::Output ? plan::DType::F32 : b ? b->dtype() : plan::DType::F16;
  };

  for (const plan::Op *op : *pr->ops()) {
    const std::string opName = op->name() ? op->name()->str() : "?";
    const plan::Operand *first = op->operands()->Get(0);
    if (op->kind() == OpKind::AllReduce) {
      VOLT_ASSIGN_OR_RETURN(uint64_t p, address(*first));
      const uint64_t count = rows(first) * op->params()->dim();
      const int type = dtype(first) == plan::DType::F32 ? kNcclFloat32 : kNcclFloat16;
      VOLT_RETURN_IF_ERROR(
          shared_->nccl->check(shared_->nccl->ncclAllReduce(reinterpret_cast<const void *>(p),
                                                            reinterpret_cast<void *>(p), count,
                                                            type, kNcclSum, rs.comm, rs.stream),
                               label + ": " + opName + " (all-reduce)"));
      continue;
    }
    if (op->kind() == OpKind::AllGather) {
      // NCCL concatenates the ranks' slices one after the other; the plan's
      // layout puts them side by side in each row: gather to the staging
      // buffer, then one strided copy per rank.
      const plan::Operand *out = op->operands()->Get(1);
      VOLT_ASSIGN_OR_RETURN(uint64_t in, address(*first));
      VOLT_ASSIGN_OR_RETURN(uint64_t dst, address(*out));
      const uint64_t n = rows(first), cols = op->params()->dim();
      const uint64_t elem = dtypeBytes(dtype(first)), ranks = ranks_.size();
      const int type = elem == 4 ? kNcclFloat32 : kNcclFloat16;
      VOLT_RETURN_IF_ERROR(
          shared_->nccl->check(shared_->nccl->ncclAllGather(reinterpret_cast<const void *>(in),
                                                            reinterpret_cast<void *>(rs.gather),
                                                            n * cols, type, rs.comm, rs.stream),
                               label + ": " + opName + " (all-gather)"));
      for (uint64_t r = 0; r < ranks; ++r) {
        CudaMemcpy2D copy;
        copy.srcMemoryType = kMemoryTypeDevice;
        copy.srcDevice = rs.gather + r * n * cols * elem;
        copy.srcPitch = cols * elem;
        copy.dstMemoryType = kMemoryTypeDevice;
        copy.dstDevice = dst + r * cols * elem;
        copy.dstPitch = ranks * cols * elem;
        copy.widthInBytes = cols * elem;
        copy.height = n;
        VOLT_RETURN_IF_ERROR(
            d.check(d.cuMemcpy2DAsync(&copy, rs.stream), label + ": " + opName + " (columns)"));
      }
      continue;
    }
    const plan::Launch *launch = selectLaunch(*op, T);
    if (!launch)
      return Error("op '" + opName + "' has no kernel for a step of " + std::to_string(T) +
                   " tokens (the plan has no GPU launches: was it compiled for a GPU?)");
    VOLT_ASSIGN_OR_RETURN(std::vector<uint8_t> params, packArguments(*launch, address, T, S));
    size_t size = params.size();
    void *extra[] = {kLaunchParamBufferPointer, params.data(), kLaunchParamBufferSize, &size,
                     kLaunchParamEnd};
    const uint64_t gx = gridExtent(launch->grid_x(), T, S), gy = gridExtent(launch->grid_y(), T, S),
                   gz = gridExtent(launch->grid_z(), T, S);
    if (gx == 0 || gy == 0 || gz == 0)
      continue;
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuLaunchKernel(rs.functions[launch->kernel()], static_cast<unsigned>(gx),
                                 static_cast<unsigned>(gy), static_cast<unsigned>(gz),
                                 launch->block_x(), launch->block_y(), launch->block_z(),
                                 launch->shared_bytes(), rs.stream, nullptr, extra),
                label + ": launching " + opName));
  }
  if (rs.index == 0)
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuMemcpyDtoHAsync(logits.data(), rs.logits, logits.size_bytes(), rs.stream),
                label + ": reading the logits"));
  return d.check(d.cuStreamSynchronize(rs.stream), label + ": running the step");
}

} // namespace volt::cuda
