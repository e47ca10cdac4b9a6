//===- Session.cpp --------------------------------------------------------===//
#include "runtime/serving/Session.h"

#include "runtime/cuda/CudaBackend.h"
#include "runtime/executor/CpuBackend.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/StepOperands.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace volt::serving {
namespace {

/// The engine's view of the tokenizer's streaming decoder.
class StreamingDetokenizer : public engine::Detokenizer {
public:
  StreamingDetokenizer(const tok::Tokenizer &tokenizer, bool skipSpecial)
      : decoder_(tokenizer, skipSpecial) {}
  Result<std::string> step(int32_t token) override { return decoder_.step(token); }
  Result<std::string> finish() override { return decoder_.finish(); }

private:
  tok::IncrementalDecoder decoder_;
};

} // namespace

Session::~Session() {
  // The engine refers to the backend; it goes first.
  engine_.reset();
  backend_.reset();
}

Result<std::unique_ptr<Session>> Session::open(const std::filesystem::path &path,
                                               const SessionOptions &options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Session> s(new Session());
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "cuda")
    return Error("--backend: unknown backend '" + options.backend + "' (valid: auto, cpu, cuda)");
  if (options.syntheticWeights && options.backend == "cpu")
    return Error("--synthetic-weights: the cpu backend runs only a plan's real weights; "
                 "synthetic weights are for benchmarking the cuda backend (--backend cuda)");
  plan::LoadOptions load;
  load.verifyChecksums = options.verifyChecksums;
  load.loadWeights = !options.syntheticWeights;
  auto loaded = plan::LoadedPlan::load(path, load);
  if (!loaded)
    return loaded.error();
  s->loaded_ = std::move(*loaded);
  s->syntheticWeights_ = options.syntheticWeights;
  const plan::Plan &p = s->loaded_->plan();
  std::string arch = p.arch() ? p.arch()->str() : "";
  if (options.syntheticWeights && arch.rfind("sm_", 0) != 0)
    return Error(path.string() + ": --synthetic-weights: the plan was compiled for " +
                 (arch.empty() ? "?" : arch) +
                 ", not for a GPU; synthetic weights are for benchmarking the cuda backend: "
                 "compile the spec for a GPU target");
  // auto: the GPU the plan was compiled for when one is usable here, else
  // the cpu backend (which runs any plan), saying why.
  std::string cudaError;
  if (options.backend == "cuda" || (options.backend == "auto" && arch != "cpu")) {
    cuda::CudaBackendOptions cudaOptions;
    cudaOptions.syntheticWeights = options.syntheticWeights;
    auto gpu = cuda::CudaBackend::create(*s->loaded_, cudaOptions);
    if (gpu) {
      s->backendName_ = "cuda";
      std::string devices;
      for (const std::string &d : (*gpu)->describeDevices())
        devices += (devices.empty() ? "" : ", ") + d;
      s->backendReason_ = (options.backend == "cuda" ? "as asked (--backend cuda): "
                                                     : "the plan is for " + arch + ": ") +
                          devices;
      s->backend_ = std::move(*gpu);
    } else if (options.backend == "cuda" || options.syntheticWeights) {
      // Without its weights the plan cannot fall back to the cpu backend.
      return options.syntheticWeights
                 ? Error("--synthetic-weights needs the cuda backend: " + gpu.message())
                 : gpu.error();
    } else {
      cudaError = gpu.message();
    }
  }
  if (!s->backend_) {
    executor::CpuBackendOptions cpuOptions;
    cpuOptions.threads = options.threads;
    cpuOptions.candidates = options.cpuCandidates;
    cpuOptions.numerics = options.cpuNumerics;
    cpuOptions.weights = options.cpuWeights;
    auto cpu = executor::CpuBackend::create(*s->loaded_, cpuOptions);
    if (!cpu)
      return cpu.error();
    s->backendName_ = "cpu";
    if (options.backend == "cpu")
      s->backendReason_ = "as asked (--backend cpu)";
    else if (arch == "cpu")
      s->backendReason_ = "the plan is for the cpu backend";
    else
      s->backendReason_ = "the plan is for " + arch + " but no GPU is usable here (" + cudaError +
                          "); the cpu backend runs the same ops";
    if (options.cpuNumerics == cpu::Numerics::Fast)
      s->backendReason_ += cpu::fastNumericsAvailable()
                               ? "; fast numerics (BF16 dot products)"
                           : cpu::fastFmaAvailable()
                               ? "; fast numerics (fused multiply-adds: this CPU has no "
                                 "AVX512_BF16)"
                               : "; fast numerics asked, but this CPU has neither AVX512_BF16 "
                                 "nor FMA: reference numerics";
    s->backendReason_ += "; " + (*cpu)->weightsDescription();
    s->backend_ = std::move(*cpu);
  }

  const plan::Tokenizer *t = p.tokenizer();
  auto tokenizer = tok::Tokenizer::fromJson(t->tokenizer_json() ? t->tokenizer_json()->str() : "",
                                            path.string() + " (embedded tokenizer.json)");
  if (!tokenizer)
    return tokenizer.error();
  s->tokenizer_ = std::move(*tokenizer);
  if (t->chat_template() && t->chat_template()->size() > 0) {
    auto parsed = chat::ChatTemplate::parse(t->chat_template()->str(),
                                            path.string() + " (embedded chat template)");
    if (!parsed)
      return parsed.error();
    s->chatTemplate_ = std::move(*parsed);
  }
  s->specialTokens_ = nlohmann::ordered_json::object();
  if (t->tokenizer_config_json() && t->tokenizer_config_json()->size() > 0) {
    auto config = nlohmann::ordered_json::parse(t->tokenizer_config_json()->str(), nullptr, false);
    if (config.is_object())
      for (const char *key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
        if (!config.contains(key))
          continue;
        const auto &v = config[key];
        if (v.is_string())
          s->specialTokens_[key] = v;
        else if (v.is_object() && v.contains("content") && v["content"].is_string())
          s->specialTokens_[key] = v["content"];
      }
  }

  engine::EngineConfig config = plan::engineConfigOf(p);
  s->generationDefaults_ = plan::generationDefaultsOf(p);
  if (options.samplerThreads < 0 || options.samplerThreads > 256)
    return Error("sampler threads: expected 0 (one per core) to 256, found " +
                 std::to_string(options.samplerThreads));
  config.samplerThreads =
      options.samplerThreads > 0
          ? options.samplerThreads
          : static_cast<int32_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  auto engine = engine::Engine::create(config, *s->backend_);
  if (!engine)
    return Error(path.string() + ": " + engine.message());
  s->engine_ = std::move(*engine);
  s->servedModelName_ = p.served_model_name() ? p.served_model_name()->str() : "model";
  s->loadSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

std::unique_ptr<engine::Detokenizer> Session::detokenizer(bool skipSpecialTokens) const {
  return std::make_unique<StreamingDetokenizer>(*tokenizer_, skipSpecialTokens);
}

Result<std::string> Session::applyChatTemplate(const nlohmann::ordered_json &messages,
                                               bool addGenerationPrompt,
                                               const nlohmann::ordered_json *tools,
                                               const nlohmann::ordered_json *templateKwargs) const {
  if (!chatTemplate_)
    return Error("the model has no chat template; send a plain prompt instead");
  if (!templateKwargs || !templateKwargs->is_object() || templateKwargs->empty())
    return chatTemplate_->apply(messages, addGenerationPrompt, tools, specialTokens_);
  nlohmann::ordered_json context = specialTokens_;
  for (auto it = templateKwargs->begin(); it != templateKwargs->end(); ++it)
    context[it.key()] = it.value();
  return chatTemplate_->apply(messages, addGenerationPrompt, tools, context);
}

} // namespace volt::serving
