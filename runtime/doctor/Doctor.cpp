//===- Doctor.cpp ---------------------------------------------------------===//
#include "runtime/doctor/Doctor.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/support/Strings.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace volt::doctor {
namespace {

std::string gpuScope(unsigned i) { return "GPU " + std::to_string(i); }
std::string pairScope(unsigned a, unsigned b) {
  return "GPUs " + std::to_string(a) + "-" + std::to_string(b);
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

const char *topologyName(int level) {
  switch (level) {
  case nvml::kTopologyInternal: return "the same board";
  case nvml::kTopologySingle: return "one PCIe switch (PIX)";
  case nvml::kTopologyMultiple: return "several PCIe switches (PXB)";
  case nvml::kTopologyHostBridge: return "one PCIe host bridge (PHB)";
  case nvml::kTopologyNode: return "host bridges of one CPU socket (NODE)";
  case nvml::kTopologySystem: return "different CPU sockets (SYS)";
  default: return "an unknown path";
  }
}

class Examiner {
public:
  Examiner(const Nvml &nvml, DoctorReport &report) : nvml_(nvml), r_(report) {}

  void add(Severity s, std::string scope, std::string check, std::string what,
           std::string action = {}) {
    r_.findings.push_back({s, std::move(scope), std::move(check), std::move(what), std::move(action)});
  }

  /// An NVML query that the GPU may not support: a note, not a failure.
  bool query(NvmlReturn code, const std::string &scope, const std::string &what) {
    if (code == nvml::kSuccess)
      return true;
    add(code == nvml::kErrorNotSupported ? Severity::Note : Severity::Warning, scope,
        "nvml-query", what + ": " + nvml_.describe(code));
    return false;
  }

  void system() {
    char version[96] = {};
    if (query(nvml_.systemGetDriverVersion(version, sizeof version), "system", "driver version"))
      r_.driverVersion = version;
    int cuda = 0;
    if (query(nvml_.systemGetCudaDriverVersion(&cuda), "system", "CUDA driver version"))
      r_.cudaDriverVersion = cuda;
    add(Severity::Ok, "system", "driver",
        "NVIDIA driver " + (r_.driverVersion.empty() ? std::string("?") : r_.driverVersion) +
            ", CUDA " + std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10) +
            " (" + nvml_.library() + ")");
  }

  void gpu(unsigned i, NvmlDevice d) {
    GpuFacts g;
    g.index = i;
    const std::string scope = gpuScope(i);
    char name[96] = {};
    if (query(nvml_.deviceGetName(d, name, sizeof name), scope, "name"))
      g.name = name;
    NvmlPciInfo pci{};
    if (query(nvml_.deviceGetPciInfo(d, &pci), scope, "PCI bus id"))
      g.busId = pci.busId;
    NvmlMemory memory{};
    if (query(nvml_.deviceGetMemoryInfo(d, &memory), scope, "memory")) {
      g.memoryTotal = memory.total;
      g.memoryFree = memory.free;
    }
    query(nvml_.deviceGetCudaComputeCapability(d, &g.ccMajor, &g.ccMinor), scope,
          "compute capability");
    add(Severity::Ok, scope, "identity",
        g.name + " (sm_" + std::to_string(g.ccMajor) + std::to_string(g.ccMinor) + ", " +
            gib(g.memoryTotal) + ", " + gib(g.memoryFree) + " free) at " + g.busId);
    if (g.memoryTotal > 0 && g.memoryFree < g.memoryTotal * 9 / 10)
      add(Severity::Note, scope, "memory-in-use",
          gib(g.memoryTotal - g.memoryFree) + " in use by other processes",
          "nvidia-smi lists them; a plan needs its memory free when it starts");

    ecc(d, scope);
    int pending = 0;
    if (query(nvml_.deviceGetRetiredPagesPendingStatus(d, &pending), scope, "page retirement") &&
        pending == nvml::kFeatureEnabled)
      add(Severity::Error, scope, "retired-pages-pending",
          "memory pages are waiting to be retired after ECC errors",
          "reboot (or reset the GPU: nvidia-smi -r -i " + std::to_string(i) +
              ") before serving; until then those pages can still be handed out");

    if (query(nvml_.deviceGetCurrPcieLinkWidth(d, &g.pcieWidth), scope, "PCIe link width") &&
        query(nvml_.deviceGetMaxPcieLinkWidth(d, &g.pcieMaxWidth), scope, "PCIe max link width")) {
      if (g.pcieWidth < g.pcieMaxWidth)
        add(Severity::Warning, scope, "pcie-width",
            "PCIe link is x" + std::to_string(g.pcieWidth) + " of x" +
                std::to_string(g.pcieMaxWidth) +
                ": host transfers and PCIe all-reduces run at " +
                std::to_string(100 * g.pcieWidth / std::max(1u, g.pcieMaxWidth)) + " % speed",
            "move the card to a slot wired x" + std::to_string(g.pcieMaxWidth) +
                ", or reseat it and its riser (lspci -vv shows LnkSta against LnkCap)");
      else
        add(Severity::Ok, scope, "pcie-width", "PCIe link x" + std::to_string(g.pcieWidth));
    }
    if (query(nvml_.deviceGetCurrPcieLinkGeneration(d, &g.pcieGen), scope, "PCIe generation") &&
        query(nvml_.deviceGetMaxPcieLinkGeneration(d, &g.pcieMaxGen), scope,
              "PCIe max generation") &&
        g.pcieGen < g.pcieMaxGen)
      add(Severity::Note, scope, "pcie-generation",
          "PCIe link at gen " + std::to_string(g.pcieGen) + " of " + std::to_string(g.pcieMaxGen),
          "links drop their generation when idle; if it stays low under load, check the "
          "slot's BIOS setting");

    int persistence = 0;
    if (query(nvml_.deviceGetPersistenceMode(d, &persistence), scope, "persistence mode")) {
      if (persistence != nvml::kFeatureEnabled)
        add(Severity::Warning, scope, "persistence",
            "persistence mode is off: the driver lets go of the GPU between processes, so "
            "every start re-initialises it (seconds) and clocks and ECC state reset",
            "nvidia-smi -pm 1 (or run nvidia-persistenced)");
      else
        add(Severity::Ok, scope, "persistence", "persistence mode on");
    }

    unsigned long long reasons = 0;
    if (query(nvml_.deviceGetCurrentClocksThrottleReasons(d, &reasons), scope,
              "clock throttle reasons")) {
      std::vector<std::string> hw, sw;
      if (reasons & nvml::kThrottleHwSlowdown)
        hw.push_back("hardware slowdown");
      if (reasons & nvml::kThrottleHwThermal)
        hw.push_back("hardware thermal slowdown");
      if (reasons & nvml::kThrottleHwPowerBrake)
        hw.push_back("power brake");
      if (reasons & nvml::kThrottleSwThermal)
        sw.push_back("software thermal slowdown");
      if (!hw.empty() || !sw.empty()) {
        std::vector<std::string> all = hw;
        all.insert(all.end(), sw.begin(), sw.end());
        add(Severity::Warning, scope, "throttling", "clocks held down: " + joinList(all),
            hw.empty() ? "the GPU is hot: check airflow and fans (nvidia-smi -q -d "
                         "TEMPERATURE,PERFORMANCE)"
                       : "check cooling, the power cables and the power supply (nvidia-smi "
                         "-q -d PERFORMANCE shows which limit)");
      } else if (reasons & nvml::kThrottleSwPowerCap) {
        add(Severity::Note, scope, "throttling",
            "clocks at the power cap (normal under a heavy load)");
      } else {
        add(Severity::Ok, scope, "throttling", "no clock throttling");
      }
    }
    r_.gpus.push_back(g);
  }

  void ecc(NvmlDevice d, const std::string &scope) {
    int current = 0, pending = 0;
    NvmlReturn mode = nvml_.deviceGetEccMode(d, &current, &pending);
    if (mode == nvml::kErrorNotSupported) {
      add(Severity::Note, scope, "ecc", "ECC is not supported on this GPU");
      return;
    }
    if (!query(mode, scope, "ECC mode"))
      return;
    if (current != nvml::kFeatureEnabled) {
      add(Severity::Warning, scope, "ecc",
          "ECC is off: memory errors go undetected and show up as wrong outputs or NaN",
          "nvidia-smi -e 1 -i " + scope.substr(4) + ", then reboot");
      return;
    }
    if (pending != current)
      add(Severity::Note, scope, "ecc", "an ECC mode change waits for a reboot");
    unsigned long long sinceBoot = 0, lifetime = 0;
    const bool haveVolatile = query(nvml_.deviceGetTotalEccErrors(d, nvml::kMemoryErrorUncorrected,
                                                                  nvml::kVolatileEcc, &sinceBoot),
                                    scope, "uncorrected ECC errors since boot");
    const bool haveAggregate =
        query(nvml_.deviceGetTotalEccErrors(d, nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc,
                                            &lifetime),
              scope, "uncorrected ECC errors over the card's life");
    if (haveVolatile && sinceBoot > 0)
      add(Severity::Error, scope, "ecc-uncorrected",
          std::to_string(sinceBoot) +
              " uncorrected ECC errors since the driver loaded: this card's results cannot be "
              "trusted",
          "stop serving on it, reboot (the driver retires the failing pages); if errors come "
          "back, replace the card (nvidia-smi -q -d ECC,PAGE_RETIREMENT)");
    else if (haveAggregate && lifetime > 0)
      add(Severity::Warning, scope, "ecc-uncorrected",
          std::to_string(lifetime) + " uncorrected ECC errors over the card's life, none since boot",
          "watch the count (nvidia-smi -q -d ECC,PAGE_RETIREMENT); a growing one means the card "
          "is failing");
    else if (haveVolatile)
      add(Severity::Ok, scope, "ecc", "ECC on, no uncorrected errors");
  }

  void pair(unsigned a, unsigned b, NvmlDevice da, NvmlDevice db) {
    const std::string scope = pairScope(a, b);
    int level = 0;
    if (query(nvml_.deviceGetTopologyCommonAncestor(da, db, &level), scope, "topology")) {
      if (level >= nvml::kTopologySystem)
        add(Severity::Warning, scope, "cross-socket",
            std::string("joined through ") + topologyName(level) +
                ": every all-reduce between them crosses the inter-socket link (QPI/UPI)",
            "run a tensor-parallel plan on GPUs of one socket (nvidia-smi topo -m); "
            "volt-doctor --gpus picks which GPUs a plan's ranks are checked on");
      else
        add(level == nvml::kTopologyNode ? Severity::Note : Severity::Ok, scope, "topology",
            std::string("joined through ") + topologyName(level));
    }
    int status = 0;
    if (query(nvml_.deviceGetP2PStatus(da, db, nvml::kP2pCapsRead, &status), scope, "P2P")) {
      if (status != nvml::kP2pStatusOk)
        add(Severity::Warning, scope, "p2p",
            "no peer-to-peer reads between them: NCCL copies through host memory",
            "check the BIOS (ACS, IOMMU) and that both cards sit under one root complex");
      else
        add(Severity::Ok, scope, "p2p", "peer-to-peer reads");
    }
  }

private:
  const Nvml &nvml_;
  DoctorReport &r_;
};

bool anyLibraryLoads(const std::vector<std::string> &names, std::string &found) {
  for (const std::string &name : names)
    if (void *h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(h);
      found = name;
      return true;
    }
  return false;
}

Status checkPlan(const DoctorOptions &options, const std::vector<NvmlDevice> &devices,
                 DoctorReport &r, Examiner &ex) {
  plan::LoadOptions load;
  load.loadWeights = false;
  load.verifyChecksums = false;
  auto loaded = plan::LoadedPlan::load(options.plan, load);
  if (!loaded)
    return loaded.error();
  const plan::Plan &p = (*loaded)->plan();
  PlanFacts f;
  f.path = options.plan;
  f.sku = p.sku_name() ? p.sku_name()->str() : "?";
  f.arch = p.arch() ? p.arch()->str() : "?";
  f.tensorParallelSize = p.tensor_parallel_size();
  f.skuMemoryBytes = p.memory_budget() ? p.memory_budget()->device_bytes() : 0;
  for (const plan::Rank *rank : *p.ranks())
    f.rankBytes.push_back(rank->device_bytes());
  const std::string planName = options.plan.filename().string();
  if (f.arch == "cpu") {
    ex.add(Severity::Ok, "plan", "plan-backend",
           planName + " is a cpu plan: it needs no GPU");
    f.canRun = true;
    r.plan = f;
    return Status::success();
  }
  f.gpus = options.gpus;
  if (f.gpus.empty())
    for (unsigned i = 0; i < f.tensorParallelSize && i < devices.size(); ++i)
      f.gpus.push_back(i);
  for (unsigned g : f.gpus)
    if (g >= devices.size())
      return Error("--gpus: GPU " + std::to_string(g) + " does not exist (this box has " +
                   std::to_string(devices.size()) + ")");
  if (f.gpus.size() < f.tensorParallelSize) {
    ex.add(Severity::Error, "plan", "gpu-count",
           planName + " has " + std::to_string(f.tensorParallelSize) + " ranks and " +
               std::to_string(f.gpus.size()) + " GPU" + (f.gpus.size() == 1 ? "" : "s") +
               " are there to run them",
           "compile the spec with tensor_parallel_size: " + std::to_string(devices.size()) +
               " (or fewer) for this box");
  }
  const int planMajor = f.arch.size() == 5 ? f.arch[3] - '0' : 0;
  const int planMinor = f.arch.size() == 5 ? f.arch[4] - '0' : 0;
  for (size_t rank = 0; rank < f.gpus.size() && rank < f.tensorParallelSize; ++rank) {
    const GpuFacts &g = r.gpus[f.gpus[rank]];
    const std::string scope = gpuScope(g.index);
    const std::string who = "rank " + std::to_string(rank) + " on " + scope;
    if (g.ccMajor != planMajor || g.ccMinor != planMinor)
      ex.add(Severity::Error, "plan", "sku",
             planName + " is compiled for " + f.sku + " (" + f.arch + "); " + who + " is " +
                 g.name + " (sm_" + std::to_string(g.ccMajor) + std::to_string(g.ccMinor) + ")",
             "compile the spec with a target of this GPU (specs/, or a SKU file)");
    const double ratio = f.skuMemoryBytes ? static_cast<double>(g.memoryTotal) /
                                                static_cast<double>(f.skuMemoryBytes)
                                          : 1.0;
    if (ratio < 0.97)
      ex.add(Severity::Error, "plan", "sku",
             planName + " is planned for " + f.sku + "'s " + gib(f.skuMemoryBytes) + "; " + who +
                 " has " + gib(g.memoryTotal),
             "compile the spec for this GPU's SKU");
    else if (ratio > 1.03)
      ex.add(Severity::Note, "plan", "sku",
             who + " has " + gib(g.memoryTotal) + ", more than the " + gib(f.skuMemoryBytes) +
                 " the plan is sized for",
             "a plan compiled for this GPU's SKU would hold a larger KV cache");
    const uint64_t need = rank < f.rankBytes.size() ? f.rankBytes[rank] : 0;
    if (need > g.memoryFree)
      ex.add(Severity::Error, "plan", "free-memory",
             who + " has " + gib(g.memoryFree) + " free; the plan needs " + gib(need),
             g.memoryTotal - g.memoryFree > (1ull << 30)
                 ? "other processes hold " + gib(g.memoryTotal - g.memoryFree) +
                       " (nvidia-smi shows which); stop them or lower gpu_memory_utilization"
                 : "lower gpu_memory_utilization or max_model_len and compile again");
    else
      ex.add(Severity::Ok, "plan", "free-memory",
             who + ": needs " + gib(need) + " of " + gib(g.memoryFree) + " free");
  }
  if (f.tensorParallelSize > 1 && f.gpus.size() >= f.tensorParallelSize) {
    for (size_t a = 0; a < f.tensorParallelSize; ++a)
      for (size_t b = a + 1; b < f.tensorParallelSize; ++b)
        for (const Finding &x : r.findings)
          if (x.scope == pairScope(std::min(f.gpus[a], f.gpus[b]), std::max(f.gpus[a], f.gpus[b])) &&
              x.severity == Severity::Warning)
            ex.add(Severity::Warning, "plan", "rank-link",
                   "ranks " + std::to_string(a) + " and " + std::to_string(b) + ": " + x.what,
                   x.action);
    std::string found;
    if (!anyLibraryLoads(options.ncclLibraries.empty()
                             ? std::vector<std::string>{"libnccl.so.2", "libnccl.so"}
                             : options.ncclLibraries,
                         found))
      ex.add(Severity::Error, "plan", "nccl",
             planName + " has " + std::to_string(f.tensorParallelSize) +
                 " ranks and NCCL (libnccl.so.2) cannot be loaded",
             "install NCCL (Debian: libnccl2 from non-free; or NVIDIA's package)");
    else
      ex.add(Severity::Ok, "plan", "nccl", "NCCL: " + found);
  }
  f.canRun = std::none_of(r.findings.begin(), r.findings.end(), [&](const Finding &x) {
    if (x.severity != Severity::Error)
      return false;
    if (x.scope == "plan")
      return true;
    for (size_t rank = 0; rank < f.gpus.size() && rank < f.tensorParallelSize; ++rank)
      if (x.scope == gpuScope(f.gpus[rank]))
        return true;
    return false;
  });
  r.plan = f;
  return Status::success();
}

} // namespace

const char *severityName(Severity s) {
  switch (s) {
  case Severity::Ok: return "ok";
  case Severity::Note: return "note";
  case Severity::Warning: return "warning";
  case Severity::Error: return "error";
  }
  return "?";
}

bool DoctorReport::hasErrors() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding &f) { return f.severity == Severity::Error; });
}

Result<DoctorReport> examine(const Nvml &nvml, const DoctorOptions &options) {
  DoctorReport r;
  r.nvmlLibrary = nvml.library();
  Examiner ex(nvml, r);
  ex.system();
  unsigned count = 0;
  if (NvmlReturn c = nvml.deviceGetCount(&count); c != nvml::kSuccess)
    return Error("NVML cannot count the GPUs: " + nvml.describe(c));
  if (count == 0)
    ex.add(Severity::Error, "system", "gpu-count", "NVML sees no GPU",
           "check that the cards are powered and the driver loaded (nvidia-smi, dmesg)");
  std::vector<NvmlDevice> devices(count);
  for (unsigned i = 0; i < count; ++i) {
    if (NvmlReturn c = nvml.deviceGetHandleByIndex(i, &devices[i]); c != nvml::kSuccess) {
      ex.add(Severity::Error, gpuScope(i), "handle",
             "NVML cannot open this GPU: " + nvml.describe(c),
             "nvidia-smi -q -i " + std::to_string(i) + " shows its state; a GPU that fell off "
                                                       "the bus needs a reboot");
      devices[i] = nullptr;
      GpuFacts lost;
      lost.index = i;
      r.gpus.push_back(lost);
      continue;
    }
    ex.gpu(i, devices[i]);
  }
  for (unsigned a = 0; a < count; ++a)
    for (unsigned b = a + 1; b < count; ++b)
      if (devices[a] && devices[b])
        ex.pair(a, b, devices[a], devices[b]);
  if (!options.plan.empty())
    VOLT_RETURN_IF_ERROR(checkPlan(options, devices, r, ex));
  return r;
}

std::string formatReport(const DoctorReport &r) {
  std::string out;
  auto section = [&](const std::string &scope) {
    std::string text;
    for (const Finding &f : r.findings) {
      if (f.scope != scope)
        continue;
      char mark[16];
      std::snprintf(mark, sizeof mark, "%-8s", severityName(f.severity));
      text += "  " + std::string(mark) + f.what + "\n";
      if (!f.action.empty())
        text += "          → " + f.action + "\n";
    }
    if (!text.empty())
      out += scope + "\n" + text;
  };
  section("system");
  for (const GpuFacts &g : r.gpus)
    section(gpuScope(g.index));
  for (size_t a = 0; a < r.gpus.size(); ++a)
    for (size_t b = a + 1; b < r.gpus.size(); ++b)
      section(pairScope(static_cast<unsigned>(a), static_cast<unsigned>(b)));
  if (r.plan)
    section("plan");
  size_t errors = 0, warnings = 0;
  for (const Finding &f : r.findings) {
    errors += f.severity == Severity::Error;
    warnings += f.severity == Severity::Warning;
  }
  out += "\n" + std::to_string(r.gpus.size()) + " GPU" + (r.gpus.size() == 1 ? "" : "s") + ": " +
         std::to_string(errors) + " error" + (errors == 1 ? "" : "s") + ", " +
         std::to_string(warnings) + " warning" + (warnings == 1 ? "" : "s");
  if (r.plan)
    out += std::string("; ") + r.plan->path.filename().string() +
           (r.plan->canRun ? " can run here" : " cannot run here as it is");
  out += "\n";
  return out;
}

nlohmann::json reportJson(const DoctorReport &r) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuFacts &g : r.gpus)
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"bus_id", g.busId},
                    {"memory_total_bytes", g.memoryTotal},
                    {"memory_free_bytes", g.memoryFree},
                    {"compute_capability", std::to_string(g.ccMajor) + "." + std::to_string(g.ccMinor)},
                    {"pcie_width", g.pcieWidth},
                    {"pcie_max_width", g.pcieMaxWidth},
                    {"pcie_generation", g.pcieGen},
                    {"pcie_max_generation", g.pcieMaxGen}});
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding &f : r.findings)
    findings.push_back({{"severity", severityName(f.severity)},
                        {"scope", f.scope},
                        {"check", f.check},
                        {"what", f.what},
                        {"action", f.action}});
  nlohmann::json j = {{"nvml_library", r.nvmlLibrary},
                      {"driver_version", r.driverVersion},
                      {"cuda_driver_version", r.cudaDriverVersion},
                      {"gpus", gpus},
                      {"findings", findings},
                      {"errors", std::count_if(r.findings.begin(), r.findings.end(),
                                               [](const Finding &f) {
                                                 return f.severity == Severity::Error;
                                               })},
                      {"exit_code", r.exitCode()}};
  if (r.plan)
    j["plan"] = {{"path", r.plan->path.string()},
                 {"sku", r.plan->sku},
                 {"arch", r.plan->arch},
                 {"tensor_parallel_size", r.plan->tensorParallelSize},
                 {"rank_bytes", r.plan->rankBytes},
                 {"gpus", r.plan->gpus},
                 {"can_run", r.plan->canRun}};
  return j;
}

} // namespace volt::doctor
