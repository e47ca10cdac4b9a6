//===- GpuHarness.h - running planned kernels on a real GPU -----*- C++ -*-===//
//
// The GPU tests and benchmarks plan each op as voltc does (compiler/codegen,
// the variants a V100 gets), take the kernels from the kernel cache, load
// them with the driver (the cubin on sm_70, the PTX elsewhere: on an H100 or
// H200 the driver compiles the very code meant for the V100), bind the op's
// operands to device buffers and launch with the argument packing of the
// cuda backend (runtime/cuda/LaunchArgs.h).
//
// Kernels are built where NVRTC 11.8 is installed (`--prepare DIR` fills a
// kernel cache and writes DIR/nvrtc-version) and carried with the binaries;
// on the GPU machine VOLT_GPU_KERNELS=DIR makes the harness read them from
// that cache without loading NVRTC (CodegenOptions::offlineNvrtcVersion).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/BuildKernels.h"
#include "compiler/codegen/Launches.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/support/Status.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace volt::gpu {

using codegen::KernelRegistry;
using codegen::OperandInfo;
using codegen::PlannedLaunch;

/// The environment variable naming the carried kernel cache.
inline constexpr const char *kKernelsEnv = "VOLT_GPU_KERNELS";

/// Builds (or, offline, reads) every kernel of `registry` for sm_70.
Result<codegen::KernelSet> buildKernels(const KernelRegistry &registry);

/// Kernel-cache options: the carried cache when VOLT_GPU_KERNELS is set.
codegen::CodegenOptions cacheOptions();

/// A device buffer freed with the harness.
struct DeviceBuffer {
  cuda::CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

/// A launch with its arguments packed (Gpu::prepare).
struct PreparedLaunch {
  cuda::CUfunction function = nullptr;
  std::array<unsigned, 3> grid{}, block{};
  unsigned sharedBytes = 0;
  std::vector<uint8_t> params;
};

/// One GPU, its context and stream, and the kernels loaded on it.
class Gpu {
public:
  /// The first GPU, or an error saying why there is none (the tests skip
  /// with it).
  static Result<std::unique_ptr<Gpu>> open();
  ~Gpu();

  const std::string &name() const { return name_; }
  int computeCapability() const { return cc_; }
  cuda::CudaDriver &driver() { return *driver_; }
  cuda::CUstream stream() const { return stream_; }

  /// Loads the kernels of `set` (cubins on sm_70, PTX elsewhere).
  Status load(const codegen::KernelSet &set);

  Result<DeviceBuffer> allocate(size_t bytes);
  Status upload(const DeviceBuffer &b, const void *data, size_t bytes);
  Status download(void *data, const DeviceBuffer &b, size_t bytes);
  Status fill(const DeviceBuffer &b, uint8_t value);

  /// Frees `b` (after the stream's work), so that a benchmark's cases do
  /// not add up on a small GPU.
  Status release(const DeviceBuffer &b);

  /// Launches `launch` (its kernel index refers to the loaded set) with the
  /// operands bound in `bindings`, at T tokens and S sequences.
  Status run(const PlannedLaunch &launch,
             const std::map<std::pair<int, uint32_t>, cuda::CUdeviceptr> &bindings, int tokens,
             int seqs);
  /// run() in two halves: the arguments packed once (as the plan's Launch,
  /// by the cuda backend's code), then launches that cost only the driver
  /// call, so that a benchmark times the kernel and not the packing.
  Result<PreparedLaunch>
  prepare(const PlannedLaunch &launch,
          const std::map<std::pair<int, uint32_t>, cuda::CUdeviceptr> &bindings, int tokens,
          int seqs);
  Status launch(const PreparedLaunch &prepared);
  Status synchronize();
  /// Milliseconds between two points recorded on the stream.
  Result<float> time(const std::function<Status()> &work, int repeats);

private:
  Gpu() = default;
  std::shared_ptr<cuda::CudaDriver> driver_;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;
  std::string name_;
  int cc_ = 0;
  std::vector<cuda::CUmodule> modules_;
  std::vector<cuda::CUfunction> functions_;
  std::vector<cuda::CUdeviceptr> allocations_;
};

/// Binds operands to device pointers for Gpu::run.
class Bindings {
public:
  void bind(const OperandInfo &o, const DeviceBuffer &b) {
    map_[{static_cast<int>(o.kind), o.index}] = b.ptr;
  }
  const std::map<std::pair<int, uint32_t>, cuda::CUdeviceptr> &map() const { return map_; }

private:
  std::map<std::pair<int, uint32_t>, cuda::CUdeviceptr> map_;
};

} // namespace volt::gpu
