//===- GpuHarness.cpp -----------------------------------------------------===//
#include "tests/gpu/GpuHarness.h"

#include "runtime/cuda/LaunchArgs.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace volt::gpu {

using namespace cuda;

codegen::CodegenOptions cacheOptions() {
  codegen::CodegenOptions options;
  options.jobs = std::max(1u, std::thread::hardware_concurrency());
  if (const char *dir = std::getenv(kKernelsEnv); dir && *dir) {
    options.cacheDir = dir;
    std::ifstream version(std::string(dir) + "/nvrtc-version");
    std::string v;
    if (version >> v)
      options.offlineNvrtcVersion = v;
  }
  return options;
}

Result<codegen::KernelSet> buildKernels(const KernelRegistry &registry) {
  return codegen::buildKernels(registry.requests(), codegen::TargetInfo{}, cacheOptions());
}

Result<std::unique_ptr<Gpu>> Gpu::open() {
  std::unique_ptr<Gpu> gpu(new Gpu());
  VOLT_ASSIGN_OR_RETURN(gpu->driver_, CudaDriver::load());
  CudaDriver &d = *gpu->driver_;
  int count = 0;
  VOLT_RETURN_IF_ERROR(d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return Error("the CUDA driver sees no GPU");
  VOLT_RETURN_IF_ERROR(d.check(d.cuDeviceGet(&gpu->device_, 0), "cuDeviceGet"));
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof(name), gpu->device_);
  gpu->name_ = name;
  int major = 0, minor = 0;
  d.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, gpu->device_);
  d.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, gpu->device_);
  gpu->cc_ = major * 10 + minor;
  VOLT_RETURN_IF_ERROR(
      d.check(d.cuDevicePrimaryCtxRetain(&gpu->context_, gpu->device_), "context"));
  VOLT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(gpu->context_), "context"));
  VOLT_RETURN_IF_ERROR(d.check(d.cuStreamCreate(&gpu->stream_, kStreamNonBlocking), "stream"));
  return gpu;
}

Gpu::~Gpu() {
  if (!driver_ || !context_)
    return;
  CudaDriver &d = *driver_;
  d.cuCtxSetCurrent(context_);
  for (CUmodule m : modules_)
    d.cuModuleUnload(m);
  for (CUdeviceptr p : allocations_)
    d.cuMemFree(p);
  if (stream_)
    d.cuStreamDestroy(stream_);
  d.cuDevicePrimaryCtxRelease(device_);
}

Status Gpu::load(const codegen::KernelSet &set) {
  CudaDriver &d = *driver_;
  for (const codegen::CompiledKernel &k : set.kernels) {
    CUmodule module = nullptr;
    if (cc_ == 70) {
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuModuleLoadData(&module, k.cubin.data()), "loading " + k.request.key()));
    } else {
      VOLT_ASSIGN_OR_RETURN(module,
                            d.loadPtx(k.ptx, "JIT-compiling the PTX of " + k.request.key()));
    }
    modules_.push_back(module);
    CUfunction f = nullptr;
    VOLT_RETURN_IF_ERROR(d.check(d.cuModuleGetFunction(&f, module, k.request.kernel.c_str()),
                                 "entry point of " + k.request.key()));
    if (k.request.dynamicSharedBytes > (48u << 10))
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuFuncSetAttribute(f, kFuncAttrMaxDynamicSharedSizeBytes,
                                       static_cast<int>(k.request.dynamicSharedBytes)),
                  "shared memory of " + k.request.key()));
    functions_.push_back(f);
  }
  return Status::success();
}

Result<DeviceBuffer> Gpu::allocate(size_t bytes) {
  DeviceBuffer b;
  b.bytes = bytes;
  VOLT_RETURN_IF_ERROR(driver_->check(driver_->cuMemAlloc(&b.ptr, std::max<size_t>(bytes, 256)),
                                      "allocating " + std::to_string(bytes) + " bytes"));
  allocations_.push_back(b.ptr);
  return b;
}

Status Gpu::upload(const DeviceBuffer &b, const void *data, size_t bytes) {
  VOLT_RETURN_IF_ERROR(driver_->check(driver_->cuMemcpyHtoD(b.ptr, data, bytes), "upload"));
  // From pageable memory the copy may return before its DMA lands; the
  // kernels' non-blocking stream would not wait for it.
  return driver_->check(driver_->cuCtxSynchronize(), "upload");
}

Status Gpu::release(const DeviceBuffer &b) {
  VOLT_RETURN_IF_ERROR(synchronize());
  auto it = std::find(allocations_.begin(), allocations_.end(), b.ptr);
  if (it == allocations_.end())
    return Error("releasing a buffer this GPU did not allocate");
  allocations_.erase(it);
  return driver_->check(driver_->cuMemFree(b.ptr), "freeing a buffer");
}

Status Gpu::download(void *data, const DeviceBuffer &b, size_t bytes) {
  VOLT_RETURN_IF_ERROR(synchronize());
  return driver_->check(driver_->cuMemcpyDtoH(data, b.ptr, bytes), "download");
}

Status Gpu::fill(const DeviceBuffer &b, uint8_t value) {
  return driver_->check(driver_->cuMemsetD8Async(b.ptr, value, b.bytes, stream_), "fill");
}

Status Gpu::synchronize() {
  return driver_->check(driver_->cuStreamSynchronize(stream_), "running the kernels");
}

Status Gpu::run(const PlannedLaunch &l,
                const std::map<std::pair<int, uint32_t>, CUdeviceptr> &bindings, int tokens,
                int seqs) {
  VOLT_ASSIGN_OR_RETURN(PreparedLaunch prepared, prepare(l, bindings, tokens, seqs));
  return launch(prepared);
}

Status Gpu::launch(const PreparedLaunch &p) {
  if (p.grid[0] == 0 || p.grid[1] == 0 || p.grid[2] == 0)
    return Status::success();
  size_t size = p.params.size();
  void *extra[] = {kLaunchParamBufferPointer, const_cast<uint8_t *>(p.params.data()),
                   kLaunchParamBufferSize, &size, kLaunchParamEnd};
  return driver_->check(driver_->cuLaunchKernel(p.function, p.grid[0], p.grid[1], p.grid[2],
                                                p.block[0], p.block[1], p.block[2], p.sharedBytes,
                                                stream_, nullptr, extra),
                        "cuLaunchKernel");
}

Result<PreparedLaunch> Gpu::prepare(const PlannedLaunch &l,
                                    const std::map<std::pair<int, uint32_t>, CUdeviceptr> &bindings,
                                    int tokens, int seqs) {
  // The plan's own Launch table, packed by the cuda backend's code.
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<plan::Arg>> args;
  for (const codegen::LaunchArg &a : l.args) {
    plan::Operand operand(static_cast<plan::OperandKind>(a.operandKind), a.operandIndex);
    args.push_back(plan::CreateArg(b, static_cast<plan::ArgKind>(a.kind),
                                   a.kind == codegen::LaunchArg::Kind::Pointer ? &operand : nullptr,
                                   a.offset, a.i32, a.f32));
  }
  auto argsVector = b.CreateVector(args);
  auto grid = [](const codegen::GridRule &g) {
    return plan::GridDim(g.perToken, g.perSeq, g.fixed, g.divisor, g.perRow);
  };
  plan::GridDim gx = grid(l.grid[0]), gy = grid(l.grid[1]), gz = grid(l.grid[2]);
  b.Finish(plan::CreateLaunch(b, l.maxTokens, static_cast<uint32_t>(l.kernel), &gx, &gy, &gz,
                              l.block[0], l.block[1], l.block[2], l.sharedBytes, argsVector));
  const plan::Launch *launch = flatbuffers::GetRoot<plan::Launch>(b.GetBufferPointer());
  OperandAddress address = [&](const plan::Operand &o) -> Result<uint64_t> {
    auto it = bindings.find({static_cast<int>(o.kind()), o.index()});
    if (it == bindings.end())
      return Error("operand " + std::to_string(static_cast<int>(o.kind())) + ":" +
                   std::to_string(o.index()) + " is not bound");
    return it->second;
  };
  PreparedLaunch p;
  // One logits row per sequence (R = S).
  VOLT_ASSIGN_OR_RETURN(p.params, packArguments(*launch, address, tokens, seqs, seqs));
  p.grid = {static_cast<unsigned>(gridExtent(launch->grid_x(), tokens, seqs, seqs)),
            static_cast<unsigned>(gridExtent(launch->grid_y(), tokens, seqs, seqs)),
            static_cast<unsigned>(gridExtent(launch->grid_z(), tokens, seqs, seqs))};
  p.block = {l.block[0], l.block[1], l.block[2]};
  p.sharedBytes = l.sharedBytes;
  if (l.kernel >= functions_.size())
    return Error("kernel " + std::to_string(l.kernel) + " is not loaded");
  p.function = functions_[l.kernel];
  return p;
}

Result<float> Gpu::time(const std::function<Status()> &work, int repeats) {
  CudaDriver &d = *driver_;
  CUevent start = nullptr, stop = nullptr;
  struct Events {
    CudaDriver &d;
    CUevent &start, &stop;
    ~Events() {
      if (start)
        d.cuEventDestroy(start);
      if (stop)
        d.cuEventDestroy(stop);
    }
  } events{d, start, stop};
  VOLT_RETURN_IF_ERROR(d.check(d.cuEventCreate(&start, kEventDefault), "event"));
  VOLT_RETURN_IF_ERROR(d.check(d.cuEventCreate(&stop, kEventDefault), "event"));
  VOLT_RETURN_IF_ERROR(work()); // warm-up (and PTX JIT)
  VOLT_RETURN_IF_ERROR(d.check(d.cuEventRecord(start, stream_), "event"));
  for (int i = 0; i < repeats; ++i)
    VOLT_RETURN_IF_ERROR(work());
  VOLT_RETURN_IF_ERROR(d.check(d.cuEventRecord(stop, stream_), "event"));
  VOLT_RETURN_IF_ERROR(d.check(d.cuEventSynchronize(stop), "event"));
  float ms = 0;
  VOLT_RETURN_IF_ERROR(d.check(d.cuEventElapsedTime(&ms, start, stop), "event"));
  return ms / static_cast<float>(repeats);
}

} // namespace volt::gpu
