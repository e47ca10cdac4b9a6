//===- Compile.cpp --------------------------------------------------------===//
#include "compiler/driver/Compile.h"

#include "compiler/driver/Check.h"
#include "compiler/driver/FitAdvice.h"
#include "compiler/import/ImportModel.h"
#include "compiler/plan/EmitPlan.h"
#include "dialects/Transforms/Passes.h"
#include "runtime/support/Strings.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace volt::driver {
namespace {

int64_t intOf(mlir::DictionaryAttr d, llvm::StringRef name) {
  auto a = d ? d.getAs<mlir::IntegerAttr>(name) : mlir::IntegerAttr();
  return a ? a.getInt() : 0;
}

/// Collects error diagnostics as text, for a Result.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx)
      : handler_(&ctx, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
            return mlir::success();
          if (!text_.empty())
            text_ += "\n";
          if (auto loc = mlir::dyn_cast<mlir::NameLoc>(d.getLocation()))
            text_ += loc.getName().str() + ": ";
          text_ += d.str();
          // Notes that print IR ("see current operation: ...", the whole
          // module) are for compiler developers (volt-opt shows them), never
          // for a user reading an error.
          for (const mlir::Diagnostic &note : d.getNotes()) {
            const std::string n = note.str();
            if (n.starts_with("see current operation") || n.find("\"builtin.module\"") != std::string::npos)
              continue;
            text_ += "\n  note: " + n;
          }
          return mlir::success();
        }) {}
  const std::string &text() const { return text_; }

private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

/// The outcome of --vexec-plan-memory on `module`: `vexec.memory` when the
/// deployment fits, `vexec.shortfall` when it does not; nothing when the
/// pass did not get that far.
std::optional<PlannedMemory> plannedMemoryOf(mlir::ModuleOp module) {
  auto read = [](mlir::DictionaryAttr d, bool fits) {
    PlannedMemory p;
    p.fits = fits;
    p.budgetBytes = intOf(d, "budget_bytes");
    p.kvBudgetBytes = intOf(d, "kv_budget_bytes");
    p.kvBlockBytes = intOf(d, "kv_block_bytes");
    p.kvBlockSize = intOf(d, "kv_block_size");
    p.blocksPerSeq = intOf(d, "max_blocks_per_seq");
    p.stateBytes = intOf(d, "state_bytes");
    p.weightBytes = intOf(d, "weight_bytes");
    return p;
  };
  if (auto memory = module->getAttrOfType<mlir::DictionaryAttr>("vexec.memory"))
    return read(memory, true);
  if (auto shortfall = module->getAttrOfType<mlir::DictionaryAttr>("vexec.shortfall"))
    return read(shortfall, false);
  return std::nullopt;
}

pipeline::PipelineOptions pipelineOptionsOf(const spec::DeploySpec &spec) {
  pipeline::PipelineOptions options;
  options.residualDtype = spec.residualDtype == spec::ResidualDtype::Fp32 ? "f32" : "f16";
  return options;
}

/// The memory plan of `spec` for the loaded `model`, computed as a compile
/// computes it (import, then the pipeline to the memory phase).
Result<PlannedMemory> replanMemory(const spec::DeploySpec &spec, const model::Model &model) {
  int64_t maxModelLen = 0;
  VOLT_RETURN_IF_ERROR(checkSpecAgainstModel(spec, model, maxModelLen));
  mlir::MLIRContext context;
  context.printOpOnDiagnostic(false);
  context.loadDialect<volt::vexec::VexecDialect>();
  DiagnosticCollector diagnostics(context);
  import::ImportOptions importOptions;
  importOptions.maxModelLen = maxModelLen;
  importOptions.quantizeNvfp4 = spec.weights.quantize == spec::WeightQuantization::Nvfp4;
  auto module = import::importModel(context, spec, model, importOptions);
  if (!module)
    return module.error();
  mlir::PassManager pm(&context);
  pipeline::buildPipeline(pm, pipeline::Phase::Memory, pipelineOptionsOf(spec));
  (void)pm.run(**module);
  if (auto planned = plannedMemoryOf(**module))
    return *planned;
  return Error(diagnostics.text().empty() ? "compilation failed" : diagnostics.text());
}

} // namespace

std::string formatMemoryPlan(mlir::ModuleOp module) {
  auto memory = module->getAttrOfType<mlir::DictionaryAttr>("vexec.memory");
  auto target = module->getAttrOfType<mlir::DictionaryAttr>("volt.target");
  auto deployment = module->getAttrOfType<mlir::DictionaryAttr>("volt.deployment");
  if (!memory || !target || !deployment)
    return "(no memory plan)\n";
  std::ostringstream out;
  int64_t tp = intOf(deployment, "tensor_parallel_size");
  int64_t maxModelLen = intOf(deployment, "max_model_len");
  auto name = target.getAs<mlir::StringAttr>("name");
  out << "memory plan per GPU: " << tp << " x " << (name ? name.getValue().str() : "?") << ", "
      << formatBytes(static_cast<uint64_t>(intOf(memory, "device_bytes"))) << " each\n";
  auto row = [&](const std::string &what, int64_t bytes, const std::string &note = "") {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-40s %12s  %s\n", what.c_str(),
                  formatBytes(static_cast<uint64_t>(bytes)).c_str(), note.c_str());
    out << buf;
  };
  auto util = deployment.getAs<mlir::FloatAttr>("gpu_memory_utilization");
  char utilText[64];
  std::snprintf(utilText, sizeof utilText, "budget (gpu_memory_utilization %.2f)",
                util ? util.getValueAsDouble() : 0.0);
  row(utilText, intOf(memory, "budget_bytes"));
  row("CUDA context", intOf(memory, "cuda_context_bytes"));
  if (intOf(memory, "nccl_bytes"))
    row("NCCL buffers", intOf(memory, "nccl_bytes"));
  row("weights", intOf(memory, "weight_bytes"));
  int64_t arena = intOf(memory, "arena_bytes"), lower = intOf(memory, "arena_lower_bound");
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, "lower bound %s (x%.2f)",
                formatBytes(static_cast<uint64_t>(lower)).c_str(),
                lower > 0 ? static_cast<double>(arena) / static_cast<double>(lower) : 1.0);
  row("activation arena (" + std::to_string(intOf(memory, "max_num_batched_tokens")) + " tokens)",
      arena, ratio);
  row("kernel workspaces", intOf(memory, "workspace_bytes"));
  int64_t blocks = intOf(memory, "kv_blocks"), blockSize = intOf(memory, "kv_block_size");
  int64_t tokens = blocks * blockSize;
  char kv[160];
  std::snprintf(
      kv, sizeof kv, "%s blocks x %lld tokens = %s tokens = %.1f sequences of %lld",
      formatCount(static_cast<uint64_t>(blocks)).c_str(), static_cast<long long>(blockSize),
      formatCount(static_cast<uint64_t>(tokens)).c_str(),
      maxModelLen > 0 ? static_cast<double>(tokens) / static_cast<double>(maxModelLen) : 0.0,
      static_cast<long long>(maxModelLen));
  // State groups hold a slot per sequence (max_num_seqs of them).
  if (auto caches = memory.getAs<mlir::ArrayAttr>("caches"))
    for (mlir::Attribute a : caches) {
      auto g = mlir::cast<mlir::DictionaryAttr>(a);
      if (g.getAs<mlir::StringAttr>("kind").getValue() != "state_slots")
        continue;
      const int64_t layers =
          static_cast<int64_t>(g.getAs<mlir::DenseI64ArrayAttr>("layers").size());
      char note[160];
      std::snprintf(note, sizeof note, "%lld slots x %s per sequence (%lld layers)",
                    static_cast<long long>(intOf(g, "num_slots")),
                    formatBytes(static_cast<uint64_t>(intOf(g, "slot_bytes") * layers)).c_str(),
                    static_cast<long long>(layers));
      row("recurrent state '" + g.getAs<mlir::StringAttr>("name").getValue().str() + "'",
          intOf(g, "bytes"), note);
    }
  row("KV cache", intOf(memory, "kv_bytes"), kv);
  int64_t total = intOf(memory, "cuda_context_bytes") + intOf(memory, "nccl_bytes") +
                  intOf(memory, "weight_bytes") + arena + intOf(memory, "workspace_bytes") +
                  intOf(memory, "cache_bytes");
  row("total", total);
  char perToken[96];
  std::snprintf(perToken, sizeof perToken, "%lld layers x %lld KV heads x %lld dims x K,V x FP16",
                static_cast<long long>(intOf(memory, "kv_layers")),
                static_cast<long long>(intOf(memory, "kv_heads")),
                static_cast<long long>(intOf(memory, "head_dim")));
  row("KV cache per token", blockSize ? intOf(memory, "kv_block_bytes") / blockSize : 0, perToken);
  return out.str();
}

Result<std::string> compile(const std::filesystem::path &specFile, const CompileOptions &options) {
  CheckOptions checkOptions;
  checkOptions.verifyData = options.verifyData;
  auto checked = check(specFile, checkOptions);
  if (!checked)
    return checked.error();

  // The plan's folder is made, and shown to be writable, before any
  // expensive phase: a compile does not fail at its last step for a
  // missing or read-only folder.
  std::filesystem::path output = options.output;
  if (output.empty())
    output = std::filesystem::path(specFile).replace_extension(".vplan");
  if (options.emit == pipeline::Phase::Plan) {
    std::error_code ec;
    const std::filesystem::path folder = output.parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder) &&
        !std::filesystem::create_directories(folder, ec))
      return Error(specFile.string() + ": cannot create the output folder " + folder.string() +
                   (ec ? ": " + ec.message() : ""));
    const std::filesystem::path probe = output.string() + ".partial";
    {
      std::ofstream test(probe, std::ios::binary | std::ios::trunc);
      if (!test)
        return Error(specFile.string() + ": cannot write the plan at " + output.string() +
                     ": " + std::strerror(errno));
    }
    std::filesystem::remove(probe, ec);
  }
  // Every other input the plan needs, also before any expensive phase.
  std::optional<plan::ModelFiles> modelFiles;
  if (options.emit == pipeline::Phase::Plan) {
    if (!checked->model.hasWeights())
      return Error(specFile.string() + ": the model directory " + checked->model.dir.string() +
                   " has no weight files; a plan needs the weights (use --emit=memory to plan "
                   "the deployment before downloading them)");
    auto files = plan::readModelFiles(checked->model.dir);
    if (!files)
      return Error(specFile.string() + ": " + files.message());
    modelFiles = std::move(*files);
  }
  if (!checked->model.quant.kvCacheQuant.empty() && options.log)
    options.log("note: " + checked->model.quant.kvCacheNote());

  if (!checked->model.quant.kvCacheQuant.empty() && options.log)
    options.log("note: " + checked->model.quant.kvCacheNote());

  mlir::MLIRContext context;
  context.printOpOnDiagnostic(false);
  context.loadDialect<volt::vexec::VexecDialect>();
  DiagnosticCollector diagnostics(context);
  import::ImportOptions importOptions;
  importOptions.maxModelLen = checked->maxModelLen;
  importOptions.readWeightRanges = options.verifyData && checked->model.hasWeights();
  importOptions.quantizeNvfp4 = checked->spec.weights.quantize == spec::WeightQuantization::Nvfp4;
  auto module = import::importModel(context, checked->spec, checked->model, importOptions);
  if (!module)
    return Error(specFile.string() + ": " + module.message());

  mlir::PassManager pm(&context);
  pipeline::buildPipeline(pm, options.emit, pipelineOptionsOf(checked->spec));
  if (mlir::failed(pm.run(**module))) {
    std::string text = diagnostics.text().empty() ? "compilation failed" : diagnostics.text();
    // A deployment that does not fit: re-plan it with other spec values
    // and say which fit.
    if (auto planned = plannedMemoryOf(**module); planned && !planned->fits) {
      spec::DeploySpec spec = checked->spec;
      spec.maxModelLen = checked->maxModelLen;
      const model::Model &model = checked->model;
      auto fits = findFits(spec, *planned, [&](const spec::DeploySpec &s) {
        return replanMemory(s, model);
      });
      while (!text.empty() && text.back() == '\n')
        text.pop_back();
      text += "\n" + formatFitAdvice(spec, fits);
    }
    return Error(specFile.string() + ": " + text);
  }

  if (options.emit == pipeline::Phase::Memory)
    return formatMemoryPlan(**module);
  if (options.emit == pipeline::Phase::Plan) {
    plan::EmitOptions emit;
    emit.output = output;
    emit.log = options.log;
    emit.files = std::move(modelFiles);
    if (auto st = plan::emitPlan(**module, checked->spec, checked->model, emit); !st)
      return Error(specFile.string() + ": " + st.message());
    std::error_code ec;
    uint64_t bytes = std::filesystem::file_size(output, ec);
    return "wrote " + output.string() + " (" + formatBytes(bytes) + ") and " +
           std::to_string(checked->spec.tensorParallelSize) + " weight pack" +
           (checked->spec.tensorParallelSize > 1 ? "s" : "") + " beside it\n" +
           formatMemoryPlan(**module);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os);
  return text;
}

} // namespace volt::driver
