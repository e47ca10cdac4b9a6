//===- Cubin.h - what a cubin says about its kernels -----------*- C++ -*-===//
//
// A cubin is an ELF64 file for the "NVIDIA CUDA" machine. voltc reads from
// it what decides whether and how well a kernel can run: the SM version it
// was built for, and per kernel its registers, static shared memory and
// local memory (where register spills land). The facts come from the
// section headers and the `.nv.info` attribute records NVRTC writes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace volt::codegen {

/// Resource usage of one kernel entry point.
struct CubinKernel {
  std::string name;
  /// Registers per thread.
  uint32_t registers = 0;
  /// Bytes of `__shared__` arrays (dynamic shared memory comes on top).
  uint32_t staticSharedBytes = 0;
  /// Local memory per thread: the stack frame, where spilled registers and
  /// local arrays live. 0 for a kernel that keeps everything in registers.
  uint32_t localBytes = 0;
  /// The thread count of `__launch_bounds__` (0 when none was given).
  uint32_t maxThreadsPerBlock = 0;
};

struct CubinInfo {
  /// 70 for sm_70.
  int smVersion = 0;
  std::vector<CubinKernel> kernels;

  const CubinKernel *find(const std::string &name) const;
};

/// Reads `bytes` as a cubin; `name` prefixes errors. Every offset is checked
/// against the buffer, so a damaged file gives an error, never a crash.
Result<CubinInfo> readCubin(std::span<const uint8_t> bytes, const std::string &name);

} // namespace volt::codegen
