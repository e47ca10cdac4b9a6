//===- BuildKernels.h - kernel requests to checked machine code -*- C++ -*-===//
//
// The codegen phase's entry point: each distinct kernel request is
// instantiated, compiled by NVRTC to a cubin for the target SKU and to PTX
// (or taken from the on-disk cache), and its resource usage, read from the
// cubin, is checked against the SKU: a kernel that spills to local memory,
// or that cannot launch with its block size and shared memory, fails the
// build with its name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/codegen/Cubin.h"
#include "compiler/codegen/KernelSource.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace volt::codegen {

/// The SKU facts codegen needs (from specs/<sku>.yaml).
struct TargetInfo {
  /// 70 for sm_70.
  int smVersion = 70;
  int smCount = 80;
  uint32_t registersPerSm = 65536;
  uint32_t maxRegistersPerThread = 255;
  uint32_t maxThreadsPerSm = 2048;
  uint32_t sharedMemoryPerSmBytes = 98304;
  uint32_t sharedMemoryPerBlockBytes = 49152;
  uint32_t sharedMemoryPerBlockOptinBytes = 98304;
  double memoryBandwidthGbps = 790;
  double fp16TensorTflops = 125;

  /// "sm_70".
  std::string arch() const { return "sm_" + std::to_string(smVersion); }
};

struct CodegenOptions {
  /// Cache folder; empty: KernelCache::defaultDir().
  std::filesystem::path cacheDir;
  bool useCache = true;
  /// NVRTC libraries to try (empty: Nvrtc::load's defaults).
  std::vector<std::string> nvrtcLibraries;
  /// Also produce PTX, for compute_<ptxArch> (0: the target's own).
  bool emitPtx = true;
  int ptxArch = 0;
  /// Compiles run on this many threads.
  int jobs = 1;
  /// When set, NVRTC is not loaded: cache keys use this NVRTC version
  /// ("11.8") and every kernel must already be in the cache. For machines
  /// that run kernels built elsewhere (the GPU tests on a lent machine).
  std::string offlineNvrtcVersion;
  /// Progress messages.
  std::function<void(const std::string &)> log;
};

struct CompiledKernel {
  KernelRequest request;
  std::vector<uint8_t> cubin;
  std::string ptx;
  CubinKernel resources;
  bool fromCache = false;
};

/// Blocks of one kernel an SM holds at once, and what limits it.
struct Occupancy {
  uint32_t blocksPerSm = 0;
  /// Resident warps / the SM's maximum.
  double fraction = 0;
  /// "registers", "shared memory" or "threads".
  std::string limitedBy;
};

struct KernelSet {
  /// One per request, in request order.
  std::vector<CompiledKernel> kernels;
  /// The NVRTC that was loaded ("11.8"), and compile counts.
  std::string nvrtcVersion;
  size_t compiled = 0;
  size_t cached = 0;
  double nvrtcSeconds = 0;
};

/// Builds every request for `target`. Requests must be distinct (see
/// KernelRequest::key).
Result<KernelSet> buildKernels(const std::vector<KernelRequest> &requests, const TargetInfo &target,
                               const CodegenOptions &options);

/// The occupancy `kernel` allows on `target` with its launch shape.
Occupancy occupancy(const CompiledKernel &kernel, const TargetInfo &target);

/// Fails, naming the kernel, when it uses local memory (spills) or cannot
/// launch on `target` with its block size and shared memory.
Status checkResources(const CompiledKernel &kernel, const TargetInfo &target);

} // namespace volt::codegen
