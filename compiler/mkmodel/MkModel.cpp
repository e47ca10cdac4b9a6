//===- MkModel.cpp - writes synthetic model directories ------------------===//
#include "compiler/mkmodel/MkModel.h"

#include "compiler/model/Family.h"
#include "compiler/model/Safetensors.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"
#include "runtime/support/Strings.h"

#include <cmath>
#include <cstring>
#include <fstream>

namespace volt::mkmodel {
namespace {

using model::DType;
using nlohmann::json;

/// SplitMix64: small, fast, and good enough for test weights.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  float normal() {
    double u1 = uniform(), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1 + 1e-300)) *
                              std::cos(6.283185307179586 * u2));
  }

private:
  uint64_t state_;
};

/// Every tensor gets its own stream, seeded from the model seed and its
/// name, so values do not depend on write order or sharding.
Rng rngFor(uint64_t seed, const std::string &name) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : name)
    h = (h ^ c) * 1099511628211ull;
  return Rng(h);
}

/// Tensors above this size are written as holes in zeros mode.
constexpr uint64_t kSmallTensorBytes = 1 << 16;

struct PendingTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; ///< empty: zeros
  uint64_t size() const {
    uint64_t n = model::dtypeSize(dtype);
    for (int64_t d : shape)
      n *= static_cast<uint64_t>(d);
    return n;
  }
};

std::vector<uint8_t> bf16Bytes(std::span<const float> values) {
  std::vector<uint8_t> out(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t b = floatToBf16(values[i]);
    std::memcpy(&out[2 * i], &b, 2);
  }
  return out;
}

std::vector<uint8_t> f32Bytes(float v) {
  std::vector<uint8_t> out(4);
  std::memcpy(out.data(), &v, 4);
  return out;
}

/// Builds the tensor list of a model in its family's names and the
/// options' format.
class Emitter {
public:
  Emitter(const Options &o, const model::ModelConfig &c) : o_(o), c_(c) {}

  std::vector<PendingTensor> take() { return std::move(tensors_); }

  /// Writes every linear layer dense from now on (what the exports leave
  /// unquantized whole: the MTP head).
  void setDense(bool dense) { dense_ = dense; }

  /// A dense parameter: `base + spread * normal`.
  void param(const std::string &name, std::vector<int64_t> shape, float base, float spread) {
    PendingTensor t{name, DType::BF16, std::move(shape), {}};
    if (!o_.zeros || t.size() <= kSmallTensorBytes || base != 0.0f) {
      std::vector<float> v = values(name, t.size() / 2, base, spread);
      t.bytes = bf16Bytes(v);
    }
    tensors_.push_back(std::move(t));
  }

  struct Part {
    std::string module;
    int64_t out, in;
    bool bias = false;
  };

  /// Linear layers that a fused GEMM reads together (q/k/v, gate/up): in
  /// ModelOpt exports they share one global scale.
  void linears(const std::vector<Part> &parts, bool quantizable) {
    bool quantize = quantizable && !dense_ && o_.format != Format::BF16;
    if (o_.format == Format::ModelOptMixed && !dense_) {
      if (isFp8Module(parts.front().module))
        return fp8Linears(parts);
      quantize = quantizable || parts.front().module == "lm_head";
    }
    if (o_.format == Format::CompressedTensorsFp8) {
      if (!dense_ && (quantizable || isFp8Module(parts.front().module)))
        return fp8Linears(parts, /*perChannel=*/true);
      quantize = false;
    }
    if (!quantize) {
      for (const Part &p : parts) {
        param(p.module + ".weight", {p.out, p.in}, 0.0f, 1.0f / std::sqrt(float(p.in)));
        if (p.bias)
          param(p.module + ".bias", {p.out}, 0.0f, 0.1f);
      }
      return;
    }
    std::vector<std::vector<float>> weights;
    float sharedAmax = 0.0f;
    for (const Part &p : parts) {
      if (o_.zeros) {
        weights.emplace_back();
        continue;
      }
      weights.push_back(values(p.module + ".weight", uint64_t(p.out * p.in), 0.0f,
                               1.0f / std::sqrt(float(p.in))));
      sharedAmax = std::max(sharedAmax, nvfp4::absMax(weights.back()));
    }
    bool shareGlobal = o_.format == Format::ModelOpt && sharedAmax > 0.0f;
    for (size_t i = 0; i < parts.size(); ++i) {
      const Part &p = parts[i];
      nvfp4::Quantized q;
      if (!o_.zeros)
        q = shareGlobal
                ? nvfp4::quantizeWithGlobalScale(weights[i], p.out, p.in,
                                                 sharedAmax / (nvfp4::kE2M1Max * nvfp4::kE4M3Max))
                : nvfp4::quantize(weights[i], p.out, p.in);
      bool ct = o_.format == Format::CompressedTensors;
      tensors_.push_back({p.module + (ct ? ".weight_packed" : ".weight"),
                          DType::U8,
                          {p.out, p.in / 2},
                          std::move(q.packed)});
      tensors_.push_back({p.module + ".weight_scale",
                          DType::F8E4M3,
                          {p.out, p.in / nvfp4::kBlockSize},
                          std::move(q.scales)});
      if (ct) {
        tensors_.push_back(
            {p.module + ".weight_global_scale", DType::F32, {1}, f32Bytes(1.0f / q.globalScale)});
        tensors_.push_back({p.module + ".input_global_scale", DType::F32, {1}, f32Bytes(1.0f)});
      } else {
        tensors_.push_back({p.module + ".weight_scale_2", DType::F32, {}, f32Bytes(q.globalScale)});
        tensors_.push_back({p.module + ".input_scale", DType::F32, {}, f32Bytes(1.0f)});
      }
      if (p.bias)
        param(p.module + ".bias", {p.out}, 0.0f, 0.1f);
    }
  }

  /// The modules NVIDIA's mixed export stores in FP8.
  static bool isFp8Module(const std::string &m) {
    for (const char *suffix : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                               "self_attn.o_proj", "linear_attn.in_proj_qkv",
                               "linear_attn.in_proj_qkvz", "linear_attn.in_proj_z",
                               "linear_attn.out_proj"})
      if (m.ends_with(suffix))
        return true;
    return false;
  }

  /// FP8 E4M3 weights, element = nearest E4M3 of w / scale. ModelOpt's
  /// per-tensor recipe: one F32 scale = amax / 448 and a static input scale
  /// beside it. llm-compressor's FP8_DYNAMIC (`perChannel`): a BF16 scale
  /// per output row, shape [out, 1], = the row's amax / 448 (rounded to
  /// BF16 before the elements are encoded), and no input scale (dynamic).
  void fp8Linears(const std::vector<Part> &parts, bool perChannel = false) {
    for (const Part &p : parts) {
      PendingTensor t{p.module + ".weight", DType::F8E4M3, {p.out, p.in}, {}};
      std::vector<float> scales(perChannel ? static_cast<size_t>(p.out) : 1, 1.0f);
      if (!o_.zeros) {
        std::vector<float> w = values(p.module + ".weight", uint64_t(p.out * p.in), 0.0f,
                                      1.0f / std::sqrt(float(p.in)));
        const size_t run = perChannel ? static_cast<size_t>(p.in) : w.size();
        t.bytes.resize(w.size());
        for (size_t r = 0; r < scales.size(); ++r) {
          std::span<const float> row(w.data() + r * run, run);
          const float amax = nvfp4::absMax(row);
          float scale = amax > 0.0f ? amax / nvfp4::kE4M3Max : 1.0f;
          if (perChannel)
            scale = bf16ToFloat(floatToBf16(scale));
          scales[r] = scale;
          for (size_t i = 0; i < run; ++i)
            t.bytes[r * run + i] = nvfp4::encodeE4M3(row[i] / scale);
        }
      }
      tensors_.push_back(std::move(t));
      if (perChannel) {
        tensors_.push_back({p.module + ".weight_scale", DType::BF16, {p.out, 1}, bf16Bytes(scales)});
      } else {
        tensors_.push_back({p.module + ".weight_scale", DType::F32, {}, f32Bytes(scales[0])});
        tensors_.push_back({p.module + ".input_scale", DType::F32, {}, f32Bytes(1.0f)});
      }
      if (p.bias)
        param(p.module + ".bias", {p.out}, 0.0f, 0.1f);
    }
  }

  void gatedMlp(const std::string &prefix, const char *gate, const char *up, const char *down,
                int64_t width) {
    int64_t h = c_.hiddenSize;
    linears({{prefix + gate, width, h}, {prefix + up, width, h}}, true);
    linears({{prefix + down, h, width}}, true);
  }

private:
  std::vector<float> values(const std::string &name, uint64_t n, float base, float spread) {
    Rng rng = rngFor(o_.seed, name);
    std::vector<float> v(n);
    for (float &x : v)
      x = base + spread * rng.normal();
    return v;
  }

  const Options &o_;
  const model::ModelConfig &c_;
  std::vector<PendingTensor> tensors_;
  bool dense_ = false;
};

/// Linear attention: projections grouped per key head (Qwen3-Next) or flat
/// (Qwen3.5), the conv, and the gates' parameters spread so that decays
/// differ per head.
void gatedDeltaNet(Emitter &e, const model::ModelConfig &c, const std::string &m, bool flat) {
  const int64_t h = c.hiddenSize, hk = c.linearNumKeyHeads, hv = c.linearNumValueHeads;
  const int64_t dk = c.linearKeyHeadDim, dv = c.linearValueHeadDim;
  // The NVFP4 exports keep linear attention's inputs in BF16.
  if (flat) {
    e.linears({{m + "in_proj_qkv", 2 * hk * dk + hv * dv, h}}, false);
    e.linears({{m + "in_proj_z", hv * dv, h}}, false);
    e.linears({{m + "in_proj_b", hv, h}}, false);
    e.linears({{m + "in_proj_a", hv, h}}, false);
  } else {
    e.linears({{m + "in_proj_qkvz", hk * (2 * dk + 2 * (hv / hk) * dv), h}}, false);
    e.linears({{m + "in_proj_ba", 2 * hv, h}}, false);
  }
  e.param(m + "conv1d.weight", {c.linearConvDim(), 1, c.linearConvKernelDim}, 0.0f, 0.5f);
  // A = exp(A_log) around 0.4, dt_bias around -0.5: per-token decays spread
  // over (0, 1) rather than near 0 or 1.
  e.param(m + "A_log", {hv}, -1.0f, 0.8f);
  e.param(m + "dt_bias", {hv}, -0.5f, 1.0f);
  e.param(m + "norm.weight", {dv}, 1.0f, 0.2f);
  e.linears({{m + "out_proj", h, hv * dv}}, true);
}

/// One decoder layer under `p` with mixer `mixer`, a MoE block where `moe`.
/// Qwen3.5's BF16 releases store the experts stacked (`fused`).
void decoderLayer(Emitter &e, const model::ModelConfig &c, const std::string &p,
                  model::MixerKind mixer, bool moe, bool fused) {
  const int64_t h = c.hiddenSize, hd = c.headDim;
  // Zero-centred norms (x̂ · (1 + w)) are written around 0, others around 1.
  const float normBase = c.zeroCentredNorms ? 0.0f : 1.0f;
  const bool flat = c.family->name.starts_with("qwen3.5");
  e.param(p + "input_layernorm.weight", {h}, normBase, 0.1f);
  if (mixer == model::MixerKind::GatedDeltaNet) {
    gatedDeltaNet(e, c, p + "linear_attn.", flat);
  } else {
    std::string a = p + "self_attn.";
    const int64_t qRows = c.numAttentionHeads * hd * (c.attnOutputGate ? 2 : 1);
    e.linears({{a + "q_proj", qRows, h, c.qkvBias},
               {a + "k_proj", c.numKeyValueHeads * hd, h, c.qkvBias},
               {a + "v_proj", c.numKeyValueHeads * hd, h, c.qkvBias}},
              !c.attnOutputGate);
    e.linears({{a + "o_proj", h, c.numAttentionHeads * hd}}, true);
    if (c.qkNorm) {
      e.param(a + "q_norm.weight", {hd}, normBase, 0.1f);
      e.param(a + "k_norm.weight", {hd}, normBase, 0.1f);
    }
  }
  e.param(p + "post_attention_layernorm.weight", {h}, normBase, 0.1f);
  if (!moe) {
    e.gatedMlp(p + "mlp.", "gate_proj", "up_proj", "down_proj", c.intermediateSize);
    return;
  }
  bool mixtral = c.family->name == "mixtral";
  std::string m = p + (mixtral ? "block_sparse_moe." : "mlp.");
  const int64_t width = c.moeIntermediateSize;
  e.linears({{m + "gate", c.numExperts, h}}, false);
  if (fused) {
    e.param(m + "experts.gate_up_proj", {c.numExperts, 2 * width, h}, 0.0f,
            1.0f / std::sqrt(float(h)));
    e.param(m + "experts.down_proj", {c.numExperts, h, width}, 0.0f,
            1.0f / std::sqrt(float(width)));
  } else {
    for (int64_t x = 0; x < c.numExperts; ++x) {
      std::string ep = m + "experts." + std::to_string(x) + ".";
      if (mixtral)
        e.gatedMlp(ep, "w1", "w3", "w2", width);
      else
        e.gatedMlp(ep, "gate_proj", "up_proj", "down_proj", width);
    }
  }
  if (c.sharedExpertIntermediateSize > 0) {
    e.gatedMlp(m + "shared_expert.", "gate_proj", "up_proj", "down_proj",
               c.sharedExpertIntermediateSize);
    e.linears({{m + "shared_expert_gate", 1, h}}, false);
  }
}

/// Qwen3.5's vision tower under model.visual., in the names and shapes of
/// transformers' Qwen3_5VisionModel for `vision` (its config).
void visionTower(Emitter &e, const json &vision) {
  const int64_t hidden = vision.value("hidden_size", int64_t(0));
  const int64_t width = vision.value("intermediate_size", int64_t(0));
  const int64_t out = vision.value("out_hidden_size", int64_t(0));
  const int64_t patch = vision.value("patch_size", int64_t(0));
  const int64_t temporal = vision.value("temporal_patch_size", int64_t(0));
  const int64_t merge = vision.value("spatial_merge_size", int64_t(0));
  const int64_t channels = vision.value("in_channels", int64_t(3));
  const int64_t merged = hidden * merge * merge;
  const std::string v = "model.visual.";
  auto linear = [&](const std::string &name, int64_t rows, int64_t cols) {
    e.param(name + ".weight", {rows, cols}, 0.0f, 1.0f / std::sqrt(float(cols)));
    e.param(name + ".bias", {rows}, 0.0f, 0.02f);
  };
  auto norm = [&](const std::string &name, int64_t n) {
    e.param(name + ".weight", {n}, 1.0f, 0.1f);
    e.param(name + ".bias", {n}, 0.0f, 0.02f);
  };
  e.param(v + "patch_embed.proj.weight", {hidden, channels, temporal, patch, patch}, 0.0f, 0.05f);
  e.param(v + "patch_embed.proj.bias", {hidden}, 0.0f, 0.02f);
  e.param(v + "pos_embed.weight", {vision.value("num_position_embeddings", int64_t(0)), hidden},
          0.0f, 0.02f);
  for (int64_t b = 0; b < vision.value("depth", int64_t(0)); ++b) {
    const std::string p = v + "blocks." + std::to_string(b) + ".";
    norm(p + "norm1", hidden);
    norm(p + "norm2", hidden);
    linear(p + "attn.qkv", 3 * hidden, hidden);
    linear(p + "attn.proj", hidden, hidden);
    linear(p + "mlp.linear_fc1", width, hidden);
    linear(p + "mlp.linear_fc2", hidden, width);
  }
  norm(v + "merger.norm", hidden);
  linear(v + "merger.linear_fc1", merged, merged);
  linear(v + "merger.linear_fc2", out, merged);
}

/// The MTP head (vLLM's Qwen3-Next / Qwen3.5 layout): fc over [embedding |
/// hidden], its two norms, one full-attention layer and a final norm.
void mtpHead(Emitter &e, const model::ModelConfig &c, bool fused) {
  const int64_t h = c.hiddenSize;
  const float normBase = c.zeroCentredNorms ? 0.0f : 1.0f;
  e.setDense(true);
  e.linears({{"mtp.fc", h, 2 * h}}, false);
  e.param("mtp.pre_fc_norm_embedding.weight", {h}, normBase, 0.1f);
  e.param("mtp.pre_fc_norm_hidden.weight", {h}, normBase, 0.1f);
  decoderLayer(e, c, "mtp.layers.0.", model::MixerKind::Attention, c.isMoe(), fused);
  e.param("mtp.norm.weight", {h}, normBase, 0.1f);
  e.setDense(false);
}

std::vector<PendingTensor> modelTensors(const Options &o, const model::ModelConfig &c,
                                        const json &config) {
  Emitter e(o, c);
  const int64_t h = c.hiddenSize;
  const float normBase = c.zeroCentredNorms ? 0.0f : 1.0f;
  const bool qwen3_5 = c.family->name.starts_with("qwen3.5");
  const bool fused = qwen3_5 && o.format == Format::BF16;
  e.param(c.tensorPrefix + "embed_tokens.weight", {c.vocabSize, h}, 0.0f, 1.0f);
  for (int64_t i = 0; i < c.numHiddenLayers; ++i)
    decoderLayer(e, c, c.layerPrefix(i), c.mixers[static_cast<size_t>(i)], c.isMoeLayer(i), fused);
  e.param(c.tensorPrefix + "norm.weight", {h}, normBase, 0.1f);
  if (!c.tieWordEmbeddings)
    e.linears({{"lm_head", c.vocabSize, h}}, false);
  if (qwen3_5) {
    if (const auto vision = config.find("vision_config"); vision != config.end())
      visionTower(e, *vision);
    mtpHead(e, c, fused);
  }
  return e.take();
}

/// llm-compressor's FP8 ignore list: the LM head, the routers and the
/// shared-expert gate, linear attention's small b/a projections, and (for
/// Qwen3.5) the vision tower and the MTP head.
json fp8IgnoreList(const model::ModelConfig &c) {
  json list = json::array({"lm_head"});
  if (c.isMoe())
    list.push_back(c.family->name == "mixtral" ? "re:.*block_sparse_moe\\.gate$"
                                               : "re:.*mlp\\.gate$");
  if (c.sharedExpertIntermediateSize > 0)
    list.push_back("re:.*shared_expert_gate$");
  if (c.hasMixer(model::MixerKind::GatedDeltaNet))
    list.push_back("re:.*linear_attn\\.in_proj_(b|a|ba)$");
  if (c.family->name.starts_with("qwen3.5")) {
    list.push_back("re:^model\\.visual\\..*");
    list.push_back("re:^mtp\\..*");
  }
  return list;
}

json excludeList(const model::ModelConfig &c, Format format) {
  bool ct = format == Format::CompressedTensors;
  json list = json::array({"lm_head"});
  const std::string layers = c.tensorPrefix + "layers.*.";
  if (c.attnOutputGate) // the hybrids' exports keep attention's inputs unquantized
    for (const char *m : {"q_proj", "k_proj", "v_proj"})
      list.push_back(ct ? std::string("re:.*self_attn\\.") + m + "$"
                        : layers + "self_attn." + m);
  if (c.hasMixer(model::MixerKind::GatedDeltaNet))
    for (const char *m : {"in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b",
                          "in_proj_a"})
      list.push_back(ct ? std::string("re:.*linear_attn\\.") + m + "$"
                        : layers + "linear_attn." + m);
  if (c.family->name == "mixtral")
    list.push_back(ct ? "re:.*block_sparse_moe\\.gate$" : "model.layers.*.block_sparse_moe.gate");
  else if (c.isMoe())
    list.push_back(ct ? "re:.*mlp\\.gate$" : layers + "mlp.gate");
  if (c.sharedExpertIntermediateSize > 0)
    list.push_back(ct ? "re:.*shared_expert_gate$" : layers + "mlp.shared_expert_gate");
  if (c.family->name.starts_with("qwen3.5")) { // the vision tower and the MTP head stay BF16
    list.push_back(ct ? "re:^model\\.visual\\..*" : "model.visual*");
    list.push_back(ct ? "re:^mtp\\..*" : "mtp*");
  }
  return list;
}

Status writeText(const std::filesystem::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Error(path.string() + ": cannot create");
  out << text;
  out.close();
  if (!out)
    return Error(path.string() + ": cannot write");
  return Status::success();
}

const char *kChatTemplate =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

} // namespace

const char *formatName(Format format) {
  switch (format) {
  case Format::ModelOpt:
    return "modelopt";
  case Format::ModelOptMixed:
    return "modelopt-mixed";
  case Format::CompressedTensors:
    return "compressed-tensors";
  case Format::CompressedTensorsFp8:
    return "compressed-tensors-fp8";
  case Format::BF16:
    return "bf16";
  }
  return "?";
}

std::vector<std::string> formatNames() {
  return {"modelopt", "compressed-tensors", "bf16", "modelopt-mixed", "compressed-tensors-fp8"};
}

Result<Format> parseFormat(const std::string &name) {
  for (Format f : {Format::ModelOpt, Format::CompressedTensors, Format::BF16, Format::ModelOptMixed,
                   Format::CompressedTensorsFp8})
    if (name == formatName(f))
      return f;
  return Error("unknown format '" + name + "' (valid: " + joinList(formatNames()) + ")");
}

Result<Written> writeModelReport(const Options &o) {
  auto configJson = presetConfig(o.family, o.preset);
  if (!configJson)
    return configJson.error();
  if (o.preset != "tiny" && !o.configOnly && !o.zeros)
    return Error("preset '" + o.preset +
                 "' has the size of the published model; write it with "
                 "--config-only or --zeros");
  VOLT_RETURN_IF_ERROR(applyShape(*configJson, o.family, o.shape));
  if (o.shards < 1)
    return Error("--shards must be at least 1");
  json config = *configJson;
  auto parsed = model::parseModelConfig(config, "config.json");
  if (!parsed)
    return parsed.error();
  const model::ModelConfig &c = *parsed;

  std::error_code ec;
  std::filesystem::create_directories(o.outDir, ec);
  if (ec)
    return Error(o.outDir.string() + ": cannot create directory: " + ec.message());
  Written written;
  auto emit = [&](const std::string &name, const json &j) -> Status {
    std::filesystem::path path = o.outDir / name;
    VOLT_RETURN_IF_ERROR(writeText(path, j.dump(2) + "\n"));
    written.files.push_back(path);
    return Status::success();
  };

  if (o.format == Format::CompressedTensors) {
    json act = {{"num_bits", 4},    {"type", "float"},    {"strategy", "tensor_group"},
                {"group_size", 16}, {"dynamic", "local"}, {"symmetric", true}};
    json weights = {{"num_bits", 4},       {"type", "float"},  {"strategy", "tensor_group"},
                    {"group_size", 16},    {"dynamic", false}, {"symmetric", true},
                    {"observer", "minmax"}};
    config["quantization_config"] = {
        {"quant_method", "compressed-tensors"},
        {"format", "nvfp4-pack-quantized"},
        {"config_groups",
         {{"group_0",
           {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", act}}}}},
        {"ignore", excludeList(c, o.format)},
        {"quantization_status", "compressed"},
        {"kv_cache_scheme", nullptr}};
  } else if (o.format == Format::CompressedTensorsFp8) {
    json weights = {{"num_bits", 8},         {"type", "float"},     {"strategy", "channel"},
                    {"symmetric", true},     {"dynamic", false},    {"observer", "minmax"},
                    {"block_structure", nullptr}};
    json act = {{"num_bits", 8}, {"type", "float"}, {"strategy", "token"},
                {"symmetric", true}, {"dynamic", true}};
    config["quantization_config"] = {
        {"quant_method", "compressed-tensors"},
        {"format", "float-quantized"},
        {"config_groups",
         {{"group_0",
           {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", act}}}}},
        {"ignore", fp8IgnoreList(c)},
        {"quantization_status", "compressed"},
        {"kv_cache_scheme", nullptr}};
  } else if (o.format == Format::ModelOptMixed) {
    // The per-layer map from the tensors themselves (names and dtypes only:
    // a zero-filled probe costs no random numbers): each FP8 or NVFP4
    // module, the experts of a layer under their parent "...mlp.experts".
    Options probe = o;
    probe.zeros = true;
    json layers = json::object();
    for (const PendingTensor &t : modelTensors(probe, c, config)) {
      if (!t.name.ends_with(".weight") ||
          (t.dtype != DType::F8E4M3 && t.dtype != DType::U8))
        continue;
      std::string module = t.name.substr(0, t.name.size() - 7);
      if (size_t at = module.find(".experts."); at != std::string::npos)
        module.resize(at + 8);
      layers[module] = t.dtype == DType::F8E4M3
                           ? json{{"quant_algo", "FP8"}}
                           : json{{"quant_algo", "NVFP4"}, {"group_size", 16}};
    }
    json exclude = json::array();
    for (const auto &pattern : excludeList(c, Format::ModelOpt)) {
      const std::string text = pattern.get<std::string>();
      if (text != "lm_head" && !Emitter::isFp8Module(text))
        exclude.push_back(text);
    }
    json quant = {{"quant_algo", "MIXED_PRECISION"},
                  {"kv_cache_quant_algo", nullptr},
                  {"exclude_modules", exclude},
                  {"quantized_layers", layers}};
    VOLT_RETURN_IF_ERROR(
        emit("hf_quant_config.json", {{"producer", {{"name", "modelopt"}, {"version", "0.37.0"}}},
                                      {"quantization", quant}}));
  } else if (o.format == Format::ModelOpt) {
    json quant = {{"quant_algo", "NVFP4"},
                  {"kv_cache_quant_algo", nullptr},
                  {"group_size", 16},
                  {"exclude_modules", excludeList(c, o.format)}};
    if (o.modelOptInConfigJson) {
      json inConfig = quant;
      inConfig["quant_method"] = "modelopt";
      config["quantization_config"] = inConfig;
    } else {
      VOLT_RETURN_IF_ERROR(
          emit("hf_quant_config.json", {{"producer", {{"name", "modelopt"}, {"version", "0.29.0"}}},
                                        {"quantization", quant}}));
    }
  }
  VOLT_RETURN_IF_ERROR(emit("config.json", config));
  if (o.configOnly)
    return written;

  // Every model with weights gets a tokenizer over its whole vocabulary, so
  // that a preset's plan (--zeros) compiles as a tiny model's does.
  {
    VOLT_RETURN_IF_ERROR(emit("tokenizer.json", tinyTokenizer(c.vocabSize)));
    VOLT_RETURN_IF_ERROR(
        emit("tokenizer_config.json", {{"tokenizer_class", "Qwen2Tokenizer"},
                                       {"bos_token", nullptr},
                                       {"eos_token", "<|im_end|>"},
                                       {"pad_token", "<|endoftext|>"},
                                       {"model_max_length", c.maxPositionEmbeddings},
                                       {"add_bos_token", false},
                                       {"add_prefix_space", false},
                                       {"clean_up_tokenization_spaces", false},
                                       {"chat_template", kChatTemplate}}));
    VOLT_RETURN_IF_ERROR(
        emit("generation_config.json", {{"eos_token_id", {c.vocabSize - 1, c.vocabSize - 3}},
                                        {"pad_token_id", c.vocabSize - 3}}));
  }

  std::vector<PendingTensor> tensors = modelTensors(o, c, config);
  uint64_t total = 0;
  for (const PendingTensor &t : tensors)
    total += t.size();
  written.tensors = tensors.size();
  written.dataBytes = total;

  // Split in model order into shards of roughly equal size.
  std::vector<model::SafetensorsWriter> writers(static_cast<size_t>(o.shards));
  std::vector<std::string> owner(tensors.size());
  uint64_t perShard = (total + o.shards - 1) / o.shards, cumulative = 0;
  auto shardName = [&](size_t s) {
    if (o.shards == 1)
      return std::string("model.safetensors");
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05d.safetensors", s + 1, o.shards);
    return std::string(buf);
  };
  json weightMap = json::object();
  for (size_t i = 0; i < tensors.size(); ++i) {
    PendingTensor &t = tensors[i];
    size_t s = std::min<size_t>(perShard ? cumulative / perShard : 0, writers.size() - 1);
    cumulative += t.size();
    weightMap[t.name] = shardName(s);
    if (t.bytes.empty() && t.size() > 0)
      writers[s].addZeros(t.name, t.dtype, t.shape);
    else
      writers[s].add(t.name, t.dtype, t.shape, std::move(t.bytes));
  }
  for (size_t s = 0; s < writers.size(); ++s) {
    writers[s].setMetadata("format", "pt");
    std::filesystem::path path = o.outDir / shardName(s);
    VOLT_RETURN_IF_ERROR(writers[s].write(path));
    written.files.push_back(path);
  }
  if (o.shards > 1)
    VOLT_RETURN_IF_ERROR(emit("model.safetensors.index.json",
                              {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}}));
  return written;
}

Status writeModel(const Options &options) { return writeModelReport(options).status(); }

} // namespace volt::mkmodel
