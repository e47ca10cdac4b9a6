//===- Sku.cpp - the SKU file table, parser and built-in lookup -----------===//
#include "compiler/spec/Sku.h"

#include "compiler/spec/BuiltinSkus.h"
#include "compiler/spec/Schema.h"
#include "compiler/spec/YamlDocument.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstdio>

namespace volt::spec {

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;
constexpr int64_t kTiB = 1024 * kGiB;

const std::vector<std::pair<Arch, std::string>> &archNames() {
  static const std::vector<std::pair<Arch, std::string>> names = {{Arch::Sm70, "sm_70"},
                                                                  {Arch::Sm75, "sm_75"},
                                                                  {Arch::Sm80, "sm_80"},
                                                                  {Arch::Sm90, "sm_90"},
                                                                  {Arch::Cpu, "cpu"}};
  return names;
}

const std::vector<std::pair<InterconnectKind, std::string>> &interconnectNames() {
  static const std::vector<std::pair<InterconnectKind, std::string>> names = {
      {InterconnectKind::Pcie, "pcie"},
      {InterconnectKind::Nvlink, "nvlink"},
      {InterconnectKind::Host, "host"}};
  return names;
}

template <typename E>
std::vector<std::string> namesOf(const std::vector<std::pair<E, std::string>> &table) {
  std::vector<std::string> out;
  out.reserve(table.size());
  for (const auto &[value, name] : table)
    out.push_back(name);
  return out;
}

template <typename E>
E valueOf(const std::vector<std::pair<E, std::string>> &table, const std::string &name) {
  for (const auto &[value, n] : table)
    if (n == name)
      return value;
  return table.front().first; // unreachable: the schema checked the choice
}

const std::vector<Field<Sku>> &skuFields();

std::vector<std::string> skuKeys() {
  std::vector<std::string> keys;
  for (const Field<Sku> &f : skuFields())
    if (f.key != "sources")
      keys.push_back(f.key);
  return keys;
}

/// `sources:` maps field keys to where their numbers come from.
void readSources(const YAML::Node &node, Sku &sku, FieldContext &ctx) {
  if (!node.IsMap()) {
    ctx.diags.error(locationOf(node, ctx.keyLocation),
                    "invalid value for 'sources': expected a mapping from SKU keys to the "
                    "document each number comes from, found " +
                        describeNode(node));
    return;
  }
  std::vector<std::string> keys = skuKeys();
  for (const auto &entry : node) {
    YAML::Node keyNode = entry.first;
    YAML::Node value = entry.second;
    SourceLocation keyLoc = locationOf(keyNode, ctx.keyLocation);
    if (!keyNode.IsScalar()) {
      ctx.diags.error(keyLoc, "expected a key name, found " + describeNode(keyNode));
      continue;
    }
    const std::string &key = keyNode.Scalar();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string message = "unknown key " + quoteForMessage(key) + " in 'sources'";
      if (auto near = closestMatch(key, keys))
        message += "; did you mean '" + *near + "'?";
      else
        message += ";";
      ctx.diags.error(keyLoc, message + " 'sources' is keyed by the SKU keys, e.g. "
                                        "sm_count or interconnect.bandwidth_gbps");
      continue;
    }
    if (sku.sources.count(key)) {
      ctx.diags.error(keyLoc, "duplicate key 'sources." + key + "'");
      continue;
    }
    if (!value.IsScalar() || value.Scalar().empty()) {
      ctx.diags.error(locationOf(value, keyLoc), "invalid value for 'sources." + key +
                                                     "': expected the name of a document, found " +
                                                     describeNode(value));
      continue;
    }
    sku.sources[key] = value.Scalar();
  }
}

const std::vector<Field<AllReduceLatencyPoint>> &latencyPointFields() {
  using P = AllReduceLatencyPoint;
  static const std::vector<Field<P>> fields = {
      integerField<P>("bytes", "message size", [](P &p, int64_t v) { p.bytes = v; })
          .require()
          .atLeast(1)
          .atMost(kTiB),
      numberField<P>("us", "latency in microseconds", [](P &p, double v) { p.us = v; })
          .require()
          .above(0)
          .atMostNumber(1e9),
  };
  return fields;
}

void readLatencies(const YAML::Node &node, Sku &sku, FieldContext &ctx) {
  if (node.IsNull())
    return; // "all_reduce_latency_us:" with nothing: no measurements
  if (!node.IsSequence()) {
    ctx.diags.error(locationOf(node, ctx.keyLocation), "invalid value for '" + ctx.spec.key +
                                                           "': expected " + ctx.spec.typeName +
                                                           ", found " + describeNode(node));
    return;
  }
  auto &points = sku.interconnect.allReduceLatencyUs;
  for (const YAML::Node &item : node) {
    AllReduceLatencyPoint point;
    size_t before = ctx.diags.errorCount();
    readMapping(item, latencyPointFields(), "an all-reduce measurement {bytes, us}", point,
                ctx.diags);
    if (ctx.diags.errorCount() != before)
      continue;
    if (!points.empty() && point.bytes <= points.back().bytes) {
      ctx.diags.error(locationOf(item, ctx.keyLocation),
                      "invalid value for '" + ctx.spec.key +
                          "': measurements must be in increasing order of bytes, found " +
                          std::to_string(point.bytes) + " after " +
                          std::to_string(points.back().bytes));
      continue;
    }
    points.push_back(point);
  }
}

const std::vector<Field<Sku>> &skuFields() {
  // Ranges are sanity bounds (no real part is outside them), so that a typo
  // of three orders of magnitude is caught here instead of in a plan.
  static const std::vector<Field<Sku>> fields = {
      stringField<Sku>("name", "the SKU's name; a built-in file is named after it",
                       [](Sku &s, const std::string &v) { s.name = v; })
          .require()
          .notEmpty(),
      stringField<Sku>("description", "one line saying which product this is",
                       [](Sku &s, const std::string &v) { s.description = v; })
          .require()
          .notEmpty(),
      customField<Sku>("sources", "where each number comes from, keyed by SKU key",
                       "mapping of key to text", readSources)
          .validAs("SKU keys")
          .defaultAs("empty"),
      choiceField<Sku>("arch", "the instruction set kernels are compiled for", namesOf(archNames()),
                       [](Sku &s, const std::string &v) { s.arch = valueOf(archNames(), v); })
          .require(),
      booleanField<Sku>("nominal",
                        "the numbers are placeholders, not hardware facts (the cpu backend)",
                        [](Sku &s, bool v) { s.nominal = v; })
          .byDefault(false),
      integerField<Sku>("sm_count", "streaming multiprocessors (0 for cpu)",
                        [](Sku &s, int64_t v) { s.smCount = static_cast<int>(v); })
          .require()
          .atLeast(0)
          .atMost(1024),
      integerField<Sku>("memory_bytes",
                        "device memory per GPU in bytes, as the driver reports it where known "
                        "(cpu: the memory budget per rank)",
                        [](Sku &s, int64_t v) { s.memoryBytes = v; })
          .require()
          .atLeast(kMiB)
          .atMost(64 * kTiB),
      numberField<Sku>("memory_bandwidth_spec_gbps", "device memory bandwidth, datasheet, GB/s",
                       [](Sku &s, double v) { s.memoryBandwidthSpecGbps = v; })
          .require()
          .above(0)
          .atMostNumber(1e5),
      numberField<Sku>("memory_bandwidth_practical_gbps",
                       "device memory bandwidth a copy kernel reaches, GB/s (at most the spec)",
                       [](Sku &s, double v) { s.memoryBandwidthPracticalGbps = v; })
          .require()
          .above(0)
          .atMostNumber(1e5),
      numberField<Sku>("fp16_tensor_tflops", "dense FP16 tensor-core peak, TFLOP/s",
                       [](Sku &s, double v) { s.fp16TensorTflops = v; })
          .require()
          .above(0)
          .atMostNumber(1e5),
      integerField<Sku>("shared_memory_per_sm_bytes", "shared memory per SM (0 for cpu)",
                        [](Sku &s, int64_t v) { s.sharedMemoryPerSmBytes = v; })
          .require()
          .atLeast(0)
          .atMost(16 * kMiB),
      integerField<Sku>("shared_memory_per_block_bytes",
                        "shared memory a block gets without opting in (0 for cpu)",
                        [](Sku &s, int64_t v) { s.sharedMemoryPerBlockBytes = v; })
          .require()
          .atLeast(0)
          .atMost(16 * kMiB),
      integerField<Sku>("shared_memory_per_block_optin_bytes",
                        "shared memory a block gets when the kernel opts in (0 for cpu)",
                        [](Sku &s, int64_t v) { s.sharedMemoryPerBlockOptinBytes = v; })
          .require()
          .atLeast(0)
          .atMost(16 * kMiB),
      integerField<Sku>("l2_cache_bytes", "L2 cache size (0 for cpu)",
                        [](Sku &s, int64_t v) { s.l2CacheBytes = v; })
          .require()
          .atLeast(0)
          .atMost(4 * kGiB),
      integerField<Sku>("registers_per_sm", "32-bit registers per SM (0 for cpu)",
                        [](Sku &s, int64_t v) { s.registersPerSm = static_cast<int>(v); })
          .require()
          .atLeast(0)
          .atMost(1 << 20),
      integerField<Sku>("max_registers_per_thread", "registers one thread may use (0 for cpu)",
                        [](Sku &s, int64_t v) { s.maxRegistersPerThread = static_cast<int>(v); })
          .require()
          .atLeast(0)
          .atMost(1024),
      integerField<Sku>("max_threads_per_sm", "resident threads per SM (0 for cpu)",
                        [](Sku &s, int64_t v) { s.maxThreadsPerSm = static_cast<int>(v); })
          .require()
          .atLeast(0)
          .atMost(1 << 16),
      booleanField<Sku>("dtypes.bf16", "BF16 arithmetic in hardware (sm_80 and newer)",
                        [](Sku &s, bool v) { s.dtypes.bf16 = v; })
          .require(),
      booleanField<Sku>("dtypes.fp8", "FP8 (E4M3/E5M2) tensor cores (sm_89 and newer)",
                        [](Sku &s, bool v) { s.dtypes.fp8 = v; })
          .require(),
      booleanField<Sku>("dtypes.fp4", "FP4 (E2M1) tensor cores (sm_100 and newer)",
                        [](Sku &s, bool v) { s.dtypes.fp4 = v; })
          .require(),
      choiceField<Sku>("interconnect.kind",
                       "how tensor-parallel ranks talk: pcie, nvlink, or host (threads of one "
                       "process, the cpu backend)",
                       namesOf(interconnectNames()),
                       [](Sku &s, const std::string &v) {
                         s.interconnect.kind = valueOf(interconnectNames(), v);
                       })
          .require(),
      integerField<Sku>("interconnect.pcie_gen", "PCIe generation of the host link (0 for cpu)",
                        [](Sku &s, int64_t v) { s.interconnect.pcieGen = static_cast<int>(v); })
          .require()
          .atLeast(0)
          .atMost(7),
      integerField<Sku>("interconnect.pcie_width", "PCIe lanes of the host link (0 for cpu)",
                        [](Sku &s, int64_t v) { s.interconnect.pcieWidth = static_cast<int>(v); })
          .require()
          .oneOf({0, 1, 2, 4, 8, 16}),
      numberField<Sku>("interconnect.bandwidth_gbps",
                       "GPU-to-GPU bandwidth as the vendor quotes it, both directions, GB/s",
                       [](Sku &s, double v) { s.interconnect.bandwidthGbps = v; })
          .require()
          .above(0)
          .atMostNumber(1e5),
      numberField<Sku>("interconnect.practical_bandwidth_gbps",
                       "measured one-direction GPU-to-GPU copy bandwidth, GB/s",
                       [](Sku &s, double v) { s.interconnect.practicalBandwidthGbps = v; })
          .orUnset()
          .above(0)
          .atMostNumber(1e5),
      customField<Sku>("interconnect.all_reduce_latency_us",
                       "measured NCCL all-reduce latency by message size, increasing bytes",
                       "sequence of {bytes, us}", readLatencies)
          .validAs("bytes >= 1, us > 0")
          .defaultAs("empty"),
      integerField<Sku>("memory_reserve.cuda_context_bytes",
                        "per GPU, memory the CUDA context and loaded kernels take",
                        [](Sku &s, int64_t v) { s.memoryReserve.cudaContextBytes = v; })
          .require()
          .atLeast(0)
          .atMost(64 * kGiB),
      integerField<Sku>(
          "memory_reserve.nccl_bytes",
          "per GPU, memory NCCL takes for one communicator (tensor_parallel_size > 1)",
          [](Sku &s, int64_t v) { s.memoryReserve.ncclBytes = v; })
          .require()
          .atLeast(0)
          .atMost(64 * kGiB),
  };
  return fields;
}

/// Checks between fields, once each field is valid on its own.
void checkConsistency(const Sku &sku, const KeyPlaces &where, Diagnostics &diags) {
  auto at = [&](const std::string &key) { return where.value(key); };
  std::string arch(archName(sku.arch));
  if (!sku.isCpu()) {
    const std::pair<const char *, uint64_t> gpuOnly[] = {
        {"sm_count", sku.smCount},
        {"shared_memory_per_sm_bytes", sku.sharedMemoryPerSmBytes},
        {"shared_memory_per_block_bytes", sku.sharedMemoryPerBlockBytes},
        {"shared_memory_per_block_optin_bytes", sku.sharedMemoryPerBlockOptinBytes},
        {"l2_cache_bytes", sku.l2CacheBytes},
        {"registers_per_sm", static_cast<uint64_t>(sku.registersPerSm)},
        {"max_registers_per_thread", static_cast<uint64_t>(sku.maxRegistersPerThread)},
        {"max_threads_per_sm", static_cast<uint64_t>(sku.maxThreadsPerSm)},
        {"interconnect.pcie_gen", static_cast<uint64_t>(sku.interconnect.pcieGen)},
        {"interconnect.pcie_width", static_cast<uint64_t>(sku.interconnect.pcieWidth)}};
    for (const auto &[key, value] : gpuOnly)
      if (value == 0)
        diags.error(at(key), "invalid value for '" + std::string(key) + "': a GPU SKU (arch " +
                                 arch + ") needs a positive value, found 0");
    if (sku.interconnect.kind == InterconnectKind::Host)
      diags.error(at("interconnect.kind"),
                  "invalid value for 'interconnect.kind': 'host' is for the cpu backend; a GPU "
                  "SKU (arch " +
                      arch + ") uses pcie or nvlink");
  } else {
    if (sku.interconnect.kind != InterconnectKind::Host)
      diags.error(at("interconnect.kind"),
                  "invalid value for 'interconnect.kind': the cpu backend's ranks are threads "
                  "of one process; expected host, found " +
                      std::string(interconnectKindName(sku.interconnect.kind)));
    if (!sku.nominal)
      diags.error(at("nominal"), "the cpu SKU's numbers are placeholders; expected "
                                 "'nominal: true'");
  }
  if (sku.sharedMemoryPerBlockBytes > sku.sharedMemoryPerBlockOptinBytes)
    diags.error(at("shared_memory_per_block_bytes"),
                "invalid value for 'shared_memory_per_block_bytes': expected at most "
                "shared_memory_per_block_optin_bytes (" +
                    std::to_string(sku.sharedMemoryPerBlockOptinBytes) + "), found " +
                    std::to_string(sku.sharedMemoryPerBlockBytes));
  if (sku.sharedMemoryPerBlockOptinBytes > sku.sharedMemoryPerSmBytes)
    diags.error(at("shared_memory_per_block_optin_bytes"),
                "invalid value for 'shared_memory_per_block_optin_bytes': expected at most "
                "shared_memory_per_sm_bytes (" +
                    std::to_string(sku.sharedMemoryPerSmBytes) + "), found " +
                    std::to_string(sku.sharedMemoryPerBlockOptinBytes));
  if (sku.memoryBandwidthPracticalGbps > sku.memoryBandwidthSpecGbps)
    diags.error(at("memory_bandwidth_practical_gbps"),
                "invalid value for 'memory_bandwidth_practical_gbps': expected at most "
                "memory_bandwidth_spec_gbps (" +
                    formatNumber(sku.memoryBandwidthSpecGbps) + "), found " +
                    formatNumber(sku.memoryBandwidthPracticalGbps));
  if (sku.memoryReserve.cudaContextBytes + sku.memoryReserve.ncclBytes >= sku.memoryBytes)
    diags.error(
        at("memory_reserve.cuda_context_bytes"),
        "invalid memory_reserve: cuda_context_bytes + nccl_bytes (" +
            std::to_string(sku.memoryReserve.cudaContextBytes + sku.memoryReserve.ncclBytes) +
            ") leave nothing of memory_bytes (" + std::to_string(sku.memoryBytes) + ")");
  // Claims the hardware cannot back would make the compiler pick kernels
  // that do not exist for the arch.
  int cc = sku.computeCapability();
  if (sku.dtypes.bf16 && cc < 80)
    diags.error(at("dtypes.bf16"),
                "invalid value for 'dtypes.bf16': " + arch + " has no bf16 arithmetic (sm_80+)");
  if (sku.dtypes.fp8 && cc < 89)
    diags.error(at("dtypes.fp8"),
                "invalid value for 'dtypes.fp8': " + arch + " has no fp8 tensor cores (sm_89+)");
  if (sku.dtypes.fp4 && cc < 100)
    diags.error(at("dtypes.fp4"),
                "invalid value for 'dtypes.fp4': " + arch + " has no fp4 tensor cores (sm_100+)");
}

} // namespace

std::string_view archName(Arch arch) {
  for (const auto &[value, name] : archNames())
    if (value == arch)
      return name;
  return "unknown";
}

std::string_view interconnectKindName(InterconnectKind kind) {
  for (const auto &[value, name] : interconnectNames())
    if (value == kind)
      return name;
  return "unknown";
}

int Sku::computeCapability() const {
  switch (arch) {
  case Arch::Sm70:
    return 70;
  case Arch::Sm75:
    return 75;
  case Arch::Sm80:
    return 80;
  case Arch::Sm90:
    return 90;
  case Arch::Cpu:
    return 0;
  }
  return 0;
}

Result<Sku> parseSku(std::string_view text, std::string_view fileName) {
  Diagnostics diags{std::string(fileName)};
  try {
    std::optional<YAML::Node> root = parseYamlDocument(text, diags);
    if (!root)
      return diags.toError();
    Sku sku;
    auto where = readMapping(*root, skuFields(), "a hardware SKU", sku, diags);
    if (!diags.hasErrors())
      checkConsistency(sku, where, diags);
    if (diags.hasErrors())
      return diags.toError();
    return sku;
  } catch (const std::exception &e) {
    // yaml-cpp may still throw while nodes are read; no exception leaves.
    diags.error({}, std::string("invalid yaml: ") + e.what());
    return diags.toError();
  }
}

std::vector<std::string> builtinSkuNames() {
  std::vector<std::string> names;
  for (size_t i = 0; i < detail::kBuiltinSkuFileCount; ++i)
    names.emplace_back(detail::kBuiltinSkuFiles[i].name);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string_view> builtinSkuText(std::string_view name) {
  for (size_t i = 0; i < detail::kBuiltinSkuFileCount; ++i)
    if (name == detail::kBuiltinSkuFiles[i].name)
      return std::string_view(detail::kBuiltinSkuFiles[i].data, detail::kBuiltinSkuFiles[i].size);
  return std::nullopt;
}

bool isSkuPath(std::string_view target) {
  return target.find('/') != std::string_view::npos ||
         (target.size() >= 5 && target.substr(target.size() - 5) == ".yaml");
}

Result<Sku> loadSku(std::string_view nameOrPath, const std::filesystem::path &baseDir) {
  if (isSkuPath(nameOrPath)) {
    std::filesystem::path path = (baseDir / std::filesystem::path(nameOrPath)).lexically_normal();
    VOLT_ASSIGN_OR_RETURN(std::string text, readTextFile(path, kMaxYamlBytes));
    return parseSku(text, path.string());
  }
  if (auto text = builtinSkuText(nameOrPath)) {
    std::string fileName = "specs/" + std::string(nameOrPath) + ".yaml";
    VOLT_ASSIGN_OR_RETURN(Sku sku, parseSku(*text, fileName));
    if (sku.name != nameOrPath)
      return Error(fileName + ": error: the file is named '" + std::string(nameOrPath) +
                   "' but its 'name' is '" + sku.name + "'");
    return sku;
  }
  std::vector<std::string> names = builtinSkuNames();
  std::string message = "unknown SKU " + quoteForMessage(nameOrPath);
  if (auto near = closestMatch(nameOrPath, names))
    message += "; did you mean '" + *near + "'?";
  else
    message += ";";
  return Error(message + " built-in SKUs: " + joinList(names) +
               "; or give the path of a SKU file (containing '/' or ending in .yaml)");
}

std::string skuReference() {
  std::vector<const FieldSpec *> specs;
  for (const Field<Sku> &f : skuFields())
    specs.push_back(&f);
  return referenceTable(specs);
}

} // namespace volt::spec
