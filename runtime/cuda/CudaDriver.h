//===- CudaDriver.h - the CUDA driver API, loaded at run time --*- C++ -*-===//
//
// The runtime links no CUDA library: every binary builds and runs its cpu
// paths on machines without a GPU. The driver (libcuda.so.1, installed with
// the NVIDIA driver) is opened with dlopen when a GPU path is asked for,
// and a missing library or entry point is an error that names it. The
// types below are the driver's ABI (opaque handles, 64-bit device
// pointers), declared here so that no CUDA header is needed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace volt::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctxOpaque *;
using CUmodule = struct CUmodOpaque *;
using CUfunction = struct CUfuncOpaque *;
using CUstream = struct CUstreamOpaque *;
using CUevent = struct CUeventOpaque *;
using CUgraph = struct CUgraphOpaque *;
using CUgraphExec = struct CUgraphExecOpaque *;

/// CUDA_MEMCPY2D (cuda.h), for strided copies.
struct CudaMemcpy2D {
  size_t srcXInBytes = 0, srcY = 0;
  int srcMemoryType = 0;
  const void *srcHost = nullptr;
  CUdeviceptr srcDevice = 0;
  void *srcArray = nullptr;
  size_t srcPitch = 0;
  size_t dstXInBytes = 0, dstY = 0;
  int dstMemoryType = 0;
  void *dstHost = nullptr;
  CUdeviceptr dstDevice = 0;
  void *dstArray = nullptr;
  size_t dstPitch = 0;
  size_t widthInBytes = 0, height = 0;
};

/// Driver constants volt uses (values of cuda.h's enums).
inline constexpr int kMemoryTypeDevice = 2;
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr int kAttrMaxSharedMemoryPerBlockOptin = 97;
inline constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
inline constexpr unsigned kStreamNonBlocking = 1;
inline constexpr unsigned kEventDefault = 0;
inline constexpr unsigned kEventDisableTiming = 2;
/// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: a capture in one rank's thread
/// does not forbid driver calls in the others.
inline constexpr int kStreamCaptureModeThreadLocal = 1;
/// CU_JIT_ERROR_LOG_BUFFER and its size in bytes (CUjit_option).
inline constexpr int kJitErrorLogBuffer = 5;
inline constexpr int kJitErrorLogBufferSizeBytes = 6;
/// CUDA_ERROR_NOT_READY (cuEventQuery: not yet reached).
inline constexpr CUresult kErrorNotReady = 600;
/// cuLaunchKernel's `extra` markers: a packed parameter buffer and its size.
inline void *const kLaunchParamBufferPointer = reinterpret_cast<void *>(1);
inline void *const kLaunchParamBufferSize = reinterpret_cast<void *>(2);
inline void *const kLaunchParamEnd = nullptr;

/// The loaded driver: one function pointer per line of CudaSymbols.def.
class CudaDriver {
public:
  /// The libraries tried, in order.
  static std::vector<std::string> defaultLibraries() { return {"libcuda.so.1", "libcuda.so"}; }

  /// Opens the first library that loads and calls cuInit(0). The error
  /// names every library tried, or the missing entry point, or cuInit's
  /// failure (no device, driver/kernel module mismatch).
  static Result<std::shared_ptr<CudaDriver>> load(std::vector<std::string> libraries = {});

  /// A table with no entry point filled in, for the caller to fill: a fake
  /// driver in tests, or a tracing layer over a loaded one. `library` and
  /// `version` are what library() and version() report.
  static std::shared_ptr<CudaDriver> custom(std::string library, int version);

  /// "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
  std::string describe(CUresult code) const;
  /// success(), or an error "<what>: <describe(code)>".
  Status check(CUresult code, const std::string &what) const;

  /// Loads a module from PTX text, which the driver compiles for the
  /// current context's GPU; a failure carries the JIT's own error log
  /// (which instruction or feature it refused), not only the error code.
  Result<CUmodule> loadPtx(const std::string &ptx, const std::string &what) const;

  const std::string &library() const { return library_; }
  /// 12040 for CUDA 12.4.
  int version() const { return version_; }

#define VOLT_CUDA_SYMBOL(member, exported, ret, params) ret(*member) params = nullptr;
#include "runtime/cuda/CudaSymbols.def"
#undef VOLT_CUDA_SYMBOL

private:
  CudaDriver() = default;
  std::string library_;
  int version_ = 0;
};

} // namespace volt::cuda
