// RUN: volt-opt %s --volt-shard-tensor-parallel="tensor-parallel-size=2" | FileCheck %s --check-prefix=TP2
// RUN: not volt-opt %s --volt-shard-tensor-parallel="tensor-parallel-size=4" 2>&1 | FileCheck %s --check-prefix=TP4

// A gate|up projection stored as one tensor of 4 interleaved runs per part
// (rows alternating [gate run | up run]): sharding keeps the views and
// splits each part by whole runs, so 4 ranks cannot take runs of 2.

// TP2: volt.weight {names = ["gu.weight", "gu.weight"], part_rows = array<i64: 64, 64>, shards = [#volt.shard<dim = 0, parts = 2, replicas = 1>, #volt.shard<dim = 0, parts = 2, replicas = 1>], views = array<i64: -1, 0, 64, 2, 256, -1, 64, 64, 2, 256>} : tensor<128x64xf16>
// TP2: volt.linear {{.*}} -> tensor<?x128xf16>
// TP2: volt.silu_mul {{.*}} -> tensor<?x64xf16>
// TP4: cannot split part 0 of its gate|up weight, read in 2 runs of its tensor, over 4 ranks

module attributes {volt.model = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, vocab_size = 64 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %attn: !volt.attention_metadata, %rows: tensor<?xi32>) -> tensor<?x64xf32> {
    %table = volt.weight {names = ["embed"], part_rows = array<i64: 64>} : tensor<64x64xf16>
    %x = volt.embedding %tokens, %table : (tensor<?xi32>, tensor<64x64xf16>) -> tensor<?x64xf16>
    %n = volt.weight {names = ["norm"], part_rows = array<i64: 64>} : tensor<64xf16>
    %h = volt.rms_norm %x, %n {eps = 1.0e-06 : f32} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    %w = volt.weight {names = ["gu.weight", "gu.weight"], part_rows = array<i64: 128, 128>, views = array<i64: -1, 0, 64, 2, 256, -1, 64, 64, 2, 256>} : tensor<256x64xf16>
    %gu = volt.linear %h, %w : (tensor<?x64xf16>, tensor<256x64xf16>) -> tensor<?x256xf16>
    %act = volt.silu_mul %gu : (tensor<?x256xf16>) -> tensor<?x128xf16>
    %dw = volt.weight {names = ["down"], part_rows = array<i64: 64>} : tensor<64x128xf16>
    %d = volt.linear %act, %dw : (tensor<?x128xf16>, tensor<64x128xf16>) -> tensor<?x64xf16>
    %r = volt.add %x, %d : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
    %last = volt.gather_rows %r, %rows : (tensor<?x64xf16>, tensor<?xi32>) -> tensor<?x64xf16>
    %head = volt.weight {names = ["lm_head"], part_rows = array<i64: 64>} : tensor<64x64xf16>
    %logits = volt.linear %last, %head : (tensor<?x64xf16>, tensor<64x64xf16>) -> tensor<?x64xf32>
    return %logits : tensor<?x64xf32>
  }
}
