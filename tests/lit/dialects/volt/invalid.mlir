// RUN: volt-opt %s -split-input-file -verify-diagnostics
// Each verifier rejects a malformed op with a message that names the problem.

func.func @weight_names() {
  // expected-error @+1 {{has 1 names for 2 part(s); expected 2}}
  %w = volt.weight {names = ["a"], part_rows = array<i64: 4, 4>} : tensor<8x16xf16>
  return
}

// -----

func.func @weight_rows() {
  // expected-error @+1 {{part_rows sum to 6 but the weight has 8 rows}}
  %w = volt.weight {names = ["a", "b"], part_rows = array<i64: 3, 3>} : tensor<8x16xf16>
  return
}

// -----

func.func @weight_experts() {
  // expected-error @+1 {{stacks 4 experts but its leading dimension is 2}}
  %w = volt.weight {names = ["a", "b", "c", "d"], part_rows = array<i64: 8>, experts = 4 : i64} : tensor<2x8x16xf16>
  return
}

// -----

func.func @weight_views_count() {
  // expected-error @+1 {{has 5 view numbers for 2 names; expected 5 per name (expert, offset, stride, groups, tensor_rows)}}
  %w = volt.weight {names = ["a", "a"], part_rows = array<i64: 4, 4>, views = array<i64: -1, 0, 0, 1, 8>} : tensor<8x16xf16>
  return
}

// -----

func.func @weight_views_groups() {
  // expected-error @+1 {{has an invalid row view for name 1: expert -1, offset 4, stride 0, groups 0, tensor_rows 8}}
  %w = volt.weight {names = ["a", "a"], part_rows = array<i64: 4, 4>, views = array<i64: -1, 0, 0, 1, 8, -1, 4, 0, 0, 8>} : tensor<8x16xf16>
  return
}

// -----

func.func @weight_fp8_rows_without_scales() {
  // expected-error @+1 {{has fp8_rows but not a scale for every name}}
  %w = volt.weight {names = ["a", "b"], part_rows = array<i64: 4, 4>, scale_names = ["a_scale", ""], fp8_rows} : tensor<8x16xf16>
  return
}

// -----

func.func @weight_fp8_rows_with_add_one() {
  // expected-error @+1 {{has fp8_rows with add_one}}
  %w = volt.weight {names = ["a"], part_rows = array<i64: 8>, scale_names = ["a_scale"], fp8_rows, add_one} : tensor<8x16xf16>
  return
}

// -----

func.func @nvfp4_scales() {
  // expected-error @+1 {{must have one scale per 16 of the 64 columns}}
  %p, %s = volt.nvfp4_weight {names = ["a"], part_rows = array<i64: 8>, global_scales = array<f32: 1.0>}
      : tensor<8x32xui8>, tensor<8x2xf8E4M3FN>
  return
}

// -----

func.func @nvfp4_global_scale() {
  // expected-error @+1 {{global scales must be positive and finite, found 0}}
  %p, %s = volt.nvfp4_weight {names = ["a"], part_rows = array<i64: 8>, global_scales = array<f32: 0.0>}
      : tensor<8x32xui8>, tensor<8x4xf8E4M3FN>
  return
}

// -----

func.func @dequant_shape(%p: tensor<8x32xui8>, %s: tensor<8x4xf8E4M3FN>) {
  // expected-error @+1 {{must have the logical shape of the packed weight}}
  %w = volt.dequant %p, %s {global_scales = array<f32: 1.0>, part_rows = array<i64: 8>}
      : (tensor<8x32xui8>, tensor<8x4xf8E4M3FN>) -> tensor<8x32xf16>
  return
}

// -----

func.func @linear_k(%x: tensor<?x32xf16>, %w: tensor<8x64xf16>) {
  // expected-error @+1 {{input must have 64 columns, found tensor<?x32xf16>}}
  %y = volt.linear %x, %w : (tensor<?x32xf16>, tensor<8x64xf16>) -> tensor<?x8xf16>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x64xf16>, %w: tensor<8x64xf16>, %b: tensor<4xf16>) {
  // expected-error @+1 {{bias must have 8 elements}}
  %y = volt.linear %x, %w, %b : (tensor<?x64xf16>, tensor<8x64xf16>, tensor<4xf16>) -> tensor<?x8xf16>
  return
}

// -----

func.func @qlinear_parts(%x: tensor<?x64xf16>, %p: tensor<8x32xui8>, %s: tensor<8x4xf8E4M3FN>) {
  // expected-error @+1 {{has 1 global scales; expected 2}}
  %y = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0>, part_rows = array<i64: 4, 4>}
      : (tensor<?x64xf16>, tensor<8x32xui8>, tensor<8x4xf8E4M3FN>) -> tensor<?x8xf16>
  return
}

// -----

func.func @qlinear_epilogue(%x: tensor<?x64xf16>, %p: tensor<8x32xui8>, %s: tensor<8x4xf8E4M3FN>) {
  // expected-error @+1 {{unknown epilogue 'gelu' (valid: silu_mul)}}
  %y = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0, 1.0>, part_rows = array<i64: 4, 4>, epilogue = "gelu"}
      : (tensor<?x64xf16>, tensor<8x32xui8>, tensor<8x4xf8E4M3FN>) -> tensor<?x4xf16>
  return
}

// -----

func.func @silu_odd(%x: tensor<?x7xf16>) {
  // expected-error @+1 {{input must have an even last dimension}}
  %y = volt.silu_mul %x : (tensor<?x7xf16>) -> tensor<?x3xf16>
  return
}

// -----

func.func @attention_heads(%qkv: tensor<?x128xf16>, %m: !volt.attention_metadata) {
  // expected-error @+1 {{num_heads 3 is not a multiple of num_kv_heads 2}}
  %o = volt.attention %qkv, %m {layer = 0 : i64, num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : (tensor<?x128xf16>, !volt.attention_metadata) -> tensor<?x48xf16>
  return
}

// -----

func.func @attention_width(%qkv: tensor<?x96xf16>, %m: !volt.attention_metadata) {
  // expected-error @+1 {{qkv must have 128 columns, found tensor<?x96xf16>}}
  %o = volt.attention %qkv, %m {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : (tensor<?x96xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
  return
}

// -----

func.func @rope_odd_head(%qkv: tensor<?x90xf16>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{needs positive head counts and an even head_dim}}
  %r = volt.rope %qkv, %pos {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 15 : i64, theta = 1.0e+04 : f32}
      : (tensor<?x90xf16>, tensor<?xi32>) -> tensor<?x90xf16>
  return
}

// -----

func.func @router_topk(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{top_k 9 must be in 1..8}}
  %ids, %w = volt.moe_router %l {top_k = 9 : i64} : (tensor<?x8xf32>) -> (tensor<?x9xi32>, tensor<?x9xf32>)
  return
}

// -----

func.func @experts_shapes(%x: tensor<?x64xf16>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                          %gu: tensor<8x100x64xf16>, %d: tensor<8x64x64xf16>) {
  // expected-error @+1 {{gate_up [E, 2I, H] and down [E, H, I] disagree}}
  %y = volt.moe_experts %x, %ids, %w, %gu, %d
      : (tensor<?x64xf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x100x64xf16>, tensor<8x64x64xf16>) -> tensor<?x64xf16>
  return
}

// -----

func.func @experts_count(%x: tensor<?x64xf16>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                         %gu: tensor<8x128x64xf16>, %d: tensor<4x64x64xf16>) {
  // expected-error @+1 {{gate_up has 8 experts but down has 4}}
  %y = volt.moe_experts %x, %ids, %w, %gu, %d
      : (tensor<?x64xf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x128x64xf16>, tensor<4x64x64xf16>) -> tensor<?x64xf16>
  return
}

// -----

func.func @gate_shape(%x: tensor<?x64xf16>, %g: tensor<?x2xf16>) {
  // expected-error @+1 {{gate must have 1 columns}}
  %y = volt.sigmoid_gate_add %x, %x, %g : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x2xf16>) -> tensor<?x64xf16>
  return
}

// -----

func.func @gather_parts(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{result must have 16 columns}}
  %y = volt.all_gather %x {parts = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}
