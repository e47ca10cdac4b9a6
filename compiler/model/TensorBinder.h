//===- TensorBinder.h - a checkpoint's tensors, bound by name ----*- C++ -*-===//
//
// What family files (compiler/model/families/) bind a layer's weights with:
// each weight found by its Hugging Face name, its format decided from the
// tensors present (dense, or NVFP4 in either exporter's convention), every
// shape and dtype checked. Errors name the tensor and the file that holds
// it. Without weights (config files only), weights are predicted from the
// quantization config. The binder remembers what it took, so that what is
// left over is reported as unused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/model/Model.h"
#include "runtime/support/Status.h"

#include <set>
#include <string>
#include <vector>

namespace volt::model {

class TensorBinder {
public:
  TensorBinder(const Model &model, const LoadOptions &options);

  bool hasWeights() const;

  /// The tensor `name`, marked used; null when absent (or no weights).
  const Tensor *take(const std::string &name);

  /// A float parameter of exact shape.
  Result<Param> param(const std::string &name, std::vector<int64_t> shape);

  /// A linear layer [out, in], dense or NVFP4 as the tensors present say
  /// (`quantizable`: a config-only model predicts NVFP4 for it where the
  /// quantization config does).
  Result<Linear> linear(const std::string &module, int64_t out, int64_t in, bool withBias = false,
                        bool quantizable = true);

  /// Rows of one tensor that make a part: `groups` runs, the first at row
  /// `offset`, `stride` apart, `rows` in all (RowView).
  struct Rows {
    int64_t offset = 0, stride = 0, groups = 1, rows = 0;
  };

  /// `module` as a linear layer [tensorRows, in] whose rows hold several
  /// parts (in_proj_qkv's q, k and v): one Linear per part, each a view of
  /// the tensor. The parts must tile the rows (an internal check).
  Result<std::vector<Linear>> linearParts(const std::string &module, int64_t tensorRows,
                                          int64_t in, const std::vector<Rows> &parts);

  /// Expert `expert` of the stacked dense tensor `name` [experts,
  /// tensorRows, in] (transformers' fused experts: gate_up_proj [E, 2I, H],
  /// down_proj [E, H, I]) as one Linear per part of its rows, each a view
  /// (RowView::expert) of the tensor. Needs the weights.
  Result<std::vector<Linear>> expertParts(const std::string &name, int64_t experts,
                                          int64_t expert, int64_t tensorRows, int64_t in,
                                          const std::vector<Rows> &parts);

  /// Whether the checkpoint has tensor `name` (nothing is marked used).
  bool has(const std::string &name) const;

  /// `name` as a float parameter of `shape` whose rows hold several parts
  /// (a conv weight [C, 1, K]): one Param per part, of shape [rows,
  /// product of the rest].
  Result<std::vector<Param>> paramParts(const std::string &name, std::vector<int64_t> shape,
                                        const std::vector<Rows> &parts);

  /// The checkpoint's tensors nobody took.
  std::vector<std::string> unused() const;

  /// "missing tensor 'a' (or 'b') in DIR (LAYOUT)".
  Error missing(const std::string &name, const std::string &alternative = "") const;

private:
  std::string located(const Tensor &t) const;
  Linear predict(Linear lin, bool quantizable) const;
  Result<Linear> nvfp4(Linear lin, const Tensor &packed, const std::string &globalName,
                       bool globalIsDivisor);
  /// An FP8 E4M3 weight [N, K] and its scale (per tensor, row or block).
  Result<Linear> fp8(Linear lin, const Tensor &weight);
  Status verifyBlockScales(const Tensor &scales, int64_t perRow) const;

  const Model &model_;
  const Checkpoint *ckpt_;
  LoadOptions options_;
  DType denseDtype_;
  std::set<std::string> used_;
};

/// `lhs = *expr`, or return the error of `expr`.
#define VOLT_BIND(lhs, expr)                                                                       \
  do {                                                                                             \
    auto r_ = (expr);                                                                              \
    if (!r_)                                                                                       \
      return r_.error();                                                                           \
    lhs = std::move(*r_);                                                                          \
  } while (false)

} // namespace volt::model
