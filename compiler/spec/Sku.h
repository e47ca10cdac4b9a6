//===- Sku.h - hardware SKU descriptions -----------------------*- C++ -*-===//
//
// A SKU is one kind of accelerator (or the cpu reference backend) as the
// compiler plans for it: compute capability, memory size and bandwidth,
// per-SM limits the kernels must respect, what dtypes the hardware computes
// in, how GPUs talk to each other, and how much memory is not ours to plan
// (CUDA context, NCCL buffers). Each SKU is a YAML file under specs/; those
// files are built into the binary, so built-in names work from any folder.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volt::spec {

/// The instruction set the compiler generates code for.
enum class Arch { Sm70, Sm75, Sm80, Sm90, Cpu };

/// "sm_70", ..., "cpu": the spelling used in SKU files.
std::string_view archName(Arch arch);

/// How tensor-parallel ranks exchange data.
enum class InterconnectKind {
  Host,   ///< ranks are threads of one process (the cpu backend)
  Pcie,   ///< GPUs talk over PCIe
  Nvlink, ///< GPUs talk over NVLink
};

std::string_view interconnectKindName(InterconnectKind kind);

/// One measured all-reduce: message size and time.
struct AllReduceLatencyPoint {
  uint64_t bytes = 0;
  double us = 0;
};

struct Interconnect {
  InterconnectKind kind = InterconnectKind::Pcie;
  /// The host link of each GPU (NVLink boards also have one); 0 for cpu.
  int pcieGen = 0;
  int pcieWidth = 0;
  /// GPU-to-GPU bandwidth as the vendor quotes it (both directions summed).
  double bandwidthGbps = 0;
  /// Measured one-direction GPU-to-GPU copy bandwidth, where known.
  std::optional<double> practicalBandwidthGbps;
  /// Measured NCCL all-reduce latency by message size, ascending; may be
  /// empty when no measurement is known.
  std::vector<AllReduceLatencyPoint> allReduceLatencyUs;
};

/// Which narrow dtypes the hardware computes in natively. FP16 always.
struct DtypeSupport {
  bool bf16 = false;
  bool fp8 = false;
  bool fp4 = false;
};

/// Device memory taken before any plan buffer is placed.
struct MemoryReserve {
  /// Per GPU, the CUDA context with our kernels loaded.
  uint64_t cudaContextBytes = 0;
  /// Per GPU, NCCL's buffers for one communicator (only when
  /// tensor_parallel_size > 1).
  uint64_t ncclBytes = 0;
};

/// A hardware SKU. Field names follow the YAML keys (lowerCamel here).
struct Sku {
  std::string name;
  std::string description;
  /// Where each number comes from, keyed by field ("sm_count",
  /// "interconnect.bandwidth_gbps").
  std::map<std::string, std::string> sources;
  Arch arch = Arch::Sm70;
  /// True when the numbers are placeholders (the cpu backend), not hardware
  /// facts: speed predictions from them mean nothing.
  bool nominal = false;
  int smCount = 0;
  /// Device memory per GPU (the cpu backend: the budget per rank).
  uint64_t memoryBytes = 0;
  double memoryBandwidthSpecGbps = 0;
  /// Measured copy bandwidth; what bandwidth-bound kernels can reach.
  double memoryBandwidthPracticalGbps = 0;
  /// Dense FP16 tensor-core peak, FP32 accumulate where the vendor says.
  double fp16TensorTflops = 0;
  uint64_t sharedMemoryPerSmBytes = 0;
  uint64_t sharedMemoryPerBlockBytes = 0;
  uint64_t sharedMemoryPerBlockOptinBytes = 0;
  uint64_t l2CacheBytes = 0;
  int registersPerSm = 0;
  int maxRegistersPerThread = 0;
  int maxThreadsPerSm = 0;
  DtypeSupport dtypes;
  Interconnect interconnect;
  MemoryReserve memoryReserve;

  /// 70 for sm_70, ...; 0 for the cpu backend.
  int computeCapability() const;
  bool isCpu() const { return arch == Arch::Cpu; }
};

/// The names of the SKUs built into the binary, sorted.
std::vector<std::string> builtinSkuNames();

/// True when `target` names a file rather than a built-in SKU: it contains
/// a '/' or ends in ".yaml".
bool isSkuPath(std::string_view target);

/// Loads a built-in SKU by name, or a SKU file when `nameOrPath` is a path
/// (relative paths are taken from `baseDir`).
Result<Sku> loadSku(std::string_view nameOrPath, const std::filesystem::path &baseDir);

/// Parses the text of a SKU file; `fileName` is what messages call it.
Result<Sku> parseSku(std::string_view text, std::string_view fileName);

/// The text of a built-in SKU file, if `name` is one.
std::optional<std::string_view> builtinSkuText(std::string_view name);

/// The Markdown table of every SKU file key (docs/skus.md holds it).
std::string skuReference();

/// The Markdown table of the built-in SKUs' main numbers (docs/skus.md).
std::string builtinSkuTable();

} // namespace volt::spec
