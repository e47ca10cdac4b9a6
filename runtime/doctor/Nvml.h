//===- Nvml.h - NVIDIA's management library, loaded at run time -*- C++ -*-===//
//
// volt-doctor reads each GPU's health (ECC, retired pages, PCIe link,
// persistence, clock throttling) and each pair's topology and P2P through
// NVML, which the NVIDIA driver installs as libnvidia-ml.so.1. As with the
// CUDA driver (runtime/cuda/CudaDriver.h), nothing links it: it is opened
// with dlopen, a missing library or entry point is an error naming it, and
// the types below are NVML's ABI so that no NVIDIA header is needed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace volt::doctor {

using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque *;

/// nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3).
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

/// nvmlMemory_t (v1): bytes.
struct NvmlMemory {
  unsigned long long total, free, used;
};

/// NVML constants volt-doctor uses (values of nvml.h's enums and defines).
namespace nvml {
inline constexpr NvmlReturn kSuccess = 0;
inline constexpr NvmlReturn kErrorNotSupported = 3;
inline constexpr int kMemoryErrorUncorrected = 1;
inline constexpr int kMemoryErrorCorrected = 0;
inline constexpr int kVolatileEcc = 0;  ///< since the driver loaded
inline constexpr int kAggregateEcc = 1; ///< over the card's life
inline constexpr int kFeatureEnabled = 1;
/// nvmlGpuTopologyLevel_t.
inline constexpr int kTopologyInternal = 0, kTopologySingle = 10, kTopologyMultiple = 20,
                     kTopologyHostBridge = 30, kTopologyNode = 40, kTopologySystem = 50;
inline constexpr int kP2pCapsRead = 0;
inline constexpr int kP2pStatusOk = 0;
/// nvmlClocksThrottleReason* bits.
inline constexpr unsigned long long kThrottleGpuIdle = 0x1, kThrottleApplicationsClocks = 0x2,
                                    kThrottleSwPowerCap = 0x4, kThrottleHwSlowdown = 0x8,
                                    kThrottleSyncBoost = 0x10, kThrottleSwThermal = 0x20,
                                    kThrottleHwThermal = 0x40, kThrottleHwPowerBrake = 0x80;
} // namespace nvml

/// The loaded library: one function pointer per line of NvmlSymbols.def.
class Nvml {
public:
  static std::vector<std::string> defaultLibraries() {
    return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  }

  /// Opens the first library that loads and calls nvmlInit_v2. The error
  /// names every library tried, or the missing entry point, or the
  /// initialisation's failure (no driver loaded, no permission).
  static Result<std::shared_ptr<Nvml>> load(std::vector<std::string> libraries = {});

  /// "Not Supported" and the like, from nvmlErrorString.
  std::string describe(NvmlReturn code) const;
  const std::string &library() const { return library_; }

#define VOLT_NVML_SYMBOL(member, exported, ret, params) ret(*member) params = nullptr;
#include "runtime/doctor/NvmlSymbols.def"
#undef VOLT_NVML_SYMBOL

  ~Nvml();
  Nvml(const Nvml &) = delete;
  Nvml &operator=(const Nvml &) = delete;

private:
  Nvml() = default;
  std::string library_;
  void *handle_ = nullptr;
  bool initialised_ = false;
};

} // namespace volt::doctor
