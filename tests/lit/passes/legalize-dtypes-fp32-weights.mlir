// RUN: volt-opt %s --volt-legalize-dtypes="allow-fp32-weights" | FileCheck %s
// With allow-fp32-weights, a weight beyond FP16's range stays FP32 while
// the others become FP16.

// CHECK-LABEL: func.func @too_large
// CHECK: volt.weight {{.*}}names = ["big"]{{.*}} : tensor<8x16xf32>
// CHECK: volt.weight {{.*}}names = ["small"]{{.*}} : tensor<8x16xf16>
func.func @too_large(%x: tensor<?x16xf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = volt.weight {names = ["big"], part_rows = array<i64: 8>, max_abs = 1.0e+05 : f32} : tensor<8x16xbf16>
  %v = volt.weight {names = ["small"], part_rows = array<i64: 8>, max_abs = 1.0 : f32} : tensor<8x16xbf16>
  %l = volt.linear %x, %w : (tensor<?x16xf16>, tensor<8x16xbf16>) -> tensor<?x8xf32>
  %m = volt.linear %x, %v : (tensor<?x16xf16>, tensor<8x16xbf16>) -> tensor<?x8xf32>
  return %l, %m : tensor<?x8xf32>, tensor<?x8xf32>
}
