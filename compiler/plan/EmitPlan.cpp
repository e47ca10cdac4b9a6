//===- EmitPlan.cpp -------------------------------------------------------===//
#include "compiler/plan/EmitPlan.h"

#include "compiler/codegen/vexec/PlanKernels.h"
#include "compiler/pack/WeightPacker.h"
#include "dialects/Vexec/VexecPlan.h"
#include "dialects/Volt/VoltDialect.h"
#include "runtime/chat/ChatTemplate.h"
#include "runtime/schema/PlanFormat.h"
#include "runtime/support/Strings.h"
#include "runtime/tokenizer/Tokenizer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace volt::plan {
namespace {

using namespace mlir;
namespace vx = volt::vexec;
namespace fb = flatbuffers;

int64_t intOf(DictionaryAttr d, StringRef name, int64_t fallback = 0) {
  auto a = d ? d.getAs<IntegerAttr>(name) : IntegerAttr();
  return a ? a.getInt() : fallback;
}

Result<std::string> readText(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(path.string() + ": cannot read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

DType dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isBF16())
    return DType::BF16;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(8))
    return DType::U8;
  if (isa<Float8E4M3FNType>(t))
    return DType::F8E4M3;
  return DType::F16;
}

/// The step program of the module, in the order the plan lists it, with
/// every buffer placed.
Result<vx::StepProgram> collect(func::FuncOp step, func::FuncOp draft) {
  VOLT_ASSIGN_OR_RETURN(vx::StepProgram p, vx::collectStep(step, draft));
  for (vx::AllocOp a : p.allocs)
    if (!a.getOffset())
      return Error("internal error: buffer '" + a.getName().str() +
                   "' has no offset (run --vexec-plan-memory)");
  return p;
}

pack::WeightSpec specOf(vx::WeightOp w) {
  pack::WeightSpec s;
  s.name = w.getName().str();
  for (Attribute n : w.getNames())
    s.names.push_back(cast<StringAttr>(n).getValue().str());
  s.partRows.assign(w.getPartRows().begin(), w.getPartRows().end());
  s.nvfp4 = w.getLayout() == "nvfp4";
  s.fp8 = w.getLayout() == "fp8";
  s.elementBytes = s.fp8 ? 1 : w.getDtype().isF32() ? 4 : 2;
  s.shape.assign(w.getShape().begin(), w.getShape().end());
  s.experts = w.getExperts();
  s.fromDense = w.getFromDense();
  if (auto g = w.getGlobalScales())
    s.globalScales.assign(g->begin(), g->end());
  if (auto shards = w.getShards())
    for (Attribute a : *shards) {
      auto shard = cast<volt::ir::ShardAttr>(a);
      s.shards.push_back({shard.getDim(), shard.getParts(), shard.getReplicas()});
    }
  s.addOne = w.getAddOne();
  if (auto scales = w.getScaleNames())
    for (Attribute a : *scales)
      s.scaleNames.push_back(cast<StringAttr>(a).getValue().str());
  if (auto views = w.getViews())
    for (size_t i = 0; i + 4 < views->size(); i += 5) {
      const int64_t *v = views->data() + i;
      s.views.push_back({v[0], v[1], v[2], v[3], v[4]});
    }
  return s;
}

/// Rank.caches from the memory plan's cache groups (vexec.memory's
/// `caches`, in Cache-operand order).
fb::Offset<fb::Vector<fb::Offset<CacheGroup>>> cacheGroups(fb::FlatBufferBuilder &b,
                                                           DictionaryAttr memory) {
  std::vector<fb::Offset<CacheGroup>> groups;
  auto caches = memory.getAs<ArrayAttr>("caches");
  for (Attribute a : caches ? caches : ArrayAttr::get(memory.getContext(), {})) {
    auto g = cast<DictionaryAttr>(a);
    auto u32 = [&](StringRef name) { return static_cast<uint32_t>(intOf(g, name)); };
    std::vector<uint32_t> layers;
    for (int64_t l : g.getAs<DenseI64ArrayAttr>("layers").asArrayRef())
      layers.push_back(static_cast<uint32_t>(l));
    const bool paged = g.getAs<StringAttr>("kind").getValue() == "paged_kv";
    groups.push_back(CreateCacheGroup(
        b, paged ? CacheKind::PagedKv : CacheKind::StateSlots,
        b.CreateString(g.getAs<StringAttr>("name").getValue().str()), b.CreateVector(layers),
        dtypeOf(g.getAs<TypeAttr>("dtype").getValue()), u32("num_blocks"), u32("block_size"),
        u32("num_kv_heads"), u32("head_dim"), u32("num_slots"),
        static_cast<uint64_t>(intOf(g, "slot_bytes")), static_cast<uint64_t>(intOf(g, "offset")),
        static_cast<uint64_t>(intOf(g, "bytes"))));
  }
  return b.CreateVector(groups);
}

/// Token ids that end generation: generation_config.json's eos_token_id,
/// else config.json's (a multimodal config's text_config's).
std::vector<int32_t> eosTokenIds(const std::filesystem::path &dir) {
  std::vector<int32_t> ids;
  for (const char *where : {"generation_config.json", "config.json", "text_config"}) {
    const bool nested = std::string(where) == "text_config";
    auto json = model::readJsonFile(dir / (nested ? "config.json" : where));
    if (!json || !json->is_object())
      continue;
    const nlohmann::json &object =
        nested && json->contains("text_config") ? (*json)["text_config"] : *json;
    if (!object.is_object() || !object.contains("eos_token_id"))
      continue;
    const auto &eos = object["eos_token_id"];
    if (eos.is_number_integer())
      ids.push_back(eos.get<int32_t>());
    else if (eos.is_array())
      for (const auto &e : eos)
        if (e.is_number_integer())
          ids.push_back(e.get<int32_t>());
    if (!ids.empty())
      break;
  }
  return ids;
}

} // namespace

Result<ModelFiles> readModelFiles(const std::filesystem::path &dir) {
  ModelFiles files;
  std::filesystem::path tokenizerPath = dir / "tokenizer.json";
  auto text = readText(tokenizerPath);
  if (!text)
    return Error(tokenizerPath.string() +
                 ": not found; a plan embeds the model's tokenizer (tokenizer.json)");
  auto tokenizer = tok::Tokenizer::fromJson(*text, tokenizerPath.string());
  if (!tokenizer)
    return tokenizer.error();
  files.tokenizerJson = std::move(*text);
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir / "tokenizer_config.json", ec)) {
    auto config = readText(dir / "tokenizer_config.json");
    if (!config)
      return config.error();
    files.tokenizerConfig = std::move(*config);
  }
  bool hasTemplate = std::filesystem::is_regular_file(dir / "chat_template.jinja", ec) ||
                     files.tokenizerConfig.find("\"chat_template\"") != std::string::npos;
  if (hasTemplate) {
    auto parsed = chat::loadFromModelDir(dir.string());
    if (!parsed)
      return parsed.error();
    files.chatTemplate = parsed->source();
  }
  if (std::filesystem::is_regular_file(dir / "generation_config.json", ec)) {
    const std::filesystem::path path = dir / "generation_config.json";
    auto json = model::readJsonFile(path);
    if (!json)
      return json.error();
    if (!json->is_object())
      return Error(path.string() + ": expected a JSON object");
    auto defaults = engine::parseGenerationDefaults(json->dump(), path.string());
    if (!defaults)
      return defaults.error();
    files.generationDefaults = *defaults;
  }
  return files;
}

Status emitPlan(ModuleOp module, const spec::DeploySpec &spec, const model::Model &model,
                const EmitOptions &options) {
  auto target = module->getAttrOfType<DictionaryAttr>("volt.target");
  auto deployment = module->getAttrOfType<DictionaryAttr>("volt.deployment");
  auto modelAttr = module->getAttrOfType<DictionaryAttr>("volt.model");
  auto memory = module->getAttrOfType<DictionaryAttr>("vexec.memory");
  auto step = module.lookupSymbol<func::FuncOp>("step");
  if (!target || !deployment || !modelAttr || !memory || !step)
    return Error("internal error: the module has no memory plan to emit");
  std::string arch = target.getAs<StringAttr>("arch").getValue().str();
  // GPU targets: every launch planned and its kernels built (compiler/codegen).
  std::optional<codegen::PlanKernels> gpu;
  if (arch != "cpu") {
    codegen::CodegenOptions codegenOptions;
    codegenOptions.log = options.log;
    auto ranks =
        static_cast<uint32_t>(std::max<int64_t>(1, intOf(deployment, "tensor_parallel_size")));
    auto built = codegen::PlanKernels::build(module, ranks, codegenOptions);
    if (!built)
      return built.error();
    gpu = std::move(*built);
  }

  // The MTP head's draft program follows the target's ops (Rank.draft_ops_begin).
  auto program = collect(step, module.lookupSymbol<func::FuncOp>("draft"));
  if (!program)
    return program.error();
  ModelFiles files;
  if (options.files) {
    files = *options.files;
  } else {
    auto read = readModelFiles(model.dir);
    if (!read)
      return read.error();
    files = std::move(*read);
  }
  auto specText = readText(spec.specFile);
  if (!specText)
    return specText.error();

  std::vector<pack::WeightSpec> specs;
  for (vx::WeightOp w : program->weights)
    specs.push_back(specOf(w));
  int64_t tp = std::max<int64_t>(1, intOf(deployment, "tensor_parallel_size"));
  std::filesystem::path folder = options.output.parent_path();
  if (folder.empty())
    folder = ".";

  // Liveness for inspection: the ops that use each buffer.
  std::vector<std::pair<uint32_t, uint32_t>> live(program->allocs.size(), {UINT32_MAX, 0});
  for (uint32_t i = 0; i < program->launches.size(); ++i)
    for (Value v : program->launches[i].getOperands_()) {
      Operand o = program->operands.lookup(v);
      if (o.kind() != OperandKind::Arena)
        continue;
      live[o.index()].first = std::min(live[o.index()].first, i);
      live[o.index()].second = std::max(live[o.index()].second, i);
    }

  fb::FlatBufferBuilder b(1 << 20);
  int64_t maxTokens = intOf(memory, "max_num_batched_tokens");
  std::vector<fb::Offset<Rank>> ranks;
  // Packing reads every tensor front to back.
  model.checkpoint->advise(Access::Sequential);
  for (uint32_t r = 0; r < static_cast<uint32_t>(tp); ++r) {
    std::filesystem::path packPath = folder / packFileName(r);
    if (options.log)
      options.log("writing " + packPath.string());
    // Progress for packs over 1 GiB, about every 5 % (the packer reports
    // after every entry, thousands of them in a MoE model).
    uint64_t nextReport = 0;
    auto packed =
        pack::writePack(*model.checkpoint, specs, static_cast<int>(r), packPath,
                        [&](uint64_t done, uint64_t total) {
                          if (!options.log || total <= (1ull << 30) ||
                              (done < nextReport && done < total))
                            return;
                          nextReport = done + total / 20;
                          options.log("  " + formatBytes(done) + " of " + formatBytes(total));
                        });
    if (!packed)
      return packed.error();

    std::vector<fb::Offset<Op>> ops;
    for (size_t i = 0; i < program->launches.size(); ++i) {
      vx::LaunchOp l = program->launches[i];
      std::vector<Operand> operands;
      for (Value v : l.getOperands_())
        operands.push_back(program->operands.lookup(v));
      OpParamsUnion params = vx::launchParams(l);
      ops.push_back(CreateOp(b, vx::launchKind(l), b.CreateVectorOfStructs(operands), params.type,
                             params.Pack(b), gpu ? gpu->writeLaunches(b, r, i) : 0,
                             b.CreateString(l.getName().str())));
    }
    std::vector<fb::Offset<Buffer>> buffers;
    for (size_t i = 0; i < program->allocs.size(); ++i) {
      vx::AllocOp a = program->allocs[i];
      uint64_t bytes = static_cast<uint64_t>(a.getPerTokenBytes() * maxTokens + a.getFixedBytes());
      buffers.push_back(CreateBuffer(
          b, b.CreateString(a.getName().str()), dtypeOf(a.getDtype()),
          static_cast<uint64_t>(*a.getOffset()), bytes, static_cast<uint64_t>(a.getPerTokenBytes()),
          static_cast<uint64_t>(a.getFixedBytes()), live[i].first, live[i].second));
    }
    std::vector<fb::Offset<WeightEntry>> weights;
    for (size_t i = 0; i < program->weights.size(); ++i) {
      vx::WeightOp w = program->weights[i];
      const pack::PackedEntry &e = packed->entries[i];
      std::vector<int64_t> shape(w.getShape().begin(), w.getShape().end());
      std::vector<uint32_t> partRows(w.getPartRows().begin(), w.getPartRows().end());
      std::vector<float> scales;
      if (auto g = w.getGlobalScales())
        scales.assign(g->begin(), g->end());
      const WeightLayout layout = w.getLayout() == "nvfp4" ? WeightLayout::Nvfp4RowMajor
                                  : w.getLayout() == "fp8"   ? WeightLayout::Fp8RowScaled
                                                             : WeightLayout::Dense;
      weights.push_back(CreateWeightEntry(b, b.CreateString(w.getName().str()), layout,
                                          dtypeOf(w.getDtype()), b.CreateVector(shape), e.offset,
                                          e.bytes, e.scalesOffset, b.CreateVector(partRows),
                                          b.CreateVector(scales), e.checksum, e.epilogueOffset));
    }
    auto packInfo = CreateWeightPack(b, b.CreateString(packFileName(r)), packed->fileBytes,
                                     packed->fileChecksum);
    auto caches = cacheGroups(b, memory);
    uint64_t deviceBytes = static_cast<uint64_t>(
        intOf(memory, "cuda_context_bytes") + intOf(memory, "nccl_bytes") +
        static_cast<int64_t>(packed->fileBytes) + intOf(memory, "arena_bytes") +
        intOf(memory, "workspace_bytes") + intOf(memory, "cache_bytes") +
        intOf(memory, "hidden_bytes"));
    ranks.push_back(CreateRank(b, r, b.CreateVector(ops), b.CreateVector(buffers),
                               static_cast<uint64_t>(intOf(memory, "arena_bytes")),
                               static_cast<uint64_t>(intOf(memory, "arena_lower_bound")),
                               static_cast<uint64_t>(intOf(memory, "workspace_bytes")),
                               b.CreateVector(weights), packInfo, caches,
                               static_cast<uint64_t>(intOf(memory, "cache_bytes")), deviceBytes,
                               static_cast<uint32_t>(program->draftLaunchesBegin)));
  }

  auto u32 = [&](StringRef name) { return static_cast<uint32_t>(intOf(modelAttr, name)); };
  std::vector<int32_t> eos = eosTokenIds(model.dir);
  const engine::GenerationDefaults &gd = files.generationDefaults;
  auto optional = [](const auto &value) {
    using T = typename std::decay_t<decltype(value)>::value_type;
    return value ? fb::Optional<T>(*value) : fb::Optional<T>(fb::nullopt);
  };
  fb::Offset<GenerationDefaults> generationDefaults = 0;
  if (!gd.empty())
    generationDefaults =
        CreateGenerationDefaults(b, optional(gd.temperature), optional(gd.topP),
                                 optional(gd.topK), optional(gd.minP),
                                 optional(gd.repetitionPenalty));
  auto modelInfo = CreateModelInfo(
      b, b.CreateString(model.config.architecture), u32("vocab_size"), u32("hidden_size"),
      u32("num_layers"), u32("num_heads"), u32("num_kv_heads"), u32("head_dim"), u32("num_experts"),
      u32("top_k"), u32("max_position_embeddings"), b.CreateVector(eos), -1, generationDefaults);
  auto limits = CreateLimits(b, static_cast<uint32_t>(intOf(deployment, "max_model_len")),
                             static_cast<uint32_t>(intOf(deployment, "max_num_seqs")),
                             static_cast<uint32_t>(maxTokens),
                             static_cast<uint32_t>(intOf(memory, "max_blocks_per_seq")),
                             static_cast<uint32_t>(intOf(deployment, "max_logits_rows")));
  fb::Offset<Speculative> speculative = 0;
  if (spec.speculative.method == spec::SpeculativeMethod::Mtp)
    speculative = CreateSpeculative(
        b, b.CreateString(std::string(spec::speculativeMethodName(spec.speculative.method))),
        static_cast<uint32_t>(spec.speculative.numSpeculativeTokens), 0, 0);
  else if (spec.speculative.method == spec::SpeculativeMethod::Ngram)
    speculative = CreateSpeculative(
        b, b.CreateString(std::string(spec::speculativeMethodName(spec.speculative.method))),
        static_cast<uint32_t>(spec.speculative.numSpeculativeTokens),
        static_cast<uint32_t>(spec.speculative.promptLookupMin),
        static_cast<uint32_t>(spec.speculative.promptLookupMax));
  auto tokenizer = CreateTokenizer(b, b.CreateString(files.tokenizerJson),
                                   b.CreateString(files.tokenizerConfig),
                                   b.CreateString(files.chatTemplate));
  std::string skuText;
  if (auto builtin = spec::builtinSkuText(spec.sku.name))
    skuText = std::string(*builtin);
  std::string servedName =
      spec.servedModelName.empty() ? model.dir.filename().string() : spec.servedModelName;
  auto kernels = gpu ? gpu->writeKernels(b) : b.CreateVector(std::vector<fb::Offset<Kernel>>{});
  auto util = deployment.getAs<FloatAttr>("gpu_memory_utilization");
  auto budget = CreateMemoryBudget(b, static_cast<uint64_t>(intOf(memory, "device_bytes")),
                                   static_cast<uint64_t>(intOf(memory, "budget_bytes")),
                                   static_cast<uint64_t>(intOf(memory, "cuda_context_bytes")),
                                   static_cast<uint64_t>(intOf(memory, "nccl_bytes")),
                                   util ? static_cast<float>(util.getValueAsDouble()) : 0.0f);
  auto plan =
      CreatePlan(b, kFormatVersion, b.CreateString("voltc 0.1.0"), b.CreateString(*specText),
                 b.CreateString(spec.sku.name), b.CreateString(skuText), b.CreateString(arch),
                 b.CreateString(servedName), static_cast<uint32_t>(tp), DType::F16, modelInfo,
                 limits, tokenizer, kernels, b.CreateVector(ranks), spec.seed,
                 spec.enablePrefixCaching, budget, gpu ? gpu->writeSampler(b) : 0, speculative);
  FinishPlanBuffer(b, plan);

  std::filesystem::path tmp = options.output;
  tmp += ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Error(tmp.string() + ": cannot create");
    out.write(reinterpret_cast<const char *>(b.GetBufferPointer()),
              static_cast<std::streamsize>(b.GetSize()));
    if (!out)
      return Error(tmp.string() + ": cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, options.output, ec);
  if (ec)
    return Error(options.output.string() + ": cannot rename: " + ec.message());
  return Status::success();
}

} // namespace volt::plan
