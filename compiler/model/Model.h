//===- Model.h - one in-memory description of a checkpoint -------*- C++ -*-===//
//
// What the compiler imports: the architecture (ModelConfig) and, per layer,
// every weight with its format decided per tensor. A linear layer's weight
// is either dense (BF16/F16/F32) or NVFP4 in one normalised convention:
// packed E2M1 data [N, K/2], E4M3 block scales [N, K/16] and an FP32 global
// scale that multiplies (ModelOpt's convention; compressed-tensors' divisor
// is inverted on load).
//
// A model can be described from config files alone (no weights yet): each
// weight then carries the shape and format the quantization config
// predicts, and no tensor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Checkpoint.h"
#include "compiler/model/ModelConfig.h"
#include "compiler/model/QuantConfig.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace volt::model {

enum class WeightFormat { Dense, Nvfp4, Fp8 };

/// The rows and columns of one scale of a block-scaled FP8 weight
/// (transformers' weight_block_size, ModelOpt's FP8_PB_WO).
constexpr int64_t kFp8Block = 128;

/// Which rows of its checkpoint tensor a weight (or a part of one) is, when
/// it is not the whole tensor: `groups` equal runs, run g starting at row
/// `offset + g * stride` of a [tensorRows, ...] tensor (of expert `expert`
/// of a stacked [E, tensorRows, ...] one). The packer's RowView
/// (compiler/pack/WeightPacker.h); docs/design/hybrid.md, "Weight views".
struct RowView {
  int64_t expert = -1;
  int64_t offset = 0;
  int64_t stride = 0;
  int64_t groups = 1;
  int64_t tensorRows = 0;
};

/// A parameter that is not a linear weight: an embedding table, a norm
/// weight, a bias.
struct Param {
  std::string name; ///< full tensor name
  std::vector<int64_t> shape;
  DType dtype = DType::BF16;      ///< as stored (predicted when config-only)
  const Tensor *tensor = nullptr; ///< null when config-only
  /// Rows of `tensor` (shape is then the view's), when not all of it.
  std::optional<RowView> view;
  uint64_t numElements() const;
  uint64_t bytes() const { return numElements() * dtypeSize(dtype); }
};

/// A linear layer y = x·Wᵀ (+ b), W of shape [outFeatures, inFeatures].
struct Linear {
  std::string module; ///< e.g. "model.layers.0.self_attn.q_proj"
  int64_t outFeatures = 0;
  int64_t inFeatures = 0;
  WeightFormat format = WeightFormat::Dense;
  /// Dense: the weight's dtype. NVFP4: U8. FP8: F8E4M3.
  DType dtype = DType::BF16;
  /// Dense and FP8: the [N, K] weight. NVFP4: the packed [N, K/2] data.
  const Tensor *weight = nullptr;
  /// FP8: the F32 scale that multiplies the E4M3 values: one ([] or [1]),
  /// one per output row ([N] or [N, 1]), or one per 128 x 128 block
  /// ([ceil(N/128), ceil(K/128)]). Its name is weightScaleName().
  const Tensor *weightScale = nullptr;
  /// FP8: the scale is per 128 x 128 block (the weight is then kept dense,
  /// E4M3 x scale in FP16; else as E4M3 with a scale per row).
  bool fp8BlockScaled = false;
  /// NVFP4: the E4M3 block scales [N, K/16].
  const Tensor *blockScales = nullptr;
  /// NVFP4: the global scale as a multiplier (NaN when config-only).
  float globalScale = 0.0f;
  std::optional<Param> bias;
  /// Rows of the checkpoint tensor(s) this layer is, when not all of them
  /// (outFeatures is then the view's rows).
  std::optional<RowView> view;

  bool isNvfp4() const { return format == WeightFormat::Nvfp4; }
  bool isFp8() const { return format == WeightFormat::Fp8; }
  /// The dense weight's tensor name: module + ".weight", or `module` itself
  /// for an expert of a stacked tensor (transformers' fused
  /// experts.gate_up_proj [E, 2I, H]).
  std::string weightTensorName() const {
    return view && view->expert >= 0 ? module : module + ".weight";
  }
  uint64_t numParams() const;
  /// Bytes as stored in the checkpoint (NVFP4: data + block scales + global
  /// scale; FP8: one byte per weight + its scales).
  uint64_t bytes() const;
};

/// gate/up/down of an expert or of a dense MLP:
/// down(silu(gate(x)) * up(x)).
struct GatedMlp {
  Linear gate, up, down;
};

// ---- Mixers: how a layer mixes information across positions -------------

/// Causal softmax attention over the paged KV cache (with RoPE; QK-norm in
/// the Qwen3 families).
struct Attention {
  Linear q, k, v, o;
  std::optional<Param> qNorm, kNorm;
  /// The output gate: attention output · sigmoid(h · gateᵀ) before o
  /// (Qwen3-Next, Qwen3.5: q_proj's rows [q_h | gate_h] per head, q and
  /// gate each a view of them).
  std::optional<Linear> gate;
};

/// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5 `linear_attn`):
/// q, k, v = causal_conv1d(h · [Wq; Wk; Wv]ᵀ) with SiLU and a conv state;
/// the gated delta rule over a [dk, dv] state per value head, with
/// β = sigmoid(h · Wbᵀ), g = −exp(A_log) · softplus(h · Waᵀ + dt_bias);
/// out = (norm · rms(o) · silu(h · Wzᵀ)) · W_outᵀ. The checkpoint's fused
/// projections (in_proj_qkv, or in_proj_qkvz and in_proj_ba grouped per key
/// head) are bound as views, one Linear per part. runtime/cpu/GatedDeltaNet.h
/// is the arithmetic.
struct GatedDeltaNet {
  Linear q, k, v, z, b, a, out;
  /// conv1d.weight [C, 1, K] as three views ([rows, K] each): the q, k and
  /// v channels.
  Param convQ, convK, convV;
  Param aLog, dtBias; ///< [Hv]
  Param norm;         ///< [dv], a plain weight
};

/// A per-channel exponential moving average over each sequence:
/// s_t = a * s_{t-1} + (1 - a) * x_t, out_t = s_t, with a = `decay` [H] in
/// (0, 1) and s_{-1} = 0. The smallest mixer with per-sequence state (a
/// state slot of H FP32 values): it exercises the state path (cache groups,
/// the engine's slots, preemption) with one op. No published family has it.
struct Ema {
  Param decay;
};

// ---- Feed-forward blocks -------------------------------------------------

/// A sparse mixture of experts: softmax router, top-k, the experts, and an
/// optional shared expert scaled by sigmoid(shared_expert_gate).
struct Moe {
  Linear router; ///< [experts, hidden]
  std::vector<GatedMlp> experts;
  std::optional<GatedMlp> sharedExpert;   ///< Qwen2-MoE
  std::optional<Linear> sharedExpertGate; ///< Qwen2-MoE, [1, hidden]
};

/// One decoder layer: x += mixer(norm(x)); x += ffn(norm(x)).
struct Layer {
  int64_t index = 0;
  Param inputNorm;
  Param postAttentionNorm;
  std::variant<Attention, Ema, GatedDeltaNet> mixer;
  std::variant<GatedMlp, Moe> ffn;

  const Attention *attention() const { return std::get_if<Attention>(&mixer); }
  const Ema *ema() const { return std::get_if<Ema>(&mixer); }
  const GatedDeltaNet *gatedDeltaNet() const { return std::get_if<GatedDeltaNet>(&mixer); }
  const GatedMlp *mlp() const { return std::get_if<GatedMlp>(&ffn); }
  const Moe *moe() const { return std::get_if<Moe>(&ffn); }
  bool isMoe() const { return moe() != nullptr; }
};

/// The multi-token-prediction head (`mtp.*`, vLLM's qwen3_next_mtp): for
/// position t, fc(concat(preFcNormEmbedding(embed(token t+1)),
/// preFcNormHidden(h_t))) through its decoder layers (full attention), then
/// norm and the model's LM head give the token at t + 2.
struct MtpHead {
  Linear fc;
  Param preFcNormEmbedding, preFcNormHidden;
  std::vector<Layer> layers;
  Param norm;
};

struct Model {
  std::filesystem::path dir;
  ModelConfig config;
  QuantConfig quant;
  Param embedTokens;
  std::vector<Layer> layers;
  Param finalNorm;
  /// The output projection; for tied embeddings it reads embedTokens' tensor.
  Linear lmHead;
  bool lmHeadTied = false;
  /// Bound when loaded with LoadOptions::bindMtp (else its tensors are set
  /// aside).
  std::optional<MtpHead> mtp;
  /// The checkpoint (empty when only config files are present).
  std::unique_ptr<Checkpoint> checkpoint;
  /// Tensors present but not used: W4A4 input scales, FP8 KV scales (volt's
  /// KV cache is FP16), and anything unrecognised.
  std::vector<std::string> unusedTensors;
  /// Parts of the checkpoint volt does not run (FamilyDef::setAsidePrefixes:
  /// a vision tower, an MTP head), with their tensor counts.
  struct SetAside {
    std::string what, prefix;
    size_t tensors = 0;
  };
  std::vector<SetAside> setAside;

  bool hasWeights() const { return checkpoint && checkpoint->hasWeights(); }

  /// Calls `fn(const Linear &)` for every linear layer, in model order.
  template <typename Fn> void forEachLinear(Fn &&fn) const;
  /// Calls `fn(const Param &)` for every non-linear parameter (embedding,
  /// norms, biases).
  template <typename Fn> void forEachParam(Fn &&fn) const;
};

struct LoadOptions {
  /// Read every block scale (NaN, negative) and every global scale; this
  /// touches about one ninth of an NVFP4 checkpoint's bytes.
  bool verifyData = false;
  /// Bind the multi-token-prediction head (speculative method mtp): an
  /// error when the model has none, names the config key or tensor.
  bool bindMtp = false;
};

/// Loads config.json, the quantization config and (when present) the
/// safetensors files of `dir`, and binds every weight.
Result<Model> loadModel(const std::filesystem::path &dir, const LoadOptions &options = {});

template <typename Fn> void Model::forEachLinear(Fn &&fn) const {
  auto mlp = [&](const GatedMlp &m) {
    fn(m.gate);
    fn(m.up);
    fn(m.down);
  };
  for (const Layer &l : layers) {
    if (const Attention *a = l.attention()) {
      fn(a->q);
      fn(a->k);
      fn(a->v);
      fn(a->o);
      if (a->gate)
        fn(*a->gate);
    }
    if (const GatedDeltaNet *g = l.gatedDeltaNet())
      for (const Linear *lin : {&g->q, &g->k, &g->v, &g->z, &g->b, &g->a, &g->out})
        fn(*lin);
    if (const GatedMlp *m = l.mlp()) {
      mlp(*m);
      continue;
    }
    const Moe &moe = *l.moe();
    fn(moe.router);
    for (const GatedMlp &e : moe.experts)
      mlp(e);
    if (moe.sharedExpert)
      mlp(*moe.sharedExpert);
    if (moe.sharedExpertGate)
      fn(*moe.sharedExpertGate);
  }
  fn(lmHead);
}

template <typename Fn> void Model::forEachParam(Fn &&fn) const {
  fn(embedTokens);
  for (const Layer &l : layers) {
    fn(l.inputNorm);
    fn(l.postAttentionNorm);
    if (const Attention *a = l.attention()) {
      if (a->qNorm)
        fn(*a->qNorm);
      if (a->kNorm)
        fn(*a->kNorm);
      for (const Linear *lin : {&a->q, &a->k, &a->v})
        if (lin->bias)
          fn(*lin->bias);
    }
    if (const Ema *e = l.ema())
      fn(e->decay);
    if (const GatedDeltaNet *g = l.gatedDeltaNet())
      for (const Param *p : {&g->convQ, &g->convK, &g->convV, &g->aLog, &g->dtBias, &g->norm})
        fn(*p);
  }
  fn(finalNorm);
}

} // namespace volt::model
