// RUN: volt-opt %s -split-input-file --volt-select-kernels | FileCheck %s

// On a V100 (125 TFLOP/s FP16, 790 GB/s, 96 KiB opt-in shared memory) a
// quantized GEMM runs a GEMV up to 8 tokens, a 32-token tile up to the
// ridge point (125e12 / 790e9 * 0.5625 / 2 = 44 tokens), then 128x128 tiles.
// CHECK-LABEL: func.func @v100
// CHECK: volt.qlinear {{.*}}volt.kernels = [{kernel = "nvfp4_gemv", max_tokens = 8 : i64, rows_per_warp = 4 : i64, warps_per_block = 1 : i64}, {kernel = "nvfp4_gemm", max_tokens = 44 : i64, stages = 2 : i64, tile_k = 64 : i64, tile_m = 32 : i64, tile_n = 128 : i64}, {kernel = "nvfp4_gemm", max_tokens = 1073741824 : i64, stages = 2 : i64, tile_k = 64 : i64, tile_m = 128 : i64, tile_n = 128 : i64}]
// CHECK: volt.silu_mul {{.*}}volt.kernels = [{kernel = "silu_mul", max_tokens = 1073741824 : i64, threads = 256 : i64}]
module attributes {volt.target = {arch = "sm_70", sm_count = 80 : i64, memory_bandwidth_gbps = 790.0 : f64,
                                  fp16_tensor_tflops = 125.0 : f64, shared_memory_per_block_optin_bytes = 98304 : i64}} {
  func.func @v100(%x: tensor<?x64xf16>, %p: tensor<64x32xui8>, %s: tensor<64x4xf8E4M3FN>) -> tensor<?x32xf16> {
    %gu = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0, 1.0>, part_rows = array<i64: 32, 32>}
        : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
    %h = volt.silu_mul %gu : (tensor<?x64xf16>) -> tensor<?x32xf16>
    return %h : tensor<?x32xf16>
  }
}

// -----

// A SKU with 48 KiB of shared memory per block gets 64x128 tiles: (64 + 128) x 64 x 2 bytes x 2 stages = 48 KiB.
// CHECK-LABEL: func.func @small_shared
// CHECK: {kernel = "nvfp4_gemm", max_tokens = 1073741824 : i64, stages = 2 : i64, tile_k = 64 : i64, tile_m = 64 : i64, tile_n = 128 : i64}
module attributes {volt.target = {arch = "sm_75", sm_count = 40 : i64, memory_bandwidth_gbps = 300.0 : f64,
                                  fp16_tensor_tflops = 65.0 : f64, shared_memory_per_block_optin_bytes = 49152 : i64}} {
  func.func @small_shared(%x: tensor<?x64xf16>, %p: tensor<64x32xui8>, %s: tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16> {
    %y = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0>, part_rows = array<i64: 64>}
        : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
    return %y : tensor<?x64xf16>
  }
}

// -----

// The cpu target runs every op on the reference backend: no kernels.
// CHECK-LABEL: func.func @cpu
// CHECK: volt.qlinear {{.*}}volt.kernels = []
module attributes {volt.target = {arch = "cpu"}} {
  func.func @cpu(%x: tensor<?x64xf16>, %p: tensor<64x32xui8>, %s: tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16> {
    %y = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.0>, part_rows = array<i64: 64>}
        : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
    return %y : tensor<?x64xf16>
  }
}
