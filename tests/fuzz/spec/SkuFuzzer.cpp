// Fuzzes the SKU file parser: any text gives a SKU whose numbers are
// consistent (the checks the compiler relies on), or an error; never a crash.
#include "compiler/spec/Sku.h"

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto sku = volt::spec::parseSku(text, "fuzz.yaml");
  if (!sku.ok()) {
    if (sku.message().rfind("fuzz.yaml", 0) != 0)
      std::abort();
    return 0;
  }
  const volt::spec::Sku &s = *sku;
  bool valid = !s.name.empty() && s.sharedMemoryPerBlockBytes <= s.sharedMemoryPerBlockOptinBytes &&
               s.sharedMemoryPerBlockOptinBytes <= s.sharedMemoryPerSmBytes &&
               s.memoryBandwidthPracticalGbps <= s.memoryBandwidthSpecGbps &&
               s.memoryReserve.cudaContextBytes + s.memoryReserve.ncclBytes < s.memoryBytes &&
               s.isCpu() == (s.interconnect.kind == volt::spec::InterconnectKind::Host) &&
               (s.isCpu() || s.smCount > 0);
  const auto &points = s.interconnect.allReduceLatencyUs;
  for (size_t i = 1; i < points.size(); ++i)
    valid = valid && points[i - 1].bytes < points[i].bytes;
  if (!valid)
    std::abort();
  return 0;
}
