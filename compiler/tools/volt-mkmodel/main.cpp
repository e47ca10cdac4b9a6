//===- volt-mkmodel - write synthetic checkpoints -------------------------===//
#include "compiler/mkmodel/MkModel.h"

#include "runtime/support/Strings.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>

int main(int argc, char **argv) {
  CLI::App app{"volt-mkmodel: write a small synthetic Hugging Face model directory "
               "(deterministic from --seed) in any format volt reads"};
  volt::mkmodel::Options o;
  std::string format = "modelopt", out;
  app.add_option("--family", o.family, "qwen3-moe, qwen2-moe, mixtral, qwen3, llama, qwen3-next, qwen3.5 or qwen3.5-moe")
      ->capture_default_str();
  app.add_option("--format", format, "modelopt, compressed-tensors, bf16, modelopt-mixed (NVFP4 + FP8 per layer) or compressed-tensors-fp8 (FP8 per channel)")
      ->capture_default_str();
  app.add_option("--preset", o.preset,
                 "tiny, or a published model's shape: " +
                     volt::joinList(volt::mkmodel::presetNames()))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the weights")->capture_default_str();
  app.add_option("--shards", o.shards, "number of safetensors files (with an index above 1)")
      ->capture_default_str();
  app.add_flag("--config-only", o.configOnly,
               "write config.json and the quantization config only (no weights)");
  app.add_flag("--zeros", o.zeros,
               "write large tensors as all-zero file holes (for published-model presets)");
  app.add_flag("--modelopt-config-json", o.modelOptInConfigJson,
               "ModelOpt: put the quantization config in config.json (newer exports) instead "
               "of hf_quant_config.json");
  // Shape flags: each replaces one config.json value of the preset.
  auto shape = [&](const char *flag, std::optional<int64_t> &field, const char *what) {
    app.add_option(flag, field, std::string(what) + " (replaces the preset's)")
        ->group("Shape (over --preset)");
  };
  shape("--hidden", o.shape.hidden, "hidden_size");
  shape("--layers", o.shape.layers, "num_hidden_layers; hybrids' layer_types follow");
  shape("--heads", o.shape.heads, "num_attention_heads");
  shape("--kv-heads", o.shape.kvHeads, "num_key_value_heads");
  shape("--head-dim", o.shape.headDim, "head_dim");
  shape("--intermediate", o.shape.intermediate, "intermediate_size of dense MLPs");
  shape("--experts", o.shape.experts, "number of routed experts");
  shape("--experts-per-token", o.shape.expertsPerToken, "num_experts_per_tok (top-k)");
  shape("--moe-intermediate", o.shape.moeIntermediate,
        "moe_intermediate_size (and the shared expert's)");
  shape("--vocab", o.shape.vocab, "vocab_size (the tokenizer follows)");
  shape("--max-positions", o.shape.maxPositions, "max_position_embeddings");
  shape("--linear-key-head-dim", o.shape.linearKeyDim,
        "linear_key_head_dim (Gated DeltaNet hybrids)");
  shape("--linear-value-head-dim", o.shape.linearValueDim,
        "linear_value_head_dim (Gated DeltaNet hybrids)");
  std::string mlpOnlyLayers;
  auto *mlpOnly = app.add_option("--mlp-only-layers", mlpOnlyLayers,
                                 "mlp_only_layers: comma-separated layers with a dense MLP, "
                                 "or none (replaces the preset's)")
                      ->group("Shape (over --preset)");
  app.add_option("-o,--out", out, "output directory")->required();
  CLI11_PARSE(app, argc, argv);
  if (mlpOnly->count()) {
    std::vector<int64_t> layers;
    if (mlpOnlyLayers != "none") {
      size_t start = 0;
      while (start <= mlpOnlyLayers.size()) {
        size_t comma = mlpOnlyLayers.find(',', start);
        std::string item = mlpOnlyLayers.substr(
            start, comma == std::string::npos ? std::string::npos : comma - start);
        char *end = nullptr;
        long value = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0') {
          std::fprintf(stderr,
                       "volt-mkmodel: error: --mlp-only-layers: '%s' is not a layer number "
                       "(a comma-separated list, or none)\n",
                       item.c_str());
          return 1;
        }
        layers.push_back(value);
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    }
    o.shape.mlpOnlyLayers = layers;
  }

  auto f = volt::mkmodel::parseFormat(format);
  if (!f) {
    std::fprintf(stderr, "volt-mkmodel: error: %s\n", f.message().c_str());
    return 1;
  }
  o.format = *f;
  o.outDir = out;
  auto written = volt::mkmodel::writeModelReport(o);
  if (!written) {
    std::fprintf(stderr, "volt-mkmodel: error: %s\n", written.message().c_str());
    return 1;
  }
  std::printf("wrote %s: %s %s (%s%s), %zu tensors, %s of weights in %zu files\n", out.c_str(),
              o.family.c_str(), volt::mkmodel::formatName(o.format), o.preset.c_str(),
              o.shape.any() ? ", reshaped" : "",
              written->tensors, volt::formatBytes(written->dataBytes).c_str(),
              written->files.size());
  return 0;
}
