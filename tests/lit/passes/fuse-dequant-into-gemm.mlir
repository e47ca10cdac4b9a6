// RUN: volt-opt %s --volt-fuse-dequant-into-gemm | FileCheck %s

// A linear fed by a dequant becomes one quantized GEMM; the decoded weight
// disappears and each part keeps its global scale.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: volt.dequant
// CHECK: %[[P:.*]], %[[S:.*]] = volt.nvfp4_weight
// CHECK: volt.qlinear %{{.*}}, %[[P]], %[[S]] {global_scales = array<f32: 5.000000e-01, 2.500000e-01>, part_rows = array<i64: 16, 16>}
// CHECK-NOT: volt.linear
func.func @linear(%x: tensor<?x64xf16>) -> tensor<?x32xf16> {
  %p, %s = volt.nvfp4_weight {names = ["gate", "up"], part_rows = array<i64: 16, 16>, global_scales = array<f32: 0.5, 0.25>}
      : tensor<32x32xui8>, tensor<32x4xf8E4M3FN>
  %w = volt.dequant %p, %s {global_scales = array<f32: 0.5, 0.25>, part_rows = array<i64: 16, 16>}
      : (tensor<32x32xui8>, tensor<32x4xf8E4M3FN>) -> tensor<32x64xf16>
  %y = volt.linear %x, %w : (tensor<?x64xf16>, tensor<32x64xf16>) -> tensor<?x32xf16>
  return %y : tensor<?x32xf16>
}

// Dense linears are left alone.
// CHECK-LABEL: func.func @dense
// CHECK: volt.linear
func.func @dense(%x: tensor<?x64xf16>, %w: tensor<8x64xf16>) -> tensor<?x8xf32> {
  %y = volt.linear %x, %w : (tensor<?x64xf16>, tensor<8x64xf16>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// Experts over dequantized weights become grouped quantized GEMMs.
// CHECK-LABEL: func.func @experts
// CHECK: volt.moe_qexperts {{.*}} {down_scales = array<f32: 3.000000e+00, 4.000000e+00>, gate_up_scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>}
// CHECK-NOT: volt.moe_experts
func.func @experts(%x: tensor<?x64xf16>, %ids: tensor<?x1xi32>, %w: tensor<?x1xf32>) -> tensor<?x64xf16> {
  %gp, %gs = volt.nvfp4_weight {names = ["e0.gate", "e0.up", "e1.gate", "e1.up"], part_rows = array<i64: 32, 32>, experts = 2 : i64,
      global_scales = array<f32: 1.0, 1.0, 2.0, 2.0>} : tensor<2x64x32xui8>, tensor<2x64x4xf8E4M3FN>
  %gu = volt.dequant %gp, %gs {global_scales = array<f32: 1.0, 1.0, 2.0, 2.0>, part_rows = array<i64: 32, 32>}
      : (tensor<2x64x32xui8>, tensor<2x64x4xf8E4M3FN>) -> tensor<2x64x64xf16>
  %dp, %ds = volt.nvfp4_weight {names = ["e0.down", "e1.down"], part_rows = array<i64: 64>, experts = 2 : i64,
      global_scales = array<f32: 3.0, 4.0>} : tensor<2x64x16xui8>, tensor<2x64x2xf8E4M3FN>
  %d = volt.dequant %dp, %ds {global_scales = array<f32: 3.0, 4.0>, part_rows = array<i64: 64>}
      : (tensor<2x64x16xui8>, tensor<2x64x2xf8E4M3FN>) -> tensor<2x64x32xf16>
  %y = volt.moe_experts %x, %ids, %w, %gu, %d
      : (tensor<?x64xf16>, tensor<?x1xi32>, tensor<?x1xf32>, tensor<2x64x64xf16>, tensor<2x64x32xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
