// RUN: volt-opt %s --volt-fuse-elementwise | FileCheck %s

// The residual add and the norm after it become one op; the residual's
// later uses read the fused op's residual_out.
// CHECK-LABEL: func.func @residual
// CHECK: %[[X:.*]] = volt.embedding
// CHECK: %[[Y:.*]], %[[R:.*]] = volt.add_rms_norm %{{.*}}, %[[X]], %{{.*}} {eps = {{.*}} : f32}
// CHECK-NOT: volt.add
// CHECK: return %[[Y]], %[[R]]
func.func @residual(%t: tensor<?xi32>, %table: tensor<8x16xf16>, %b: tensor<?x16xf16>, %w: tensor<16xf16>) -> (tensor<?x16xf16>, tensor<?x16xf16>) {
  %x = volt.embedding %t, %table : (tensor<?xi32>, tensor<8x16xf16>) -> tensor<?x16xf16>
  %r = volt.add %x, %b : (tensor<?x16xf16>, tensor<?x16xf16>) -> tensor<?x16xf16>
  %h = volt.rms_norm %r, %w {eps = 1.0e-06 : f32} : (tensor<?x16xf16>, tensor<16xf16>) -> tensor<?x16xf16>
  return %h, %r : tensor<?x16xf16>, tensor<?x16xf16>
}

// QK-norm and RoPE become one pass over q and k; RoPE alone too.
// CHECK-LABEL: func.func @rope
// CHECK: volt.qk_norm_rope %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {eps = {{.*}} : f32, head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, theta = 1.000000e+06 : f32}
// CHECK-NOT: volt.qk_norm {
// CHECK: volt.qk_norm_rope %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {
func.func @rope(%qkv: tensor<?x128xf16>, %pos: tensor<?xi32>, %qn: tensor<16xf16>, %kn: tensor<16xf16>) -> (tensor<?x128xf16>, tensor<?x128xf16>) {
  %n = volt.qk_norm %qkv, %qn, %kn {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f32}
      : (tensor<?x128xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<?x128xf16>
  %r = volt.rope %n, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, theta = 1.0e+06 : f32}
      : (tensor<?x128xf16>, tensor<?xi32>) -> tensor<?x128xf16>
  %r2 = volt.rope %qkv, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, theta = 1.0e+06 : f32}
      : (tensor<?x128xf16>, tensor<?xi32>) -> tensor<?x128xf16>
  return %r, %r2 : tensor<?x128xf16>, tensor<?x128xf16>
}

// SiLU·mul moves into the epilogue of the quantized gate|up GEMM.
// CHECK-LABEL: func.func @silu
// CHECK: volt.qlinear {{.*}} {epilogue = "silu_mul", {{.*}} -> tensor<?x32xf16>
// CHECK-NOT: volt.silu_mul
func.func @silu(%x: tensor<?x64xf16>, %p: tensor<64x32xui8>, %s: tensor<64x4xf8E4M3FN>) -> tensor<?x32xf16> {
  %gu = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0, 1.0>, part_rows = array<i64: 32, 32>}
      : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
  %h = volt.silu_mul %gu : (tensor<?x64xf16>) -> tensor<?x32xf16>
  return %h : tensor<?x32xf16>
}

// A gate|up GEMM whose result is used elsewhere too keeps its own output.
// CHECK-LABEL: func.func @silu_shared
// CHECK: volt.silu_mul
func.func @silu_shared(%x: tensor<?x64xf16>, %p: tensor<64x32xui8>, %s: tensor<64x4xf8E4M3FN>) -> (tensor<?x32xf16>, tensor<?x64xf16>) {
  %gu = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0, 1.0>, part_rows = array<i64: 32, 32>}
      : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
  %h = volt.silu_mul %gu : (tensor<?x64xf16>) -> tensor<?x32xf16>
  return %h, %gu : tensor<?x32xf16>, tensor<?x64xf16>
}
