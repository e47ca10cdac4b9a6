// Binding checkpoints to the model: every family in every format, config
// only, and each broken-checkpoint case named by its tensor.
#include "compiler/mkmodel/MkModel.h"
#include "compiler/model/Model.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"

#include "TestFiles.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace volt::model {
namespace {

using testing::EditableTensor;
using testing::freshDir;
using testing::rewrite;

std::filesystem::path writeModelDir(const std::string &family, mkmodel::Format format,
                                    bool configOnly = false, uint64_t seed = 0) {
  auto dir = freshDir(std::string("ml-") + family + "-" + mkmodel::formatName(format) +
                      (configOnly ? "-config" : ""));
  mkmodel::Options o;
  o.family = family;
  o.format = format;
  o.configOnly = configOnly;
  o.seed = seed;
  o.outDir = dir;
  auto st = mkmodel::writeModel(o);
  EXPECT_TRUE(st.ok()) << st.message();
  return dir;
}

struct Counts {
  int nvfp4 = 0, dense = 0;
};

Counts count(const Model &m) {
  Counts c;
  m.forEachLinear([&](const Linear &l) { (l.isNvfp4() ? c.nvfp4 : c.dense)++; });
  return c;
}

class EveryFamilyAndFormat
    : public ::testing::TestWithParam<std::tuple<std::string, mkmodel::Format>> {};

TEST_P(EveryFamilyAndFormat, LoadsWithEveryWeightBound) {
  auto [family, format] = GetParam();
  auto dir = writeModelDir(family, format);
  auto m = loadModel(dir, LoadOptions{true});
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_TRUE(m->hasWeights());
  EXPECT_TRUE(m->unusedTensors.empty()) << m->unusedTensors.front();
  Counts c = count(*m);
  if (format == mkmodel::Format::BF16) {
    EXPECT_EQ(c.nvfp4, 0);
  } else {
    EXPECT_GT(c.nvfp4, 0);
    // Routers, the shared-expert gate and the LM head stay dense.
    m->forEachLinear([&](const Linear &l) {
      bool excluded = l.module == "lm_head" || l.module.ends_with(".gate") ||
                      l.module.ends_with("shared_expert_gate");
      EXPECT_EQ(l.isNvfp4(), !excluded) << l.module;
      if (l.isNvfp4()) {
        EXPECT_GT(l.globalScale, 0.0f);
        EXPECT_NE(l.blockScales, nullptr);
      }
    });
  }
  // Config-only: the same architecture with formats predicted from the claim.
  auto predicted = loadModel(writeModelDir(family, format, true));
  ASSERT_TRUE(predicted.ok()) << predicted.message();
  EXPECT_FALSE(predicted->hasWeights());
  Counts p = count(*predicted);
  EXPECT_EQ(p.nvfp4, c.nvfp4);
  EXPECT_EQ(p.dense, c.dense);
}

INSTANTIATE_TEST_SUITE_P(Model, EveryFamilyAndFormat,
                         ::testing::Combine(::testing::Values("qwen3-moe", "qwen2-moe", "mixtral",
                                                              "qwen3", "llama"),
                                            ::testing::Values(mkmodel::Format::ModelOpt,
                                                              mkmodel::Format::CompressedTensors,
                                                              mkmodel::Format::BF16)),
                         [](const auto &info) {
                           std::string name = std::get<0>(info.param) + "_" +
                                              mkmodel::formatName(std::get<1>(info.param));
                           for (char &ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch)))
                               ch = '_';
                           return name;
                         });

std::vector<float> dequantized(const Linear &l) {
  std::vector<float> out(static_cast<size_t>(l.outFeatures * l.inFeatures));
  auto data = l.weight->data();
  if (!l.isNvfp4()) {
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t b;
      std::memcpy(&b, data.data() + 2 * i, 2);
      out[i] = bf16ToFloat(b);
    }
    return out;
  }
  auto scales = l.blockScales->data();
  int64_t k = l.inFeatures;
  for (int64_t r = 0; r < l.outFeatures; ++r)
    nvfp4::dequantizeRow(data.subspan(r * k / 2, k / 2), scales.subspan(r * k / 16, k / 16),
                         l.globalScale, std::span(out).subspan(r * k, k));
  return out;
}

TEST(ModelLoader, BothNvfp4ConventionsDecodeToTheSameWeights) {
  // The same seed gives the same BF16 weights; both quantized forms must
  // decode close to them, and ModelOpt's multiplier and compressed-tensors'
  // divisor must come out as the same convention.
  auto bf16 = loadModel(writeModelDir("qwen2-moe", mkmodel::Format::BF16));
  auto mo = loadModel(writeModelDir("qwen2-moe", mkmodel::Format::ModelOpt));
  auto ct = loadModel(writeModelDir("qwen2-moe", mkmodel::Format::CompressedTensors));
  ASSERT_TRUE(bf16.ok() && mo.ok() && ct.ok());
  const Linear &ref = bf16->layers[0].moe()->experts[3].down;
  const Linear &a = mo->layers[0].moe()->experts[3].down;
  const Linear &b = ct->layers[0].moe()->experts[3].down;
  std::vector<float> w = dequantized(ref), wa = dequantized(a), wb = dequantized(b);
  float amax = nvfp4::absMax(w);
  for (size_t i = 0; i < w.size(); ++i) {
    // NVFP4's error is at most half a step of the block's scale; bound it
    // loosely by amax / 6 (the largest block scale times 1).
    EXPECT_NEAR(wa[i], w[i], amax / 6.0f) << i;
    EXPECT_NEAR(wb[i], wa[i], std::fabs(wa[i]) * 1e-6f + 1e-12f) << i;
  }
}

TEST(ModelLoader, ConfigOnlyQwen3_30B_Shapes) {
  auto dir = freshDir("ml-30b");
  mkmodel::Options o;
  o.preset = "qwen3-30b-a3b";
  o.configOnly = true;
  o.outDir = dir;
  ASSERT_TRUE(mkmodel::writeModel(o).ok());
  auto m = loadModel(dir);
  ASSERT_TRUE(m.ok()) << m.message();
  uint64_t params = 0, bytes = 0;
  m->forEachLinear([&](const Linear &l) {
    params += l.numParams();
    bytes += l.bytes();
  });
  m->forEachParam([&](const Param &p) {
    params += p.numElements();
    bytes += p.numElements() * 2;
  });
  // Qwen3-30B-A3B has 30.5 B parameters; NVFP4 with BF16 embeddings, LM head
  // and routers is ~17-18 GB.
  EXPECT_NEAR(static_cast<double>(params) / 1e9, 30.5, 0.2);
  EXPECT_GT(bytes, 16'000'000'000ull);
  EXPECT_LT(bytes, 19'000'000'000ull);
}

/// Writes a tiny model (ModelOpt qwen3-moe unless told) and edits its one
/// file.
std::filesystem::path brokenModel(const std::string &name,
                                  const std::function<bool(EditableTensor &)> &edit,
                                  const std::string &family = "qwen3-moe",
                                  mkmodel::Format format = mkmodel::Format::ModelOpt) {
  auto dir = writeModelDir(family, format);
  auto target = freshDir("ml-broken-" + name);
  for (const auto &e : std::filesystem::directory_iterator(dir))
    std::filesystem::copy(e.path(), target / e.path().filename());
  rewrite(target / "model.safetensors", edit);
  return target;
}

void expectLoadError(const std::filesystem::path &dir, const std::string &words,
                     bool verify = false) {
  auto m = loadModel(dir, LoadOptions{verify});
  ASSERT_FALSE(m.ok()) << "expected: " << words;
  EXPECT_NE(m.message().find(words), std::string::npos) << m.message();
}

const std::string kExpert = "model.layers.0.mlp.experts.2.up_proj";

TEST(ModelLoader, MissingTensor) {
  auto dir = brokenModel("missing", [](EditableTensor &t) {
    return t.name != "model.layers.2.self_attn.k_norm.weight";
  });
  expectLoadError(dir, "missing tensor 'model.layers.2.self_attn.k_norm.weight'");
}

TEST(ModelLoader, PackedWeightWithoutBlockScales) {
  auto dir =
      brokenModel("noscale", [](EditableTensor &t) { return t.name != kExpert + ".weight_scale"; });
  expectLoadError(dir, "'" + kExpert + ".weight' (in ");
  expectLoadError(dir, "has no '" + kExpert + ".weight_scale' sibling");
}

TEST(ModelLoader, PackedWeightWithoutGlobalScale) {
  auto dir = brokenModel("noglobal",
                         [](EditableTensor &t) { return t.name != kExpert + ".weight_scale_2"; });
  expectLoadError(dir, "has no '" + kExpert + ".weight_scale_2' sibling (global scale)");
}

TEST(ModelLoader, NanAndNegativeBlockScales) {
  auto nan = brokenModel("nan", [](EditableTensor &t) {
    if (t.name == kExpert + ".weight_scale")
      t.bytes[5] = 0x7F;
    return true;
  });
  expectLoadError(nan, "block scale at [1, 1] is NaN", true);
  EXPECT_TRUE(loadModel(nan).ok()) << "block scales are read only with verifyData";
  auto negative = brokenModel("neg", [](EditableTensor &t) {
    if (t.name == kExpert + ".weight_scale")
      t.bytes[t.bytes.size() - 1] = 0xB8; // -1.0
    return true;
  });
  expectLoadError(negative, "is negative (-1", true);
}

TEST(ModelLoader, BadGlobalScale) {
  auto dir = brokenModel("zeroglobal", [](EditableTensor &t) {
    if (t.name == kExpert + ".weight_scale_2")
      std::fill(t.bytes.begin(), t.bytes.end(), 0);
    return true;
  });
  expectLoadError(dir, "global scale must be a positive finite number");
}

TEST(ModelLoader, ShapeAndDtypeMismatches) {
  auto shape = brokenModel("shape", [](EditableTensor &t) {
    if (t.name == "model.norm.weight")
      t.shape = {t.shape[0] / 2, 2};
    return true;
  });
  expectLoadError(shape, "'model.norm.weight' (in ");
  expectLoadError(shape, "shape [32, 2], expected [64]");
  auto packed = brokenModel("packedshape", [](EditableTensor &t) {
    if (t.name == kExpert + ".weight")
      t.shape = {t.shape[1], t.shape[0]};
    return true;
  });
  expectLoadError(packed, "expected [64, 32] for a [64, 64] NVFP4 weight");
  auto dtype = brokenModel("dtype", [](EditableTensor &t) {
    if (t.name == kExpert + ".weight_scale")
      t.dtype = DType::U8;
    return true;
  });
  expectLoadError(dtype, "block scales must be F8_E4M3, found U8");
}

TEST(ModelLoader, AwqIsRejectedByName) {
  auto dir = brokenModel("awq", [](EditableTensor &t) { return true; });
  rewrite(dir / "model.safetensors", [&](EditableTensor &t) {
    if (t.name == kExpert + ".input_scale")
      t.name = kExpert + ".pre_quant_scale";
    return true;
  });
  expectLoadError(dir, "AWQ");
}

TEST(ModelLoader, UnknownTensorsAreReportedNotFatal) {
  // An input scale (which volt ignores anyway) becomes an unknown tensor.
  auto dir = brokenModel("extra", [](EditableTensor &t) {
    if (t.name == "model.layers.0.self_attn.o_proj.input_scale")
      t.name = "mtp.fc.input_scale_x";
    return true;
  });
  auto m = loadModel(dir);
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_EQ(m->unusedTensors.size(), 1u);
  EXPECT_EQ(m->unusedTensors[0], "mtp.fc.input_scale_x");
}

// With LoadOptions::bindMtp the MTP head is bound, not set aside: mtp.fc
// over [embedding | hidden], its two norms, one full-attention MoE layer
// numbered after the model's, mtp.norm; every mtp.* tensor used.
TEST(ModelLoader, TheMtpHeadIsBoundWhenAsked) {
  LoadOptions options;
  options.bindMtp = true;
  auto m = loadModel(writeModelDir("qwen3.5-moe", mkmodel::Format::BF16), options);
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_TRUE(m->unusedTensors.empty()) << m->unusedTensors.front();
  ASSERT_TRUE(m->mtp.has_value());
  const MtpHead &h = *m->mtp;
  const int64_t hidden = m->config.hiddenSize;
  EXPECT_EQ(h.fc.module, "mtp.fc");
  EXPECT_EQ(h.fc.inFeatures, 2 * hidden);
  EXPECT_EQ(h.fc.outFeatures, hidden);
  EXPECT_EQ(h.preFcNormEmbedding.name, "mtp.pre_fc_norm_embedding.weight");
  EXPECT_EQ(h.preFcNormHidden.name, "mtp.pre_fc_norm_hidden.weight");
  EXPECT_EQ(h.norm.name, "mtp.norm.weight");
  ASSERT_EQ(h.layers.size(), 1u);
  EXPECT_EQ(h.layers[0].index, m->config.numHiddenLayers);
  ASSERT_NE(h.layers[0].attention(), nullptr);
  EXPECT_TRUE(h.layers[0].attention()->gate.has_value()) << "gated attention";
  ASSERT_NE(h.layers[0].moe(), nullptr);
  EXPECT_EQ(h.layers[0].moe()->experts.size(), 8u);
  ASSERT_EQ(m->setAside.size(), 2u);
  EXPECT_EQ(m->setAside[1].prefix, "mtp.");
  EXPECT_EQ(m->setAside[1].tensors, 0u) << "all of the head's tensors are bound";
  // A family without a head.
  auto llama = loadModel(writeModelDir("llama", mkmodel::Format::BF16), options);
  ASSERT_FALSE(llama.ok());
  EXPECT_NE(llama.message().find("LlamaForCausalLM has no multi-token-prediction head"),
            std::string::npos)
      << llama.message();
}

// Qwen3.5's multimodal layout: the language model under
// model.language_model., the BF16 experts stacked (each expert's gate, up
// and down a view of gate_up_proj / down_proj), linear attention's in_proj_qkv
// read as q, k and v views; the vision tower and the MTP head set aside.
TEST(ModelLoader, Qwen3_5MultimodalLayout) {
  auto m = loadModel(writeModelDir("qwen3.5-moe", mkmodel::Format::BF16), LoadOptions{true});
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_TRUE(m->unusedTensors.empty()) << m->unusedTensors.front();
  EXPECT_EQ(m->embedTokens.name, "model.language_model.embed_tokens.weight");
  EXPECT_EQ(m->finalNorm.name, "model.language_model.norm.weight");
  ASSERT_EQ(m->setAside.size(), 2u);
  EXPECT_EQ(m->setAside[0].prefix, "model.visual.");
  EXPECT_EQ(m->setAside[0].tensors, 21u) << "transformers' vision tower of depth 1";
  EXPECT_EQ(m->setAside[1].prefix, "mtp.");
  EXPECT_EQ(m->setAside[1].tensors, 19u) << "fc, 2 norms, a full-attention MoE layer, a norm";

  const Moe *moe = m->layers[2].moe();
  ASSERT_NE(moe, nullptr);
  ASSERT_EQ(moe->experts.size(), 8u);
  const GatedMlp &e = moe->experts[5];
  const std::string stacked = "model.language_model.layers.2.mlp.experts.";
  EXPECT_EQ(e.gate.module, stacked + "gate_up_proj");
  EXPECT_EQ(e.gate.weightTensorName(), stacked + "gate_up_proj") << "no .weight suffix";
  EXPECT_EQ(e.down.weightTensorName(), stacked + "down_proj");
  ASSERT_TRUE(e.gate.view && e.up.view && e.down.view);
  EXPECT_EQ(e.gate.view->expert, 5);
  EXPECT_EQ(e.gate.view->offset, 0);
  EXPECT_EQ(e.up.view->offset, 32) << "up rows follow gate's in gate_up_proj";
  EXPECT_EQ(e.up.view->tensorRows, 64);
  EXPECT_EQ(e.down.view->tensorRows, 64);
  EXPECT_EQ(e.down.inFeatures, 32);
  EXPECT_EQ(moe->sharedExpertGate->module, "model.language_model.layers.2.mlp.shared_expert_gate");

  const GatedDeltaNet *g = m->layers[0].gatedDeltaNet();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->q.module, "model.language_model.layers.0.linear_attn.in_proj_qkv");
  ASSERT_TRUE(g->k.view && g->v.view);
  EXPECT_EQ(g->k.view->offset, 64) << "4 key heads of 16";
  EXPECT_EQ(g->v.view->offset, 128);
  EXPECT_EQ(g->v.outFeatures, 64) << "8 value heads of 8";
  EXPECT_FALSE(g->z.view) << "in_proj_z is its own tensor";
  ASSERT_NE(m->layers[1].attention(), nullptr);

  // The NVFP4 export stores experts one by one; linear attention's inputs
  // stay BF16, out_proj and the experts are NVFP4.
  auto nv = loadModel(writeModelDir("qwen3.5-moe", mkmodel::Format::ModelOpt), LoadOptions{true});
  ASSERT_TRUE(nv.ok()) << nv.message();
  EXPECT_TRUE(nv->unusedTensors.empty()) << nv->unusedTensors.front();
  const GatedMlp &ne = nv->layers[2].moe()->experts[5];
  EXPECT_EQ(ne.up.module, stacked + "5.up_proj");
  EXPECT_TRUE(ne.up.isNvfp4());
  EXPECT_FALSE(ne.up.view);
  EXPECT_FALSE(nv->layers[0].gatedDeltaNet()->q.isNvfp4());
  EXPECT_TRUE(nv->layers[0].gatedDeltaNet()->out.isNvfp4());
  // Config-only predicts the same formats.
  auto predicted = loadModel(writeModelDir("qwen3.5-moe", mkmodel::Format::ModelOpt, true));
  ASSERT_TRUE(predicted.ok()) << predicted.message();
  EXPECT_EQ(count(*predicted).nvfp4, count(*nv).nvfp4);
  EXPECT_EQ(count(*predicted).dense, count(*nv).dense);
}

// The text-only …ForCausalLM reads its tensors under model. or, as
// transformers accepts, the multimodal checkpoint's model.language_model.
TEST(ModelLoader, Qwen3_5TextOnlyArchitectureReadsEitherPrefix) {
  auto dir = brokenModel("text-only", [](EditableTensor &) { return true; }, "qwen3.5",
                         mkmodel::Format::BF16);
  nlohmann::json config = nlohmann::json::parse(testing::slurp(dir / "config.json"));
  nlohmann::json text = config["text_config"];
  text["architectures"] = {"Qwen3_5ForCausalLM"};
  testing::spit(dir / "config.json", text.dump());
  auto nested = loadModel(dir);
  ASSERT_TRUE(nested.ok()) << nested.message();
  EXPECT_EQ(nested->config.tensorPrefix, "model.language_model.");
  EXPECT_EQ(nested->layers[3].postAttentionNorm.name,
            "model.language_model.layers.3.post_attention_layernorm.weight");
  const std::string from = "model.language_model.";
  rewrite(dir / "model.safetensors", [&](EditableTensor &t) {
    if (t.name.starts_with(from))
      t.name = "model." + t.name.substr(from.size());
    return true;
  });
  auto flat = loadModel(dir);
  ASSERT_TRUE(flat.ok()) << flat.message();
  EXPECT_EQ(flat->config.tensorPrefix, "model.");
  EXPECT_EQ(flat->layers[3].postAttentionNorm.name, "model.layers.3.post_attention_layernorm.weight");
  EXPECT_TRUE(flat->unusedTensors.empty()) << flat->unusedTensors.front();
}

TEST(ModelLoader, StackedExpertErrorsNameTheTensor) {
  const std::string gateUp = "model.language_model.layers.0.mlp.experts.gate_up_proj";
  auto shape = brokenModel(
      "stacked-shape",
      [&](EditableTensor &t) {
        if (t.name == gateUp)
          t.shape = {4, 128, 64};
        return true;
      },
      "qwen3.5-moe", mkmodel::Format::BF16);
  expectLoadError(shape, "tensor '" + gateUp + "' (in ");
  expectLoadError(shape, "shape [4, 128, 64], expected [8, 64, 64] (experts, rows, inputs)");
  auto dtype = brokenModel(
      "stacked-dtype",
      [&](EditableTensor &t) {
        if (t.name == gateUp) {
          t.dtype = DType::U8;
          t.shape = {8, 64, 128};
        }
        return true;
      },
      "qwen3.5-moe", mkmodel::Format::BF16);
  expectLoadError(dtype, "dtype U8, expected BF16, F16 or F32 (experts stored stacked are read "
                         "dense; a quantized export stores them per expert)");
  const std::string down = "model.language_model.layers.2.mlp.experts.down_proj";
  auto missing = brokenModel(
      "stacked-missing", [&](EditableTensor &t) { return t.name != down; }, "qwen3.5-moe",
      mkmodel::Format::BF16);
  expectLoadError(missing, "missing tensor '" + down + "'");
  auto z = brokenModel(
      "no-in-proj-z",
      [&](EditableTensor &t) {
        return t.name != "model.language_model.layers.2.linear_attn.in_proj_z.weight";
      },
      "qwen3.5-moe", mkmodel::Format::BF16);
  expectLoadError(z, "missing tensor 'model.language_model.layers.2.linear_attn.in_proj_z.weight'");
}

// NVIDIA's mixed layout: FP8 projections with a per-tensor scale, NVFP4
// experts and lm_head; each FP8 error names the tensor.
TEST(ModelLoader, Fp8WeightsOfAMixedCheckpoint) {
  auto dir = writeModelDir("qwen3.5-moe", mkmodel::Format::ModelOptMixed);
  auto m = loadModel(dir, LoadOptions{true});
  ASSERT_TRUE(m.ok()) << m.message();
  int fp8 = 0, nvfp4 = 0;
  m->forEachLinear([&](const Linear &l) {
    fp8 += l.isFp8();
    nvfp4 += l.isNvfp4();
    if (l.module.ends_with("linear_attn.in_proj_qkv") || l.module.ends_with("self_attn.o_proj")) {
      EXPECT_TRUE(l.isFp8()) << l.module;
      ASSERT_NE(l.weightScale, nullptr) << l.module;
      EXPECT_EQ(l.weightScale->name(), l.module + ".weight_scale");
    }
    if (l.module == "lm_head")
      EXPECT_TRUE(l.isNvfp4());
  });
  EXPECT_GT(fp8, 0);
  EXPECT_GT(nvfp4, 0);
  EXPECT_TRUE(m->unusedTensors.empty()) << m->unusedTensors.front();

  const std::string o = "model.language_model.layers.1.self_attn.o_proj";
  auto noScale = brokenModel(
      "fp8-noscale", [&](EditableTensor &t) { return t.name != o + ".weight_scale"; },
      "qwen3.5-moe", mkmodel::Format::ModelOptMixed);
  expectLoadError(noScale, "tensor '" + o + ".weight' (in ");
  expectLoadError(noScale, "is FP8 but has no '" + o + ".weight_scale' or '" + o +
                               ".weight_scale_inv' sibling (its scale)");
  auto shape = brokenModel(
      "fp8-scale-shape",
      [&](EditableTensor &t) {
        if (t.name == o + ".weight_scale") {
          t.shape = {3};
          t.bytes.resize(12, 0);
        }
        return true;
      },
      "qwen3.5-moe", mkmodel::Format::ModelOptMixed);
  expectLoadError(shape, "shape [3], expected [] (per tensor), [64] (per output row) or [1, 1] "
                         "(per 128 x 128 block)");
  auto negative = brokenModel(
      "fp8-scale-negative",
      [&](EditableTensor &t) {
        if (t.name == o + ".weight_scale") {
          float v = -1.0f;
          std::memcpy(t.bytes.data(), &v, 4);
        }
        return true;
      },
      "qwen3.5-moe", mkmodel::Format::ModelOptMixed);
  expectLoadError(negative, "FP8 scales must be finite and non-negative");
  auto nan = brokenModel(
      "fp8-nan",
      [&](EditableTensor &t) {
        if (t.name == o + ".weight")
          t.bytes[70] = 0xFF;
        return true;
      },
      "qwen3.5-moe", mkmodel::Format::ModelOptMixed);
  expectLoadError(nan, "'" + o + ".weight' (in ", true);
  expectLoadError(nan, "element [1, 6] is NaN", true);
  EXPECT_TRUE(loadModel(nan).ok()) << "FP8 elements are read only with verifyData";
  auto inverse = brokenModel(
      "fp8-scale-inv",
      [&](EditableTensor &t) {
        if (t.name == o + ".weight_scale")
          t.name = o + ".weight_scale_inv";
        return true;
      },
      "qwen3.5-moe", mkmodel::Format::ModelOptMixed);
  EXPECT_TRUE(loadModel(inverse).ok()) << "weight_scale_inv is the block-FP8 name of the scale";
}

TEST(ModelLoader, MissingModelDirectoryAndConfig) {
  auto m = loadModel("/nonexistent/volt-model");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("/nonexistent/volt-model: model directory not found"),
            std::string::npos);
  auto empty = freshDir("ml-noconfig");
  m = loadModel(empty);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("config.json: not found"), std::string::npos) << m.message();
}

} // namespace
} // namespace volt::model
