//===- Check.cpp ----------------------------------------------------------===//
#include "compiler/driver/Check.h"

#include "compiler/model/TensorParallel.h"
#include "dialects/Transforms/ShardingRules.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

namespace volt::driver {
namespace {

/// Drops "<prefix><digits>." at the start of `s` if present.
bool dropIndexed(std::string_view &s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix)
    return false;
  size_t i = prefix.size();
  while (i < s.size() && s[i] >= '0' && s[i] <= '9')
    ++i;
  if (i == prefix.size() || i >= s.size() || s[i] != '.')
    return false;
  s.remove_prefix(i + 1);
  return true;
}

/// "model.layers.3.mlp.experts.17.up_proj.weight" -> "mlp.experts.*.up_proj"
/// (also under a multimodal checkpoint's "model.language_model.").
std::string roleOf(std::string_view name) {
  for (std::string_view prefix : {"model.language_model.", "model."})
    if (name.starts_with(prefix)) {
      name.remove_prefix(prefix.size());
      break;
    }
  dropIndexed(name, "layers.");
  if (name.size() > 7 && name.substr(name.size() - 7) == ".weight")
    name.remove_suffix(7);
  std::string role;
  // Collapse "experts.<n>." wherever it appears.
  while (!name.empty()) {
    size_t dot = name.find('.');
    std::string_view part = name.substr(0, dot);
    role += part;
    if (dot == std::string_view::npos)
      break;
    name.remove_prefix(dot + 1);
    role += '.';
    if (part == "experts" && dropIndexed(name, ""))
      role += "*.";
  }
  return role;
}

std::string formatOf(const model::Linear &lin) {
  if (lin.isFp8())
    return "FP8";
  return lin.isNvfp4() ? "NVFP4" : std::string(model::dtypeName(lin.dtype));
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Params in millions/billions, as model cards state them.
std::string formatParams(uint64_t n) {
  if (n >= 1'000'000'000)
    return fixed(n / 1e9, 2) + " B";
  if (n >= 1'000'000)
    return fixed(n / 1e6, 2) + " M";
  return formatCount(n);
}

} // namespace

Status checkSpecAgainstModel(const spec::DeploySpec &s, const model::Model &m,
                             int64_t &maxModelLen) {
  const model::ModelConfig &c = m.config;
  std::string file = s.specFile.string();
  maxModelLen = s.maxModelLen.value_or(c.maxPositionEmbeddings);
  if (maxModelLen > c.maxPositionEmbeddings)
    return Error(file + ": max_model_len " + std::to_string(maxModelLen) +
                 " exceeds the model's max_position_embeddings " +
                 std::to_string(c.maxPositionEmbeddings) + "; set max_model_len to at most that");
  bool anyNvfp4 =
      m.quant.claimsNvfp4() || s.weights.quantize == spec::WeightQuantization::Nvfp4;
  if (m.hasWeights()) {
    bool found = false;
    m.forEachLinear([&](const model::Linear &l) { found |= l.isNvfp4(); });
    anyNvfp4 |= found;
  }
  if (s.weights.quantize == spec::WeightQuantization::Nvfp4 &&
      m.quant.format != model::QuantFormat::None)
    return Error(file + ": weights.quantize is nvfp4, but the checkpoint is already " +
                 m.quant.name() +
                 "; set weights: {quantize: none}");
  if (auto st = model::checkTensorParallel(c, s.tensorParallelSize, anyNvfp4); !st)
    return Error(file + ": " + st.message() + " (model " + m.dir.string() + ")");
  // Layers with a recurrent state per sequence, which a cached prefix does
  // not restore (a rejected draft's update is rolled back through the
  // copies a verify step keeps: docs/design/speculative.md).
  std::vector<std::string> recurrent;
  for (size_t i = 0; i < c.mixers.size(); ++i)
    if (c.mixers[i] != model::MixerKind::Attention)
      recurrent.push_back(std::to_string(i));
  if (s.enablePrefixCaching && !recurrent.empty())
    return Error(file + ": enable_prefix_caching: the model's layers " + joinList(recurrent) +
                 " keep a recurrent state per sequence, which a cached prefix does not "
                 "restore; prefix caching is not supported for such models; remove it");
  return Status::success();
}

Result<CheckReport> check(const std::filesystem::path &specFile, const CheckOptions &options) {
  auto specResult = spec::loadDeploySpec(specFile);
  if (!specResult)
    return specResult.error();
  model::LoadOptions load;
  load.verifyData = options.verifyData;
  load.bindMtp = specResult->speculative.method == spec::SpeculativeMethod::Mtp;
  auto modelResult = model::loadModel(specResult->modelDir, load);
  if (!modelResult)
    return modelResult.error();

  CheckReport r{std::move(*specResult), std::move(*modelResult), 0, 0, 0, {}, 0, 0, {}, {}};
  VOLT_RETURN_IF_ERROR(checkSpecAgainstModel(r.spec, r.model, r.maxModelLen));
  if (options.deep) {
    if (!r.model.hasWeights())
      return Error(r.spec.specFile.string() + ": --deep reads the weights, and the model "
                   "directory " + r.model.dir.string() + " has none");
    model::ValueScanOptions scan;
    scan.progress = options.progress;
    model::ValueScanReport deep = model::scanCheckpoint(*r.model.checkpoint, scan);
    if (!deep.findings.empty()) {
      std::string text = r.model.dir.string() + ": " + formatCount(deep.findings.size()) +
                         " tensor" + (deep.findings.size() == 1 ? "" : "s") +
                         " hold values a model cannot run with:";
      constexpr size_t kShown = 10;
      for (size_t i = 0; i < deep.findings.size() && i < kShown; ++i) {
        const model::ValueFinding &f = deep.findings[i];
        std::vector<std::string> what;
        if (f.nans)
          what.push_back(formatCount(f.nans) + " NaN");
        if (f.infinities)
          what.push_back(formatCount(f.infinities) + " infinite");
        if (f.negatives)
          what.push_back(formatCount(f.negatives) + " negative (a scale must be >= 0)");
        text += "\n  " + f.file + ": " + f.tensor + ": " + joinList(what) +
                " (first at element " + std::to_string(f.firstIndex) + ")";
      }
      if (deep.findings.size() > kShown)
        text += "\n  ... and " + formatCount(deep.findings.size() - kShown) + " more tensors";
      return Error(text);
    }
    r.deep = std::move(deep);
  }

  std::map<std::pair<std::string, std::string>, WeightGroup> groups;
  auto addGroup = [&](const std::string &name, const std::string &format, uint64_t params,
                      uint64_t bytes) {
    WeightGroup &g = groups[{roleOf(name), format}];
    g.role = roleOf(name);
    g.format = format;
    ++g.count;
    g.params += params;
    g.bytes += bytes;
    r.totalParams += params;
    r.totalBytes += bytes;
  };
  r.model.forEachLinear([&](const model::Linear &l) {
    if (r.model.lmHeadTied && &l == &r.model.lmHead)
      return; // its storage is embed_tokens
    uint64_t n = static_cast<uint64_t>(l.outFeatures) * static_cast<uint64_t>(l.inFeatures);
    uint64_t biasBytes = l.bias ? l.bias->bytes() : 0;
    addGroup(l.module, formatOf(l), n, l.bytes() - biasBytes);
  });
  r.model.forEachParam([&](const model::Param &p) {
    addGroup(p.name, std::string(model::dtypeName(p.dtype)), p.numElements(), p.bytes());
  });
  for (auto &[key, g] : groups)
    r.groups.push_back(g);
  std::stable_sort(r.groups.begin(), r.groups.end(),
                   [](const WeightGroup &a, const WeightGroup &b) { return a.bytes > b.bytes; });

  bool quantize = r.spec.weights.quantize == spec::WeightQuantization::Nvfp4;
  model::RankWeights rank = model::weightsPerRank(r.model, r.spec.tensorParallelSize, quantize);
  r.rankNvfp4Bytes = rank.nvfp4Bytes;
  r.rankFp8Bytes = rank.fp8Bytes;
  r.rankDenseBytes = rank.denseBytes;
  bool anyNvfp4 = rank.nvfp4Bytes > 0;
  for (int tp : sharding::kTensorParallelSizes) {
    if (tp == r.spec.tensorParallelSize ||
        !model::checkTensorParallel(r.model.config, tp, anyNvfp4))
      continue;
    r.otherTensorParallel.emplace_back(tp, model::weightsPerRank(r.model, tp, quantize).total());
  }
  return r;
}

std::string formatCheckReport(const CheckReport &r, bool listTensors) {
  const model::ModelConfig &c = r.model.config;
  const spec::Sku &sku = r.spec.sku;
  std::ostringstream out;
  auto row = [&](const std::string &label, const std::string &value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "  %-16s", label.c_str());
    out << buf << value << "\n";
  };
  out << r.spec.specFile.string() << ": valid\n";
  row("target", sku.name + " (" + std::string(spec::archName(sku.arch)) + ", " +
                    formatBytes(sku.memoryBytes) + (sku.nominal ? ", nominal" : "") + ") x " +
                    std::to_string(r.spec.tensorParallelSize));
  row("model", r.model.dir.string() + " (" + c.architecture + ")");
  int64_t moeLayers = 0;
  for (const model::Layer &l : r.model.layers)
    moeLayers += l.isMoe();
  row("layers", std::to_string(c.numHiddenLayers) +
                    (c.isMoe() ? " (" + std::to_string(moeLayers) + " MoE, " +
                                     std::to_string(c.numHiddenLayers - moeLayers) + " dense)"
                               : ""));
  row("attention", "hidden " + std::to_string(c.hiddenSize) + ", heads " +
                       std::to_string(c.numAttentionHeads) + " / kv " +
                       std::to_string(c.numKeyValueHeads) + ", head_dim " +
                       std::to_string(c.headDim) + (c.qkNorm ? ", QK-norm" : "") +
                       (c.qkvBias ? ", q/k/v bias" : ""));
  if (c.isMoe()) {
    std::string experts = std::to_string(c.numExperts) + " per layer, top " +
                          std::to_string(c.numExpertsPerTok) + ", width " +
                          std::to_string(c.moeIntermediateSize) +
                          (c.normTopkProb ? ", renormalised" : "");
    if (c.sharedExpertIntermediateSize > 0)
      experts += ", shared expert " + std::to_string(c.sharedExpertIntermediateSize);
    row("experts", experts);
  }
  row("vocab", std::to_string(c.vocabSize) + (c.tieWordEmbeddings ? " (tied embeddings)" : ""));
  row("context", "max_model_len " + std::to_string(r.maxModelLen) + " (max_position_embeddings " +
                     std::to_string(c.maxPositionEmbeddings) + ")");
  std::string quant = r.model.quant.name();
  if (r.model.quant.format != model::QuantFormat::None) {
    quant += " (" + r.model.quant.source + ", " + r.model.quant.algorithm + ")";
    if (r.model.quant.activationsQuantized)
      quant += "; activation scales ignored: runs weight-only with FP16 activations";
    if (!r.model.quant.kvCacheQuant.empty())
      quant += "; " + r.model.quant.kvCacheNote();
  }
  row("quantization", quant);
  row("checkpoint",
      r.model.hasWeights()
          ? r.model.checkpoint->layout() + ", " +
                formatCount(r.model.checkpoint->tensors().size()) + " tensors, " +
                formatBytes(r.model.checkpoint->dataBytes())
          : "no weight files (config only): formats predicted from the quantization config");
  row("parameters", formatParams(r.totalParams) + ", " + formatBytes(r.totalBytes) + " as stored");
  out << "  weights by role (format, count, parameters, bytes):\n";
  for (const WeightGroup &g : r.groups) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "    %-34s %-6s %7s %12s %12s\n", g.role.c_str(),
                  g.format.c_str(), formatCount(g.count).c_str(), formatParams(g.params).c_str(),
                  formatBytes(g.bytes).c_str());
    out << buf;
  }
  const uint64_t rankBytes = r.rankNvfp4Bytes + r.rankFp8Bytes + r.rankDenseBytes;
  std::string perRank = formatBytes(rankBytes) + " (NVFP4 " + formatBytes(r.rankNvfp4Bytes) +
                        (r.rankFp8Bytes ? " + FP8 " + formatBytes(r.rankFp8Bytes) : "") +
                        " + FP16 " + formatBytes(r.rankDenseBytes) + ")";
  if (r.spec.weights.quantize == spec::WeightQuantization::Nvfp4)
    perRank += " after quantizing to NVFP4";
  bool heldInFp16 = false;
  r.model.forEachLinear(
      [&](const model::Linear &l) { heldInFp16 |= l.isFp8() && l.fp8BlockScaled; });
  if (r.rankFp8Bytes)
    perRank += "; FP8 kept as E4M3 with row scales (run weight-only)";
  if (heldInFp16)
    perRank += "; block-scaled FP8 held in FP16";
  row("weights/GPU",
      "tensor_parallel_size " + std::to_string(r.spec.tensorParallelSize) + ": " + perRank);
  double budget = static_cast<double>(sku.memoryBytes) * r.spec.gpuMemoryUtilization;
  double share = 100.0 * static_cast<double>(rankBytes) / budget;
  row("", fixed(share, 1) + "% of " + formatBytes(static_cast<uint64_t>(budget)) +
              " (gpu_memory_utilization " + fixed(r.spec.gpuMemoryUtilization, 2) + " of " +
              formatBytes(sku.memoryBytes) +
              "); the KV cache and activations get "
              "the rest, planned by voltc compile");
  for (const auto &[tp, bytes] : r.otherTensorParallel)
    row("", "(tensor_parallel_size " + std::to_string(tp) + " would hold " + formatBytes(bytes) +
                " per GPU)");
  if (!r.model.unusedTensors.empty()) {
    std::string names;
    for (size_t i = 0; i < r.model.unusedTensors.size() && i < 3; ++i)
      names += (i ? ", " : "") + r.model.unusedTensors[i];
    if (r.model.unusedTensors.size() > 3)
      names += ", ...";
    row("unused tensors", formatCount(r.model.unusedTensors.size()) + " (" + names + ")");
  }
  for (const model::Model::SetAside &a : r.model.setAside)
    if (a.tensors > 0)
      row("not run", a.what + ": " + formatCount(a.tensors) + " tensors (" + a.prefix + "*)");
  if (r.deep) {
    const model::ValueScanReport &d = *r.deep;
    row("deep check",
        "every value of " + formatCount(d.tensorsScanned) + " floating-point tensors (" +
            formatBytes(d.bytesScanned) + ") read in " + fixed(d.seconds, 1) + " s (" +
            formatBytes(static_cast<uint64_t>(static_cast<double>(d.bytesScanned) /
                                              std::max(d.seconds, 1e-6))) +
            "/s): no NaN, no infinity, no negative scale");
    if (d.bytesSkipped)
      row("", formatBytes(d.bytesSkipped) + " of packed NVFP4 and integer data not read (it "
                                            "cannot hold either)");
  }
  if (listTensors) {
    out << "  tensors:\n";
    r.model.forEachLinear([&](const model::Linear &l) {
      out << "    " << l.module << " [" << l.outFeatures << ", " << l.inFeatures << "] "
          << formatOf(l);
      if (l.isNvfp4() && l.weight)
        out << " global_scale " << l.globalScale;
      out << "\n";
    });
    r.model.forEachParam([&](const model::Param &p) {
      out << "    " << p.name << " " << model::formatShape(p.shape) << " "
          << model::dtypeName(p.dtype) << "\n";
    });
  }
  return out.str();
}

nlohmann::json checkReportJson(const CheckReport &r) {
  const model::ModelConfig &c = r.model.config;
  nlohmann::json groups = nlohmann::json::array();
  for (const WeightGroup &g : r.groups)
    groups.push_back({{"role", g.role},
                      {"format", g.format},
                      {"count", g.count},
                      {"params", g.params},
                      {"bytes", g.bytes}});
  nlohmann::json others = nlohmann::json::object();
  for (const auto &[tp, bytes] : r.otherTensorParallel)
    others[std::to_string(tp)] = bytes;
  nlohmann::json notRun = nlohmann::json::array();
  for (const model::Model::SetAside &a : r.model.setAside)
    if (a.tensors > 0)
      notRun.push_back({{"what", a.what}, {"prefix", a.prefix}, {"tensors", a.tensors}});
  return {{"spec", r.spec.specFile.string()},
          {"valid", true},
          {"target", r.spec.sku.name},
          {"arch", std::string(spec::archName(r.spec.sku.arch))},
          {"tensor_parallel_size", r.spec.tensorParallelSize},
          {"model",
           {{"dir", r.model.dir.string()},
            {"architecture", c.architecture},
            {"num_hidden_layers", c.numHiddenLayers},
            {"hidden_size", c.hiddenSize},
            {"num_attention_heads", c.numAttentionHeads},
            {"num_key_value_heads", c.numKeyValueHeads},
            {"head_dim", c.headDim},
            {"num_experts", c.numExperts},
            {"num_experts_per_tok", c.numExpertsPerTok},
            {"vocab_size", c.vocabSize},
            {"max_position_embeddings", c.maxPositionEmbeddings}}},
          {"max_model_len", r.maxModelLen},
          {"quantization",
           {{"format", r.model.quant.name()},
            {"source", r.model.quant.source},
            {"algorithm", r.model.quant.algorithm}}},
          {"has_weights", r.model.hasWeights()},
          {"parameters", r.totalParams},
          {"bytes", r.totalBytes},
          {"weight_groups", groups},
          {"weights_per_gpu",
           {{"nvfp4_bytes", r.rankNvfp4Bytes},
            {"fp8_bytes", r.rankFp8Bytes},
            {"dense_bytes", r.rankDenseBytes},
            {"total_bytes", r.rankNvfp4Bytes + r.rankFp8Bytes + r.rankDenseBytes}}},
          {"weights_per_gpu_at_other_tensor_parallel_sizes", others},
          {"unused_tensors", r.model.unusedTensors},
          {"not_run", notRun},
          {"deep_check", r.deep ? nlohmann::json{{"tensors", r.deep->tensorsScanned},
                                                  {"bytes", r.deep->bytesScanned},
                                                  {"bytes_not_read", r.deep->bytesSkipped},
                                                  {"seconds", r.deep->seconds},
                                                  {"findings", 0}}
                                : nlohmann::json()}};
}

} // namespace volt::driver
