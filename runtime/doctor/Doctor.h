//===- Doctor.h - is this box fit to serve, and to serve this plan? -*- C++ -*-===//
//
// `volt-doctor [PLAN]`: what an operator checks by hand before serving on
// V100s — uncorrected ECC errors and pending page retirements (a card that
// has them is unusable), a PCIe link trained below its width (a downgraded
// slot or riser), GPU pairs on different CPU sockets (every all-reduce
// crosses the inter-socket link) or without P2P, persistence mode, clock
// throttling, the driver version — read through NVML (runtime/doctor/Nvml.h),
// each finding with what to do. With a plan: whether this box can run it
// (enough GPUs, each the plan's architecture and memory size, free memory
// for the plan's need per rank, P2P between its ranks, NCCL present).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/doctor/Nvml.h"
#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace volt::doctor {

enum class Severity { Ok, Note, Warning, Error };
const char *severityName(Severity s);

struct Finding {
  Severity severity = Severity::Ok;
  /// "system", "GPU 0", "GPUs 0-1", "plan".
  std::string scope;
  /// A short stable name for scripts: "ecc-uncorrected", "pcie-width", ...
  std::string check;
  std::string what;
  /// What to do about it (empty for Ok).
  std::string action;
};

struct GpuFacts {
  unsigned index = 0;
  std::string name;
  std::string busId;
  uint64_t memoryTotal = 0;
  uint64_t memoryFree = 0;
  int ccMajor = 0, ccMinor = 0;
  unsigned pcieWidth = 0, pcieMaxWidth = 0, pcieGen = 0, pcieMaxGen = 0;
};

struct PlanFacts {
  std::filesystem::path path;
  std::string sku;
  std::string arch; ///< "sm_70" or "cpu"
  unsigned tensorParallelSize = 1;
  uint64_t skuMemoryBytes = 0;
  /// Device memory the plan needs on each rank (all parts).
  std::vector<uint64_t> rankBytes;
  /// The GPUs (NVML indices) the ranks were checked on.
  std::vector<unsigned> gpus;
  /// No error in the plan's findings or on the GPUs of its ranks.
  bool canRun = false;
};

struct DoctorOptions {
  /// A plan to check this box against (empty: the box alone).
  std::filesystem::path plan;
  /// NVML indices of the plan's ranks, in rank order (default 0, 1, ...).
  std::vector<unsigned> gpus;
  /// NCCL libraries to look for with a multi-GPU plan (empty: NCCL's defaults).
  std::vector<std::string> ncclLibraries;
};

struct DoctorReport {
  std::string nvmlLibrary;
  std::string driverVersion;
  int cudaDriverVersion = 0; ///< 12020 for CUDA 12.2
  std::vector<GpuFacts> gpus;
  std::optional<PlanFacts> plan;
  std::vector<Finding> findings;

  bool hasErrors() const;
  /// With a plan: 0 when it can run here (warnings allowed), 1 when not.
  /// Without: 0 when nothing is worse than a warning, 1 when a GPU has an
  /// error (unusable). volt-doctor exits 2 when it cannot examine the box
  /// at all (no NVML, an unreadable plan).
  int exitCode() const { return plan ? (plan->canRun ? 0 : 1) : (hasErrors() ? 1 : 0); }
};

/// Examines the box through `nvml` (and the plan, if options name one).
/// An error only when the plan cannot be read or NVML cannot enumerate the
/// GPUs; everything about the box itself is a finding.
Result<DoctorReport> examine(const Nvml &nvml, const DoctorOptions &options);

std::string formatReport(const DoctorReport &report);
nlohmann::json reportJson(const DoctorReport &report);

} // namespace volt::doctor
