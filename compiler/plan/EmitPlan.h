//===- EmitPlan.h - the vexec module as a plan file + weight packs -*- C++ -*-===//
//
// The last phase: every launch, buffer and weight of the planned vexec
// module becomes a field of the FlatBuffer plan (runtime/schema/plan.fbs),
// each rank's weights are packed into weights.rankN.bin beside it, and the
// tokenizer and chat template are embedded (after checking that the runtime
// can load them, so that a plan never fails on them at serve time). The
// same inputs give byte-identical files.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Model.h"
#include "compiler/spec/DeploySpec.h"
#include "runtime/engine/GenerationDefaults.h"
#include "runtime/support/Status.h"

#include "mlir/IR/BuiltinOps.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace volt::plan {

/// What a plan embeds from the model's folder besides its weights, each
/// file checked by the runtime's own loader (a plan never fails on them at
/// serve time): tokenizer.json (required), tokenizer_config.json and the chat
/// template (chat_template.jinja or tokenizer_config.json's), and a
/// generation_config.json that must parse when present.
struct ModelFiles {
  std::string tokenizerJson;
  std::string tokenizerConfig;
  std::string chatTemplate;
  /// generation_config.json's sampling fields (none without the file).
  engine::GenerationDefaults generationDefaults;
};

/// Reads and checks the files above; compile calls it before any expensive
/// phase, so that a missing tokenizer fails in milliseconds, not after the
/// kernels are built.
Result<ModelFiles> readModelFiles(const std::filesystem::path &dir);

struct EmitOptions {
  /// The plan file; the packs go to the same folder.
  std::filesystem::path output;
  /// The model's files from readModelFiles; read again when not given.
  std::optional<ModelFiles> files;
  /// Progress messages for long writes (packs of large models).
  std::function<void(const std::string &)> log;
};

/// Writes the plan of `module` (after --vexec-plan-memory) for `spec` and
/// `model`.
Status emitPlan(mlir::ModuleOp module, const spec::DeploySpec &spec, const model::Model &model,
                const EmitOptions &options);

} // namespace volt::plan
