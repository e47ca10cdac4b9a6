// Fuzzes the safetensors header parser: any bytes must give a header whose
// ranges all lie inside the file, or an error; never a crash.
#include "compiler/model/Safetensors.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto header = volt::model::parseSafetensorsHeader(bytes, size, "fuzz.safetensors");
  if (!header.ok())
    return 0;
  for (const auto &t : header->tensors) {
    // A validated header never points outside the file.
    if (header->dataOffset + t.end > size || t.begin > t.end)
      std::abort();
    volatile uint8_t sink = 0;
    if (t.end > t.begin)
      sink = data[header->dataOffset + t.end - 1];
    (void)sink;
  }
  return 0;
}
