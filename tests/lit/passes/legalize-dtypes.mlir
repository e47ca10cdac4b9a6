// RUN: volt-opt %s -split-input-file --volt-legalize-dtypes -verify-diagnostics | FileCheck %s
// RUN: volt-opt %s -split-input-file --volt-legalize-dtypes="residual-dtype=f32" -verify-diagnostics | FileCheck %s --check-prefix=F32RES
// RUN: not volt-opt %s -split-input-file --volt-legalize-dtypes="residual-dtype=f8" 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: residual-dtype must be f16 or f32, found 'f8'
// The option that keeps such weights in FP32: legalize-dtypes-fp32-weights.mlir.

// BF16 weights and activations become FP16; FP32 logits stay FP32.
// CHECK-LABEL: func.func @step
// CHECK-SAME: -> tensor<?x8xf32>
// CHECK: volt.weight {{.*}} : tensor<8x16xf16>
// CHECK: volt.embedding {{.*}} -> tensor<?x16xf16>
// CHECK: volt.rms_norm {{.*}} -> tensor<?x16xf16>
// CHECK: volt.linear {{.*}} -> tensor<?x8xf32>
// F32RES-LABEL: func.func @step
// F32RES: volt.embedding {{.*}} -> tensor<?x16xf32>
// F32RES: volt.rms_norm {{.*}} : (tensor<?x16xf32>, tensor<16xf16>) -> tensor<?x16xf16>
func.func @step(%tokens: tensor<?xi32>) -> tensor<?x8xf32> {
  %table = volt.weight {names = ["embed"], part_rows = array<i64: 8>, max_abs = 3.0 : f32} : tensor<8x16xbf16>
  %x = volt.embedding %tokens, %table : (tensor<?xi32>, tensor<8x16xbf16>) -> tensor<?x16xbf16>
  %w = volt.weight {names = ["norm"], part_rows = array<i64: 16>} : tensor<16xbf16>
  %h = volt.rms_norm %x, %w {eps = 1.0e-06 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  %l = volt.linear %h, %table : (tensor<?x16xbf16>, tensor<8x16xbf16>) -> tensor<?x8xf32>
  return %l : tensor<?x8xf32>
}

// -----

// A weight FP16 cannot hold is an error naming it.
func.func @too_large(%x: tensor<?x16xf16>) -> tensor<?x8xf32> {
  // expected-error @+1 {{weight 'big' holds values up to 100000, beyond FP16's largest 65504}}
  %w = volt.weight {names = ["big"], part_rows = array<i64: 8>, max_abs = 1.0e+05 : f32} : tensor<8x16xbf16>
  %l = volt.linear %x, %w : (tensor<?x16xf16>, tensor<8x16xbf16>) -> tensor<?x8xf32>
  return %l : tensor<?x8xf32>
}
