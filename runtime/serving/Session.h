//===- Session.h - a loaded plan, ready to generate --------------*- C++ -*-===//
//
// Everything volt-run and volt-serve share: the checked plan and its weight
// packs, the backend that runs its steps, the engine that schedules
// requests over it, and the tokenizer and chat template embedded in it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/ChatTemplate.h"
#include "runtime/cpu/Types.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/GenerationDefaults.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace volt::serving {

/// What volt-run and volt-serve print at start-up with --synthetic-weights.
inline constexpr const char *kSyntheticWeightsNotice =
    "--synthetic-weights: the weights are pseudo-random, not the model's; the output is "
    "meaningless text (for benchmarking speed only)";

struct SessionOptions {
  /// "cpu", "cuda", or "auto" (cuda when the plan is for a GPU present
  /// here, else cpu).
  std::string backend = "auto";
  /// CPU threads for the cpu backend (0: all).
  int threads = 0;
  /// The cpu backend's sampling candidates per sequence (0: none; see
  /// CpuBackendOptions::candidates): for tests of the candidate path.
  int cpuCandidates = 0;
  /// How the cpu backend's GEMMs multiply (CpuBackendOptions::numerics).
  cpu::Numerics cpuNumerics = cpu::Numerics::Reference;
  /// Where the cpu backend reads the weights from (CpuBackendOptions::weights).
  cpu::WeightMemory cpuWeights = cpu::WeightMemory::Auto;
  /// Threads that sample a step's sequences (0: one per core, at most 8).
  /// The backend is idle while they run, so they may share its cores.
  int samplerThreads = 0;
  bool verifyChecksums = true;
  /// Benchmarking only: load the plan without its weight packs and have
  /// the cuda backend fill the weight memory with pseudo-random contents
  /// (CudaBackendOptions::syntheticWeights). Needs a GPU plan and the cuda
  /// backend ("auto" means cuda, never a fallback to cpu); the outputs are
  /// meaningless text.
  bool syntheticWeights = false;
};

class Session {
public:
  static Result<std::unique_ptr<Session>> open(const std::filesystem::path &plan,
                                               const SessionOptions &options = {});
  ~Session();

  const plan::Plan &plan() const { return loaded_->plan(); }
  const tok::Tokenizer &tokenizer() const { return *tokenizer_; }
  /// The model's chat template, when it has one.
  const std::optional<chat::ChatTemplate> &chatTemplate() const { return chatTemplate_; }
  engine::Engine &engine() { return *engine_; }
  /// The backend that runs the steps (an executor::CpuBackend or a
  /// CudaBackend).
  engine::StepBackend &backend() { return *backend_; }
  /// "cpu" or "cuda", and why it was chosen.
  const std::string &backendName() const { return backendName_; }
  const std::string &backendReason() const { return backendReason_; }
  /// Whether the weights are synthetic (SessionOptions::syntheticWeights).
  bool syntheticWeights() const { return syntheticWeights_; }
  double loadSeconds() const { return loadSeconds_; }
  /// The sampling defaults of the checkpoint's generation_config.json that
  /// the plan carries (empty: none).
  const engine::GenerationDefaults &generationDefaults() const { return generationDefaults_; }
  /// The plan file's checksum (LoadedPlan::fileChecksum).
  uint64_t planChecksum() const { return loaded_->fileChecksum(); }
  const std::string &servedModelName() const { return servedModelName_; }

  /// A streaming detokenizer for one request.
  std::unique_ptr<engine::Detokenizer> detokenizer(bool skipSpecialTokens) const;

  /// Renders `messages` with the chat template (error when there is none).
  /// `templateKwargs` (an object) adds template variables, as vLLM's
  /// chat_template_kwargs do (e.g. enable_thinking).
  Result<std::string>
  applyChatTemplate(const nlohmann::ordered_json &messages, bool addGenerationPrompt,
                    const nlohmann::ordered_json *tools = nullptr,
                    const nlohmann::ordered_json *templateKwargs = nullptr) const;

private:
  Session() = default;
  std::unique_ptr<plan::LoadedPlan> loaded_;
  std::unique_ptr<engine::StepBackend> backend_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::optional<chat::ChatTemplate> chatTemplate_;
  nlohmann::ordered_json specialTokens_;
  std::string backendName_, backendReason_, servedModelName_;
  double loadSeconds_ = 0;
  bool syntheticWeights_ = false;
  engine::GenerationDefaults generationDefaults_;
};

} // namespace volt::serving
