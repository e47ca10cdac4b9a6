// RUN: volt-opt %s -split-input-file --volt-lower-to-vexec -verify-diagnostics | FileCheck %s

// Every value becomes a buffer sized per token, every op a launch of its
// OpKind; QK-norm + RoPE and the residual update reuse their input's buffer;
// the returned logits are the step output.
// CHECK-LABEL: func.func @step()
// CHECK-DAG: %[[TOK:.*]] = vexec.input {name = "tokens"}
// CHECK-DAG: %[[POS:.*]] = vexec.input {name = "positions"}
// CHECK-DAG: %[[SLOT:.*]] = vexec.input {name = "slot_mapping"}
// CHECK: %[[TABLE:.*]] = vexec.weight {dtype = f16, layout = "dense", name = "embed", names = ["embed"], part_rows = array<i64: 64>, shape = array<i64: 64, 64>}
// CHECK: %[[X:.*]] = vexec.alloc {dtype = f16, fixed_bytes = 0 : i64, name = "embed", per_token_bytes = 128 : i64}
// CHECK: vexec.launch "Embedding"(%[[TOK]], %[[TABLE]], %[[X]]) {{.*}}params = {dim = 64 : i64, vocab_parallel = false, vocab_rows = 64 : i64}
// CHECK: vexec.weight {{.*}}layout = "nvfp4", name = "q|k|v"
// CHECK: %[[QKV:.*]] = vexec.alloc {dtype = f16, fixed_bytes = 0 : i64, name = "qkv", per_token_bytes = 256 : i64}
// CHECK: vexec.launch "QLinear"
// CHECK: vexec.launch "QkNormRope"(%[[QKV]], %[[POS]])
// CHECK: %[[KV:.*]] = vexec.kv_cache {layer = 0 : i64}
// CHECK: vexec.launch "Attention"(%[[QKV]], %[[KV]], %[[SLOT]],
// CHECK: vexec.launch "AddRmsNorm"(%{{.*}}, %[[X]],
// CHECK: %[[OUT:.*]] = vexec.output {name = "logits"}
// CHECK: vexec.launch "Linear"(%{{.*}}, %{{.*}}, %[[OUT]]) {{.*}}out_dtype = "f32"
module {
  func.func @step(%tokens: tensor<?xi32> {volt.input = "tokens"}, %positions: tensor<?xi32> {volt.input = "positions"},
                  %attn: !volt.attention_metadata {volt.input = "attention"}, %rows: tensor<?xi32> {volt.input = "logits_rows"}) -> tensor<?x64xf32> {
    %table = volt.weight {names = ["embed"], part_rows = array<i64: 64>} : tensor<64x64xf16> loc("embed")
    %x = volt.embedding %tokens, %table : (tensor<?xi32>, tensor<64x64xf16>) -> tensor<?x64xf16> loc("embed")
    %n = volt.weight {names = ["norm"], part_rows = array<i64: 64>} : tensor<64xf16>
    %h = volt.rms_norm %x, %n {eps = 1.0e-06 : f32} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    %qp, %qs = volt.nvfp4_weight {names = ["q", "k", "v"], part_rows = array<i64: 64, 32, 32>, global_scales = array<f32: 1.0, 1.0, 1.0>}
        : tensor<128x32xui8>, tensor<128x4xf8E4M3FN>
    %qkv = volt.qlinear %h, %qp, %qs {global_scales = array<f32: 1.0, 1.0, 1.0>, part_rows = array<i64: 64, 32, 32>}
        : (tensor<?x64xf16>, tensor<128x32xui8>, tensor<128x4xf8E4M3FN>) -> tensor<?x128xf16> loc("qkv")
    %r = volt.qk_norm_rope %qkv, %positions {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f32, theta = 1.0e+04 : f32}
        : (tensor<?x128xf16>, tensor<?xi32>) -> tensor<?x128xf16>
    %o = volt.attention %r, %attn {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : (tensor<?x128xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
    %y, %res = volt.add_rms_norm %o, %x, %n {eps = 1.0e-06 : f32}
        : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<64xf16>) -> (tensor<?x64xf16>, tensor<?x64xf16>)
    %last = volt.gather_rows %y, %rows : (tensor<?x64xf16>, tensor<?xi32>) -> tensor<?x64xf16>
    %logits = volt.linear %last, %table : (tensor<?x64xf16>, tensor<64x64xf16>) -> tensor<?x64xf32>
    return %logits : tensor<?x64xf32>
  }
}

// -----

// Unfused ops have no lowering: the error says which pass to run.
module {
  func.func @step(%tokens: tensor<?xi32> {volt.input = "tokens"}) -> tensor<?x16xf16> {
    %t = volt.weight {names = ["embed"], part_rows = array<i64: 8>} : tensor<8x16xf16>
    %x = volt.embedding %tokens, %t : (tensor<?xi32>, tensor<8x16xf16>) -> tensor<?x16xf16>
    // expected-error @+1 {{must be fused before lowering (--volt-fuse-elementwise)}}
    %y = volt.add %x, %x : (tensor<?x16xf16>, tensor<?x16xf16>) -> tensor<?x16xf16>
    return %y : tensor<?x16xf16>
  }
}
