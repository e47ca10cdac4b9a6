// RUN: volt-opt %s | volt-opt | FileCheck %s
// Every vexec op prints and parses back unchanged; a launch may leave out
// the params its kind gives a default (QLinear's out_dtype and epilogue)
// and the optional operands (the bias).

// CHECK-LABEL: func.func @step
// CHECK: vexec.input {name = "tokens"}
// CHECK: vexec.input {name = "logits_rows"}
// CHECK: vexec.output {name = "logits"}
// CHECK: vexec.kv_cache {layer = 3 : i64}
// CHECK: vexec.state {dtype = f32, group = "ema", layer = 0 : i64, slot_bytes = 256 : i64}
// CHECK: vexec.weight {{{.*}}name = "model.layers.0.self_attn.qkv"
// CHECK: vexec.alloc {{{.*}}name = "h"
// CHECK: vexec.launch "QLinear"(%{{.*}}, %{{.*}}, %{{.*}}) {kernels = [], name = "qkv", params = {dim = 64 : i64, out_features = 64 : i64}}
// CHECK: vexec.launch "QLinear"({{.*}}) {kernels = [{kernel = "nvfp4_gemv", max_tokens = 8 : i64, warps = 2 : i64}], name = "gate_up", params = {dim = 64 : i64, epilogue = "silu_mul", out_dtype = "f16", out_features = 64 : i64}}
// CHECK: vexec.launch "AllReduce"
func.func @step() {
  %tokens = vexec.input {name = "tokens"} : !vexec.buffer
  %rows = vexec.input {name = "logits_rows"} : !vexec.buffer
  %logits = vexec.output {name = "logits"} : !vexec.buffer
  %kv = vexec.kv_cache {layer = 3 : i64} : !vexec.buffer
  %ema = vexec.state {group = "ema", layer = 0 : i64, dtype = f32, slot_bytes = 256 : i64}
      : !vexec.buffer
  %w = vexec.weight {name = "model.layers.0.self_attn.qkv", names = ["q", "k", "v"],
      part_rows = array<i64: 32, 16, 16>, layout = "nvfp4", dtype = ui8,
      shape = array<i64: 64, 64>, experts = 0 : i64, global_scales = array<f32: 1.0, 1.0, 1.0>}
      : !vexec.buffer
  %h = vexec.alloc {name = "h", dtype = f16, per_token_bytes = 128 : i64, fixed_bytes = 0 : i64,
      offset = 0 : i64} : !vexec.buffer
  %o = vexec.alloc {name = "o", dtype = f16, per_token_bytes = 128 : i64, fixed_bytes = 0 : i64}
      : !vexec.buffer
  vexec.launch "QLinear"(%h, %w, %o) {params = {dim = 64 : i64, out_features = 64 : i64},
      kernels = [], name = "qkv"} : !vexec.buffer, !vexec.buffer, !vexec.buffer
  vexec.launch "QLinear"(%h, %w, %o) {params = {dim = 64 : i64, out_features = 64 : i64,
      out_dtype = "f16", epilogue = "silu_mul"},
      kernels = [{max_tokens = 8 : i64, kernel = "nvfp4_gemv", warps = 2 : i64}], name = "gate_up"}
      : !vexec.buffer, !vexec.buffer, !vexec.buffer
  vexec.launch "AllReduce"(%o) {params = {dim = 64 : i64}, kernels = [], name = "all_reduce"}
      : !vexec.buffer
  return
}
