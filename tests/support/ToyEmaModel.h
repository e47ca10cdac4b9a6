//===- ToyEmaModel.h - a made-up hybrid family, for tests -------*- C++ -*-===//
//
// "VoltToyEmaForCausalLM": a decoder whose layers alternate a recurrent
// mixer with state (model::Ema, a per-channel moving average: the plan op
// EmaScan) and full attention, each followed by a gated MLP. No published
// checkpoint has it; it exists to run the state path (cache groups with
// state slots beside a paged KV cache whose layers are 1, 3, ..., the
// engine's slots through chunked prefill and preemption) end to end before
// the real hybrid families use it. registerToyEmaFamily() adds it to the
// family registry of the test process (compiler/model/Family.h); it is not
// one of volt's families.
//
// writeToyEmaModel() writes a BF16 checkpoint of it: config.json (with
// layer_types), mkmodel's tokenizer, model.safetensors with random weights
// that keep the reference able to tell right from wrong: norms away from
// identity, decays spread over (0.05, 0.95).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/mkmodel/MkModel.h"
#include "compiler/model/Family.h"
#include "compiler/model/Safetensors.h"
#include "compiler/model/families/Common.h"
#include "runtime/numerics/Half.h"
#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace volt::testing {

inline constexpr const char *kToyEmaArchitecture = "VoltToyEmaForCausalLM";

inline const model::FamilyDef &toyEmaFamily() {
  static const model::FamilyDef def = [] {
    model::FamilyDef d;
    d.name = "toy-ema";
    d.architectures = {kToyEmaArchitecture};
    d.layerTypes = {{"full_attention", model::MixerKind::Attention},
                    {"ema", model::MixerKind::Ema}};
    d.parseConfig = [](const model::JsonFields &f, model::ModelConfig &c) {
      return model::families::readPositive(f, "intermediate_size", c.intermediateSize);
    };
    d.bindLayer = [](model::TensorBinder &b, const model::ModelConfig &c,
                     int64_t i) -> Result<model::Layer> {
      model::Layer l;
      l.index = i;
      const std::string p = c.layerPrefix(i);
      const int64_t h = c.hiddenSize;
      VOLT_BIND(l.inputNorm, b.param(p + "input_layernorm.weight", {h}));
      VOLT_BIND(l.postAttentionNorm, b.param(p + "post_attention_layernorm.weight", {h}));
      if (c.mixers[static_cast<size_t>(i)] == model::MixerKind::Ema) {
        model::Ema ema;
        VOLT_BIND(ema.decay, b.param(p + "mixer.decay", {h}));
        l.mixer = std::move(ema);
      } else {
        model::Attention attention;
        VOLT_BIND(attention, model::families::bindAttention(b, c, p + "self_attn."));
        l.mixer = std::move(attention);
      }
      model::GatedMlp mlp;
      VOLT_BIND(mlp, model::families::bindGatedMlp(b, p + "mlp.", {}, h, c.intermediateSize));
      l.ffn = std::move(mlp);
      return l;
    };
    return d;
  }();
  return def;
}

/// Registers the toy family once per process.
inline Status registerToyEmaFamily() {
  if (model::familyByArchitecture(kToyEmaArchitecture))
    return Status::success();
  return model::registerFamily(toyEmaFamily());
}

struct ToyEmaShape {
  int64_t vocab = 512, hidden = 64, layers = 4, heads = 4, kvHeads = 2, headDim = 16;
  int64_t intermediate = 128;
};

/// Writes the checkpoint to `dir` (created when missing).
inline Status writeToyEmaModel(const std::filesystem::path &dir, uint64_t seed = 7,
                               const ToyEmaShape &s = {}) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Error(dir.string() + ": cannot create: " + ec.message());
  std::vector<std::string> types;
  for (int64_t i = 0; i < s.layers; ++i)
    types.push_back(i % 2 == 0 ? "ema" : "full_attention");
  nlohmann::json config = {{"architectures", {kToyEmaArchitecture}},
                           {"vocab_size", s.vocab},
                           {"hidden_size", s.hidden},
                           {"num_hidden_layers", s.layers},
                           {"num_attention_heads", s.heads},
                           {"num_key_value_heads", s.kvHeads},
                           {"head_dim", s.headDim},
                           {"intermediate_size", s.intermediate},
                           {"max_position_embeddings", 4096},
                           {"rms_norm_eps", 1e-6},
                           {"rope_theta", 10000.0},
                           {"tie_word_embeddings", false},
                           {"torch_dtype", "bfloat16"},
                           {"layer_types", types}};
  auto writeJson = [&](const char *name, const nlohmann::json &j) -> Status {
    std::ofstream out(dir / name, std::ios::trunc);
    out << j.dump(2) << "\n";
    return out ? Status::success() : Error((dir / name).string() + ": cannot write");
  };
  VOLT_RETURN_IF_ERROR(writeJson("config.json", config));
  VOLT_RETURN_IF_ERROR(writeJson("tokenizer.json", mkmodel::tinyTokenizer(s.vocab)));
  VOLT_RETURN_IF_ERROR(writeJson("tokenizer_config.json", {{"tokenizer_class", "Qwen2Tokenizer"},
                                                           {"eos_token", "<|im_end|>"},
                                                           {"add_bos_token", false}}));

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  model::SafetensorsWriter writer;
  auto tensor = [&](const std::string &name, std::vector<int64_t> shape, auto &&value) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t b = floatToBf16(value());
      std::memcpy(&bytes[static_cast<size_t>(i) * 2], &b, 2);
    }
    writer.add(name, model::DType::BF16, std::move(shape), std::move(bytes));
  };
  auto weight = [&](const std::string &name, int64_t out, int64_t in) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(in));
    tensor(name, {out, in}, [&] { return scale * normal(rng); });
  };
  auto norm = [&](const std::string &name) {
    tensor(name, {s.hidden}, [&] { return 1.0f + 0.2f * normal(rng); });
  };
  std::uniform_real_distribution<float> decay(0.05f, 0.95f);
  tensor("model.embed_tokens.weight", {s.vocab, s.hidden}, [&] { return normal(rng); });
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    norm(p + "input_layernorm.weight");
    norm(p + "post_attention_layernorm.weight");
    if (types[static_cast<size_t>(i)] == "ema") {
      tensor(p + "mixer.decay", {s.hidden}, [&] { return decay(rng); });
    } else {
      weight(p + "self_attn.q_proj.weight", s.heads * s.headDim, s.hidden);
      weight(p + "self_attn.k_proj.weight", s.kvHeads * s.headDim, s.hidden);
      weight(p + "self_attn.v_proj.weight", s.kvHeads * s.headDim, s.hidden);
      weight(p + "self_attn.o_proj.weight", s.hidden, s.heads * s.headDim);
    }
    weight(p + "mlp.gate_proj.weight", s.intermediate, s.hidden);
    weight(p + "mlp.up_proj.weight", s.intermediate, s.hidden);
    weight(p + "mlp.down_proj.weight", s.hidden, s.intermediate);
  }
  norm("model.norm.weight");
  weight("lm_head.weight", s.vocab, s.hidden);
  writer.setMetadata("format", "pt");
  return writer.write(dir / "model.safetensors");
}

} // namespace volt::testing
