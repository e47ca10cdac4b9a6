//===- FakeNvml.cpp - a libnvidia-ml stand-in for volt-doctor's tests ------===//
//
// A shared library with NVML's entry points (the ones of
// runtime/doctor/NvmlSymbols.def), answering from a box described in the
// JSON file named by $VOLT_FAKE_NVML: GPUs with their health fields and the
// links between pairs. Fields left out take a healthy V100-PCIE-16GB's
// values. volt-doctor loads it with --nvml-library, through the same dlopen
// path as the real library.
//
//   {"driver": "535.183.01", "cuda": 12020,
//    "gpus": [{"name": ..., "memory_free": ..., "ecc": "on|off|unsupported",
//              "ecc_uncorrected_volatile": 0, "ecc_uncorrected_aggregate": 0,
//              "retired_pages_pending": false, "pcie_width": 16,
//              "pcie_max_width": 16, "pcie_gen": 3, "pcie_max_gen": 3,
//              "persistence": true, "throttle": 0, "cc": [7, 0]}],
//    "links": {"0-1": {"topology": 50, "p2p": false}}}
//
//===----------------------------------------------------------------------===//
#include "runtime/doctor/Nvml.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

using json = nlohmann::json;

struct Box {
  json j;
  bool loaded = false;
};

Box &box() {
  static Box b;
  return b;
}

const json &gpu(void *device) {
  static const json empty = json::object();
  const size_t i = reinterpret_cast<size_t>(device) - 1;
  const json &gpus = box().j["gpus"];
  return i < gpus.size() ? gpus[i] : empty;
}

template <typename T> T field(const json &g, const char *key, T fallback) {
  return g.contains(key) ? g[key].get<T>() : fallback;
}

void copy(char *out, unsigned length, const std::string &text) {
  if (length == 0)
    return;
  std::strncpy(out, text.c_str(), length - 1);
  out[length - 1] = '\0';
}

json link(void *a, void *b) {
  size_t i = reinterpret_cast<size_t>(a) - 1, k = reinterpret_cast<size_t>(b) - 1;
  if (i > k)
    std::swap(i, k);
  const std::string key = std::to_string(i) + "-" + std::to_string(k);
  const json &links = box().j["links"];
  return links.is_object() && links.contains(key) ? links[key] : json::object();
}

// NVML's structs as volt-doctor declares them.
using PciInfo = volt::doctor::NvmlPciInfo;
using Memory = volt::doctor::NvmlMemory;

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3,
              kUnknown = 999;

} // namespace

extern "C" {

int nvmlInit_v2() {
  const char *path = std::getenv("VOLT_FAKE_NVML");
  if (!path)
    return kUninitialized;
  std::ifstream in(path);
  if (!in)
    return kUnknown;
  try {
    box().j = json::parse(in);
  } catch (const std::exception &) {
    return kUnknown;
  }
  if (box().j.contains("init_error"))
    return box().j["init_error"].get<int>();
  box().loaded = true;
  return kSuccess;
}

int nvmlShutdown() { return kSuccess; }

const char *nvmlErrorString(int code) {
  switch (code) {
  case kSuccess: return "Success";
  case kUninitialized: return "Uninitialized";
  case kInvalidArgument: return "Invalid Argument";
  case kNotSupported: return "Not Supported";
  case 9: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char *version, unsigned length) {
  copy(version, length, field<std::string>(box().j, "driver", "535.183.01"));
  return kSuccess;
}

int nvmlSystemGetCudaDriverVersion_v2(int *version) {
  *version = field<int>(box().j, "cuda", 12020);
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned *count) {
  *count = static_cast<unsigned>(box().j.value("gpus", json::array()).size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device) {
  if (index >= box().j.value("gpus", json::array()).size())
    return kInvalidArgument;
  if (field<bool>(box().j["gpus"][index], "lost", false))
    return 15; // NVML_ERROR_GPU_IS_LOST
  *device = reinterpret_cast<void *>(static_cast<size_t>(index) + 1);
  return kSuccess;
}

int nvmlDeviceGetName(void *d, char *name, unsigned length) {
  copy(name, length, field<std::string>(gpu(d), "name", "Tesla V100-PCIE-16GB"));
  return kSuccess;
}

int nvmlDeviceGetPciInfo_v3(void *d, PciInfo *pci) {
  std::memset(pci, 0, sizeof *pci);
  const size_t i = reinterpret_cast<size_t>(d) - 1;
  char fallback[32];
  std::snprintf(fallback, sizeof fallback, "00000000:%02zX:00.0", 0x3b + i * 0x20);
  copy(pci->busId, sizeof pci->busId, field<std::string>(gpu(d), "bus_id", fallback));
  pci->pciDeviceId = 0x1db410de;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(void *d, Memory *m) {
  m->total = field<unsigned long long>(gpu(d), "memory_total", 16945512448ull);
  m->free = field<unsigned long long>(gpu(d), "memory_free", m->total - 300ull * 1024 * 1024);
  m->used = m->total - m->free;
  return kSuccess;
}

int nvmlDeviceGetCudaComputeCapability(void *d, int *major, int *minor) {
  const json cc = field<json>(gpu(d), "cc", json::array({7, 0}));
  *major = cc[0].get<int>();
  *minor = cc[1].get<int>();
  return kSuccess;
}

int nvmlDeviceGetEccMode(void *d, int *current, int *pending) {
  const std::string ecc = field<std::string>(gpu(d), "ecc", "on");
  if (ecc == "unsupported")
    return kNotSupported;
  *current = ecc == "on";
  *pending = field<std::string>(gpu(d), "ecc_pending", ecc) == "on";
  return kSuccess;
}

int nvmlDeviceGetTotalEccErrors(void *d, int errorType, int counterType,
                                unsigned long long *count) {
  if (field<std::string>(gpu(d), "ecc", "on") == "unsupported")
    return kNotSupported;
  if (errorType != 1) { // corrected errors: not asked by volt-doctor
    *count = 0;
    return kSuccess;
  }
  *count = field<unsigned long long>(
      gpu(d), counterType == 0 ? "ecc_uncorrected_volatile" : "ecc_uncorrected_aggregate", 0);
  return kSuccess;
}

int nvmlDeviceGetRetiredPagesPendingStatus(void *d, int *pending) {
  *pending = field<bool>(gpu(d), "retired_pages_pending", false) ? 1 : 0;
  return kSuccess;
}

int nvmlDeviceGetCurrPcieLinkWidth(void *d, unsigned *w) {
  *w = field<unsigned>(gpu(d), "pcie_width", 16);
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkWidth(void *d, unsigned *w) {
  *w = field<unsigned>(gpu(d), "pcie_max_width", 16);
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void *d, unsigned *g) {
  *g = field<unsigned>(gpu(d), "pcie_gen", 3);
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkGeneration(void *d, unsigned *g) {
  *g = field<unsigned>(gpu(d), "pcie_max_gen", 3);
  return kSuccess;
}

int nvmlDeviceGetPersistenceMode(void *d, int *mode) {
  *mode = field<bool>(gpu(d), "persistence", true) ? 1 : 0;
  return kSuccess;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void *d, unsigned long long *reasons) {
  *reasons = field<unsigned long long>(gpu(d), "throttle", 1); // GPU idle
  return kSuccess;
}

int nvmlDeviceGetTopologyCommonAncestor(void *a, void *b, int *level) {
  *level = field<int>(link(a, b), "topology", 30); // PHB
  return kSuccess;
}

int nvmlDeviceGetP2PStatus(void *a, void *b, int, int *status) {
  *status = field<bool>(link(a, b), "p2p", true) ? 0 : 4; // NVML_P2P_STATUS_NOT_SUPPORTED
  return kSuccess;
}

} // extern "C"
