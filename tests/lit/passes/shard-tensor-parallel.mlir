// RUN: volt-opt %s --volt-shard-tensor-parallel="tensor-parallel-size=2" | FileCheck %s --check-prefix=TP2
// RUN: volt-opt %s --volt-shard-tensor-parallel="tensor-parallel-size=4" | FileCheck %s --check-prefix=TP4
// RUN: not volt-opt %s --volt-shard-tensor-parallel="tensor-parallel-size=8" 2>&1 | FileCheck %s --check-prefix=TP8

// One decoder layer (4 query heads, 2 KV heads, head_dim 16, hidden 64,
// MLP width 128, vocabulary 64), after dequant fusion.

// TP2: volt.tensor_parallel_size = 2
// The embedding is split by vocabulary rows and completed by an all-reduce.
// TP2: %[[TABLE:.*]] = volt.weight {{.*}}shards = [#volt.shard<dim = 0, parts = 2, replicas = 1>]{{.*}} : tensor<32x64xf16>
// TP2: %[[X:.*]] = volt.embedding %{{.*}}, %[[TABLE]] {vocab_parallel}
// TP2: %[[XS:.*]] = volt.all_reduce %[[X]]
// q, k and v: heads split, each part sliced on its own.
// TP2: volt.nvfp4_weight {{.*}}part_rows = array<i64: 32, 16, 16>, shards = [#volt.shard<dim = 0, parts = 2, replicas = 1>, #volt.shard<dim = 0, parts = 2, replicas = 1>, #volt.shard<dim = 0, parts = 2, replicas = 1>]} : tensor<64x32xui8>, tensor<64x4xf8E4M3FN>
// TP2: volt.qlinear {{.*}}part_rows = array<i64: 32, 16, 16>{{.*}} -> tensor<?x64xf16>
// TP2: volt.attention {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64{{.*}} -> tensor<?x32xf16>
// o_proj is row-parallel: its input columns are split, and an all-reduce
// completes the branch before the residual add.
// TP2: volt.nvfp4_weight {{.*}}shards = [#volt.shard<dim = 1, parts = 2, replicas = 1>]} : tensor<64x16xui8>, tensor<64x2xf8E4M3FN>
// TP2: %[[O:.*]] = volt.qlinear
// TP2: %[[OS:.*]] = volt.all_reduce %[[O]]
// TP2: volt.add %[[XS]], %[[OS]]
// gate|up column-parallel, down row-parallel.
// TP2: volt.qlinear {{.*}}part_rows = array<i64: 64, 64>{{.*}} -> tensor<?x128xf16>
// TP2: volt.silu_mul {{.*}} -> tensor<?x64xf16>
// TP2: %[[D:.*]] = volt.qlinear {{.*}} -> tensor<?x64xf16>
// TP2: volt.all_reduce %[[D]]
// The LM head is split by vocabulary rows and gathered.
// TP2: volt.linear {{.*}} -> tensor<?x32xf32>
// TP2: volt.all_gather %{{.*}} {parts = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x64xf32>

// With 4 ranks and 2 KV heads, each KV head is replicated on 2 ranks.
// TP4: volt.nvfp4_weight {{.*}}part_rows = array<i64: 16, 16, 16>, shards = [#volt.shard<dim = 0, parts = 4, replicas = 1>, #volt.shard<dim = 0, parts = 2, replicas = 2>, #volt.shard<dim = 0, parts = 2, replicas = 2>]}
// TP4: volt.attention {{.*}}num_heads = 1 : i64, num_kv_heads = 1 : i64

// TP8: tensor_parallel_size 8 does not divide num_attention_heads 4; each rank must hold whole heads

module attributes {volt.model = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, vocab_size = 64 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %attn: !volt.attention_metadata, %rows: tensor<?xi32>) -> tensor<?x64xf32> {
    %table = volt.weight {names = ["embed"], part_rows = array<i64: 64>} : tensor<64x64xf16>
    %x = volt.embedding %tokens, %table : (tensor<?xi32>, tensor<64x64xf16>) -> tensor<?x64xf16>
    %n = volt.weight {names = ["norm"], part_rows = array<i64: 64>} : tensor<64xf16>
    %h = volt.rms_norm %x, %n {eps = 1.0e-06 : f32} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    %qp, %qs = volt.nvfp4_weight {names = ["q", "k", "v"], part_rows = array<i64: 64, 32, 32>, global_scales = array<f32: 1.0, 1.0, 1.0>}
        : tensor<128x32xui8>, tensor<128x4xf8E4M3FN>
    %qkv = volt.qlinear %h, %qp, %qs {global_scales = array<f32: 1.0, 1.0, 1.0>, part_rows = array<i64: 64, 32, 32>}
        : (tensor<?x64xf16>, tensor<128x32xui8>, tensor<128x4xf8E4M3FN>) -> tensor<?x128xf16>
    %r = volt.rope %qkv, %positions {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, theta = 1.0e+04 : f32}
        : (tensor<?x128xf16>, tensor<?xi32>) -> tensor<?x128xf16>
    %o = volt.attention %r, %attn {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : (tensor<?x128xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
    %op, %os = volt.nvfp4_weight {names = ["o"], part_rows = array<i64: 64>, global_scales = array<f32: 1.0>}
        : tensor<64x32xui8>, tensor<64x4xf8E4M3FN>
    %a = volt.qlinear %o, %op, %os {global_scales = array<f32: 1.0>, part_rows = array<i64: 64>}
        : (tensor<?x64xf16>, tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<?x64xf16>
    %r1 = volt.add %x, %a : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
    %h2 = volt.rms_norm %r1, %n {eps = 1.0e-06 : f32} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    %gp, %gs = volt.nvfp4_weight {names = ["gate", "up"], part_rows = array<i64: 128, 128>, global_scales = array<f32: 1.0, 1.0>}
        : tensor<256x32xui8>, tensor<256x4xf8E4M3FN>
    %gu = volt.qlinear %h2, %gp, %gs {global_scales = array<f32: 1.0, 1.0>, part_rows = array<i64: 128, 128>}
        : (tensor<?x64xf16>, tensor<256x32xui8>, tensor<256x4xf8E4M3FN>) -> tensor<?x256xf16>
    %act = volt.silu_mul %gu : (tensor<?x256xf16>) -> tensor<?x128xf16>
    %dp, %ds = volt.nvfp4_weight {names = ["down"], part_rows = array<i64: 64>, global_scales = array<f32: 1.0>}
        : tensor<64x64xui8>, tensor<64x8xf8E4M3FN>
    %d = volt.qlinear %act, %dp, %ds {global_scales = array<f32: 1.0>, part_rows = array<i64: 64>}
        : (tensor<?x128xf16>, tensor<64x64xui8>, tensor<64x8xf8E4M3FN>) -> tensor<?x64xf16>
    %r2 = volt.add %r1, %d : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
    %f = volt.rms_norm %r2, %n {eps = 1.0e-06 : f32} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    %last = volt.gather_rows %f, %rows : (tensor<?x64xf16>, tensor<?xi32>) -> tensor<?x64xf16>
    %head = volt.weight {names = ["lm_head"], part_rows = array<i64: 64>} : tensor<64x64xf16>
    %logits = volt.linear %last, %head : (tensor<?x64xf16>, tensor<64x64xf16>) -> tensor<?x64xf32>
    return %logits : tensor<?x64xf32>
  }
}
