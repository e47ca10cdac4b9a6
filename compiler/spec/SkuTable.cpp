//===- SkuTable.cpp - the built-in SKUs as a Markdown table ---------------===//
//
// docs/skus.md holds this table verbatim and a unit test compares the two,
// so the documented numbers are the ones built into the compiler.
//
//===----------------------------------------------------------------------===//
#include "compiler/spec/Schema.h"
#include "compiler/spec/Sku.h"

#include <cstdio>

namespace volt::spec {

namespace {

std::string binaryUnits(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%g MiB", static_cast<double>(bytes) / (1ull << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%g KiB", static_cast<double>(bytes) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

std::string interconnectText(const Interconnect &ic) {
  switch (ic.kind) {
  case InterconnectKind::Host:
    return "in-process, " + formatNumber(ic.bandwidthGbps) + " GB/s";
  case InterconnectKind::Nvlink:
    return "NVLink " + formatNumber(ic.bandwidthGbps) + " GB/s";
  case InterconnectKind::Pcie:
    return "PCIe " + std::to_string(ic.pcieGen) + ".0 x" + std::to_string(ic.pcieWidth) + " " +
           formatNumber(ic.bandwidthGbps) + " GB/s";
  }
  return "";
}

std::string yesNo(bool v) { return v ? "yes" : "no"; }

} // namespace

std::string builtinSkuTable() {
  std::string table =
      "| SKU | arch | SMs | memory | bandwidth spec / practical (GB/s) | FP16 tensor "
      "(TFLOP/s, dense) | shared memory per SM / per block (opt-in) | L2 | bf16 / fp8 / fp4 | "
      "GPU-to-GPU | reserve: CUDA context / NCCL |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string sources;
  for (const std::string &name : builtinSkuNames()) {
    Result<Sku> loaded = loadSku(name, ".");
    if (!loaded.ok()) {
      table += "| " + name + " | (invalid: " + loaded.message() + ") |\n";
      continue;
    }
    const Sku &s = *loaded;
    std::string label = "`" + s.name + "`" + (s.nominal ? " (nominal)" : "");
    table += "| " + label + " | " + std::string(archName(s.arch)) + " | " +
             std::to_string(s.smCount) + " | " + binaryUnits(s.memoryBytes) + " | " +
             formatNumber(s.memoryBandwidthSpecGbps) + " / " +
             formatNumber(s.memoryBandwidthPracticalGbps) + " | " +
             formatNumber(s.fp16TensorTflops) + " | " + binaryUnits(s.sharedMemoryPerSmBytes) +
             " / " + binaryUnits(s.sharedMemoryPerBlockBytes) + " (" +
             binaryUnits(s.sharedMemoryPerBlockOptinBytes) + ") | " + binaryUnits(s.l2CacheBytes) +
             " | " + yesNo(s.dtypes.bf16) + " / " + yesNo(s.dtypes.fp8) + " / " +
             yesNo(s.dtypes.fp4) + " | " + interconnectText(s.interconnect) + " | " +
             binaryUnits(s.memoryReserve.cudaContextBytes) + " / " +
             binaryUnits(s.memoryReserve.ncclBytes) + " |\n";
    sources += "\n### `" + s.name + "`\n\n" + s.description + ".\n\n";
    for (const auto &[key, source] : s.sources) {
      sources += "- `";
      sources += key;
      sources += "`: ";
      sources += source;
      sources += '\n';
    }
  }
  return table + "\n## Sources\n" + sources;
}

} // namespace volt::spec
