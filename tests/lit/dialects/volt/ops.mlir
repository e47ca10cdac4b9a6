// RUN: volt-opt %s | volt-opt | FileCheck %s
// Every volt op prints and parses back unchanged.

// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<8x64xbf16>, tensor<128x32xui8>, tensor<128x4xf8E4M3FN>, tensor<128x64xf16>) {
  // CHECK: volt.weight {names = ["model.layers.0.mlp.gate"], part_rows = array<i64: 8>} : tensor<8x64xbf16>
  %w = volt.weight {names = ["model.layers.0.mlp.gate"], part_rows = array<i64: 8>} : tensor<8x64xbf16>
  // Parts that are rows of one tensor: q and gate alternating per head.
  // CHECK: volt.weight {names = ["q_proj.weight", "q_proj.weight"], part_rows = array<i64: 8, 8>, views = array<i64: -1, 0, 4, 2, 16, -1, 4, 4, 2, 16>} : tensor<16x64xbf16>
  %qg = volt.weight {names = ["q_proj.weight", "q_proj.weight"], part_rows = array<i64: 8, 8>, views = array<i64: -1, 0, 4, 2, 16, -1, 4, 4, 2, 16>} : tensor<16x64xbf16>
  // CHECK: volt.nvfp4_weight {global_scales = array<f32: 1.500000e-04, 2.000000e-04>, names = ["a.gate_proj", "a.up_proj"], part_rows = array<i64: 64, 64>, shards = [#volt.shard<dim = 0, parts = 2, replicas = 1>, #volt.shard<dim = 0, parts = 2, replicas = 1>]}
  %p, %s = volt.nvfp4_weight {names = ["a.gate_proj", "a.up_proj"], part_rows = array<i64: 64, 64>,
      global_scales = array<f32: 1.5e-4, 2.0e-4>, shards = [#volt.shard<dim = 0, parts = 2, replicas = 1>, #volt.shard<dim = 0, parts = 2, replicas = 1>]}
      : tensor<128x32xui8>, tensor<128x4xf8E4M3FN>
  // CHECK: volt.dequant
  %d = volt.dequant %p, %s {global_scales = array<f32: 1.5e-4, 2.0e-4>, part_rows = array<i64: 64, 64>}
      : (tensor<128x32xui8>, tensor<128x4xf8E4M3FN>) -> tensor<128x64xf16>
  return %w, %p, %s, %d : tensor<8x64xbf16>, tensor<128x32xui8>, tensor<128x4xf8E4M3FN>, tensor<128x64xf16>
}

// CHECK-LABEL: func.func @layer
func.func @layer(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %attn: !volt.attention_metadata,
                 %table: tensor<512x64xf16>, %norm: tensor<64xf16>, %qkv_w: tensor<128x64xf16>,
                 %qkv_b: tensor<128xf16>, %hn: tensor<16xf16>, %o_p: tensor<64x32xui8>,
                 %o_s: tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16> {
  // CHECK: volt.embedding %{{.*}}, %{{.*}} {vocab_parallel}
  %x = volt.embedding %tokens, %table {vocab_parallel} : (tensor<?xi32>, tensor<512x64xf16>) -> tensor<?x64xf16>
  // CHECK: volt.all_reduce
  %xs = volt.all_reduce %x : tensor<?x64xf16>
  %h = volt.rms_norm %xs, %norm {eps = 1.0e-06 : f32} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
  // CHECK: volt.linear %{{.*}}, %{{.*}}, %{{.*}} :
  %qkv = volt.linear %h, %qkv_w, %qkv_b : (tensor<?x64xf16>, tensor<128x64xf16>, tensor<128xf16>) -> tensor<?x128xf16>
  // CHECK: volt.qk_norm
  %n = volt.qk_norm %qkv, %hn, %hn {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f32}
      : (tensor<?x128xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<?x128xf16>
  // CHECK: volt.rope
  %r = volt.rope %n, %positions {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, theta = 1.0e+06 : f32}
      : (tensor<?x128xf16>, tensor<?xi32>) -> tensor<?x128xf16>
  // CHECK: volt.qk_norm_rope
  %r2 = volt.qk_norm_rope %qkv, %positions, %hn, %hn {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64,
      eps = 1.0e-06 : f32, theta = 1.0e+06 : f32}
      : (tensor<?x128xf16>, tensor<?xi32>, tensor<16xf16>, tensor<16xf16>) -> tensor<?x128xf16>
  // CHECK: volt.attention
  %o = volt.attention %r, %attn {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : (tensor<?x128xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
  // CHECK: volt.qlinear
  %y = volt.qlinear %o, %o_p, %o_s {global_scales = array<f32: 1.0e-4>, part_rows = array<i64: 64>}
      : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
  // CHECK: volt.add_rms_norm
  %y2, %res = volt.add_rms_norm %y, %xs, %norm {eps = 1.0e-06 : f32}
      : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<64xf16>) -> (tensor<?x64xf16>, tensor<?x64xf16>)
  %sum = volt.add %y2, %res : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
  return %sum : tensor<?x64xf16>
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x64xf16>, %router: tensor<8x64xf16>, %gu: tensor<8x128x64xf16>, %d: tensor<8x64x64xf16>,
               %gup: tensor<8x128x32xui8>, %gus: tensor<8x128x4xf8E4M3FN>, %dp: tensor<8x64x32xui8>,
               %ds: tensor<8x64x4xf8E4M3FN>, %sg: tensor<?x1xf16>, %rows: tensor<?xi32>) -> (tensor<?x64xf16>, tensor<?x128xf32>) {
  %logits = volt.linear %x, %router : (tensor<?x64xf16>, tensor<8x64xf16>) -> tensor<?x8xf32>
  // CHECK: volt.moe_router %{{.*}} {renormalize, top_k = 2 : i64}
  %ids, %w = volt.moe_router %logits {top_k = 2 : i64, renormalize} : (tensor<?x8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  // CHECK: volt.moe_experts
  %y = volt.moe_experts %x, %ids, %w, %gu, %d
      : (tensor<?x64xf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x128x64xf16>, tensor<8x64x64xf16>) -> tensor<?x64xf16>
  // CHECK: volt.moe_qexperts
  %yq = volt.moe_qexperts %x, %ids, %w, %gup, %gus, %dp, %ds
      {gate_up_scales = array<f32: 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0>,
       down_scales = array<f32: 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0>}
      : (tensor<?x64xf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x128x32xui8>, tensor<8x128x4xf8E4M3FN>,
         tensor<8x64x32xui8>, tensor<8x64x4xf8E4M3FN>) -> tensor<?x64xf16>
  // CHECK: volt.sigmoid_gate_add
  %z = volt.sigmoid_gate_add %y, %yq, %sg : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x1xf16>) -> tensor<?x64xf16>
  // CHECK: volt.silu_mul
  %h = volt.silu_mul %z : (tensor<?x64xf16>) -> tensor<?x32xf16>
  // CHECK: volt.gather_rows
  %last = volt.gather_rows %x, %rows : (tensor<?x64xf16>, tensor<?xi32>) -> tensor<?x64xf16>
  %l = volt.linear %last, %router : (tensor<?x64xf16>, tensor<8x64xf16>) -> tensor<?x8xf32>
  // CHECK: volt.all_gather %{{.*}} {parts = 16 : i64}
  %all = volt.all_gather %l {parts = 16 : i64} : (tensor<?x8xf32>) -> tensor<?x128xf32>
  return %z, %all : tensor<?x64xf16>, tensor<?x128xf32>
}
