// Fuzzes the deployment spec parser: any text gives a spec that keeps every
// documented invariant, or an error; never a crash. The file system is left
// alone (no model-directory check, path targets not read), so runs are
// deterministic.
#include "compiler/spec/DeploySpec.h"

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  volt::spec::DeploySpecOptions options;
  options.checkFilesystem = false;
  auto spec = volt::spec::parseDeploySpec(text, "fuzz.yaml", "/fuzz-base", options);
  if (!spec.ok()) {
    // Every error names the file.
    if (spec.message().rfind("fuzz.yaml", 0) != 0)
      std::abort();
    return 0;
  }
  const volt::spec::DeploySpec &s = *spec;
  int tp = s.tensorParallelSize;
  bool valid =
      (tp == 1 || tp == 2 || tp == 4 || tp == 8) && !s.model.empty() && !s.target.empty() &&
      s.gpuMemoryUtilization > 0 && s.gpuMemoryUtilization <= 1 && s.maxNumSeqs >= 1 &&
      s.maxNumBatchedTokens >= s.maxNumSeqs && (!s.maxModelLen || *s.maxModelLen >= 1) &&
      (s.kvCache.blockSize == 8 || s.kvCache.blockSize == 16 || s.kvCache.blockSize == 32) &&
      s.seed >= 0 && !s.servedModelName.empty();
  // A built-in target is always resolved to its SKU.
  if (!volt::spec::isSkuPath(s.target) && s.sku.name != s.target)
    valid = false;
  if (!valid)
    std::abort();
  return 0;
}
