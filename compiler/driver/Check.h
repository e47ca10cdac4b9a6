//===- Check.h - `voltc check`: validate a spec against its model -*- C++ -*-===//
//
// Everything that can be known before compiling: the spec and its SKU are
// valid, the model directory loads (config, quantization claim, every
// tensor's presence, shape and format — or config files alone, before the
// download), the model splits over tensor_parallel_size GPUs, and what each
// GPU will hold. The report is what `voltc check` prints, as text or JSON.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Model.h"
#include "compiler/model/ValueScan.h"
#include "compiler/spec/DeploySpec.h"
#include "runtime/support/Status.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace volt::driver {

struct CheckOptions {
  /// Also read every block scale and global scale (see LoadOptions).
  bool verifyData = false;
  /// `--deep`: also read every floating-point value of the checkpoint (NaN,
  /// infinity, negative scales; compiler/model/ValueScan.h).
  bool deep = false;
  /// Progress of the deep scan.
  std::function<void(const model::ValueScanProgress &)> progress;
};

/// A group of weights that share a role, e.g. every expert's gate_proj.
struct WeightGroup {
  std::string role; ///< "mlp.experts.*.gate_proj", "self_attn.q_proj", "embed_tokens"
  std::string format; ///< "NVFP4", "BF16", "F16", "F32"
  size_t count = 0;
  uint64_t params = 0;
  uint64_t bytes = 0;
};

struct CheckReport {
  spec::DeploySpec spec;
  model::Model model;
  int64_t maxModelLen = 0;
  uint64_t totalParams = 0;
  uint64_t totalBytes = 0;
  std::vector<WeightGroup> groups;
  /// Weight bytes on the largest rank (as stored on the GPU).
  uint64_t rankNvfp4Bytes = 0;
  uint64_t rankFp8Bytes = 0;
  uint64_t rankDenseBytes = 0;
  /// The same for the other tensor-parallel sizes the model supports, for
  /// comparison (tp, bytes).
  std::vector<std::pair<int, uint64_t>> otherTensorParallel;
  /// The deep scan, when it ran (and found nothing: findings are an error).
  std::optional<model::ValueScanReport> deep;
};

/// The checks of a spec against its loaded model: max_model_len within the
/// model's positions (resolved into `maxModelLen`), the quantization
/// request, the tensor-parallel split, prefix caching. The fit advice runs
/// them on each spec it re-plans.
Status checkSpecAgainstModel(const spec::DeploySpec &spec, const model::Model &model,
                             int64_t &maxModelLen);

/// Loads and validates everything `voltc check` covers.
Result<CheckReport> check(const std::filesystem::path &specFile, const CheckOptions &options);

/// The human-readable summary.
std::string formatCheckReport(const CheckReport &report, bool listTensors);
/// The same as JSON, for tools.
nlohmann::json checkReportJson(const CheckReport &report);

} // namespace volt::driver
