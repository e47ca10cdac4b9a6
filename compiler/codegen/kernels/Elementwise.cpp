//===- Elementwise.cpp ---------------------------------------------------===//
//
// The element-wise kernels: embedding, the norms, QK-norm + RoPE, SiLU·mul,
// the shared-expert gate and the row gather.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelDefs.h"
#include "compiler/codegen/LaunchContext.h"

namespace volt::codegen::kernels {

Result<PlannedLaunch> planEmbedding(LaunchContext &c, const Variant &v) {
  const OperandInfo &table = c.at(1);
  const auto &p = c.params<plan::EmbeddingParamsT>();
  int64_t rows = p.vocab_rows ? p.vocab_rows : (table.shape.empty() ? 0 : table.shape[0]);
  KernelRequest r{"embedding", {}, configThreads(v, 128), 0};
  r.set("dim", p.dim).set("vocab_rows", rows);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(table), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount(),
            LaunchArg::i32Value(static_cast<int32_t>(
                plan::vocabStart(p.vocab_rows, p.vocab_parallel, c.program.rank)))};
  return l;
}

Result<PlannedLaunch> rmsNormLaunch(LaunchContext &c, const Variant &v, bool add) {
  const OperandInfo &in = c.at(0);
  const uint32_t dim =
      add ? c.params<plan::AddRmsNormParamsT>().dim : c.params<plan::RmsNormParamsT>().dim;
  const float eps =
      add ? c.params<plan::AddRmsNormParamsT>().eps : c.params<plan::RmsNormParamsT>().eps;
  KernelRequest r{add ? "add_rms_norm" : "rms_norm", {}, configThreads(v, 256), 0};
  r.set("dim", dim).set("in_f32", in.f32);
  if (add)
    r.set("res_f32", c.at(1).f32);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(in);
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(rowsArg(in));
  l.args.push_back(LaunchArg::f32Value(eps));
  return l;
}

Result<PlannedLaunch> planRmsNorm(LaunchContext &c, const Variant &v) {
  return rmsNormLaunch(c, v, false);
}

Result<PlannedLaunch> planAddRmsNorm(LaunchContext &c, const Variant &v) {
  return rmsNormLaunch(c, v, true);
}

Result<PlannedLaunch> planQkNormRope(LaunchContext &c, const Variant &v) {
  const auto &p = c.params<plan::QkNormRopeParamsT>();
  if (p.head_dim == 0 || p.head_dim % 2 != 0 || p.head_dim > 2048)
    return c.error("head_dim " + std::to_string(p.head_dim) +
                   " (an even size up to 2048 expected)");
  bool norm = c.op.operands.size() == 4;
  KernelRequest r{"qk_norm_rope", {}, (p.head_dim / 2 + 31) / 32 * 32, 0};
  const uint32_t rotary = p.rotary_dim ? p.rotary_dim : p.head_dim;
  if (rotary % 2 != 0 || rotary > p.head_dim)
    return c.error("rotary_dim " + std::to_string(rotary) + " (even, at most head_dim " +
                   std::to_string(p.head_dim) + " expected)");
  r.set("heads", p.num_heads).set("kv_heads", p.num_kv_heads).set("head_dim", p.head_dim);
  r.set("rotary_dim", rotary).set("has_norm", norm);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.grid[1] = {0, 0, p.num_heads + p.num_kv_heads, 1};
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    l.args.push_back(LaunchArg::pointer(c.at(i)));
  l.args.push_back(LaunchArg::tokenCount());
  l.args.push_back(LaunchArg::f32Value(p.eps));
  l.args.push_back(LaunchArg::f32Value(p.rope_theta));
  return l;
}

Result<PlannedLaunch> planSiluMul(LaunchContext &c, const Variant &v) {
  KernelRequest r{"silu_mul", {}, configThreads(v, 256), 0};
  r.set("dim", c.params<plan::SiluMulParamsT>().dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), rowsArg(c.at(0))};
  return l;
}

Result<PlannedLaunch> planSigmoidGateAdd(LaunchContext &c, const Variant &v) {
  KernelRequest r{"sigmoid_gate_add", {}, configThreads(v, 256), 0};
  r.set("dim", c.params<plan::SigmoidGateAddParamsT>().dim).set("gate_f32", c.at(2).f32);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            rowsArg(c.at(0))};
  return l;
}

Result<PlannedLaunch> planSigmoidMul(LaunchContext &c, const Variant &v) {
  KernelRequest r{"sigmoid_mul", {}, configThreads(v, 256), 0};
  r.set("dim", c.params<plan::SigmoidMulParamsT>().dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            rowsArg(c.at(0))};
  return l;
}

// One block per logits row: out[r] = in[rows[r]].
Result<PlannedLaunch> planGatherRows(LaunchContext &c, const Variant &v) {
  KernelRequest r{"gather_rows", {}, configThreads(v, 128), 0};
  r.set("dim", c.params<plan::GatherRowsParamsT>().dim).set("element_bytes", c.at(0).f32 ? 4 : 2);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::rows();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::rowCount()};
  return l;
}

// One block per token of a draft step: out[t] = hidden[rows[t]].
Result<PlannedLaunch> planGatherHidden(LaunchContext &c, const Variant &v) {
  KernelRequest r{"gather_hidden", {}, configThreads(v, 128), 0};
  r.set("dim", c.params<plan::GatherHiddenParamsT>().dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = GridRule::tokens();
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            LaunchArg::tokenCount()};
  return l;
}

// One block per row: out[t] = a[t] | b[t].
Result<PlannedLaunch> planConcat(LaunchContext &c, const Variant &v) {
  KernelRequest r{"concat", {}, configThreads(v, 128), 0};
  const auto p = c.params<plan::ConcatParamsT>();
  r.set("a_dim", p.a_dim).set("b_dim", p.b_dim);
  PlannedLaunch l = launch(c, v, r);
  l.grid[0] = rowsRule(c.at(0));
  l.args = {LaunchArg::pointer(c.at(0)), LaunchArg::pointer(c.at(1)), LaunchArg::pointer(c.at(2)),
            rowsArg(c.at(0))};
  return l;
}

} // namespace volt::codegen::kernels
