//===- VoltOps.td - the ops of the volt dialect ------------*- tablegen -*-===//
//
// Each op states what it computes; the cpu backend's op of the same name is
// the executable definition (runtime/schema/plan.fbs, OpKind).
//
//===----------------------------------------------------------------------===//
#ifndef VOLT_OPS
#define VOLT_OPS

include "dialects/Volt/VoltDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Volt_FloatTensor : RankedTensorOf<[F16, BF16, F32]>;
def Volt_IdTensor : RankedTensorOf<[I32]>;
def Volt_PackedTensor : RankedTensorOf<[UI8]>;
def Volt_ScaleTensor : RankedTensorOf<[F8E4M3FN]>;

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

def Volt_WeightOp : Volt_Op<"weight", [Pure]> {
  let summary = "A dense weight read from the checkpoint.";
  let description = [{
    The concatenation along rows of the checkpoint tensors `names` (one per
    part: q, k, v of a fused projection; gate, up of an MLP), each
    `part_rows` rows; with `experts = E > 0`, the result stacks E such
    weights (names run expert-major: expert 0's parts, then expert 1's).
    `max_abs` records the largest magnitude in the data, when the weights
    were read, so that dtype legalisation can check that FP16 holds them.
    After sharding, `shards` holds one `#volt.shard` per part saying which
    slice of that part each rank holds, and the type is one rank's slice.
    `views`, when present, says which rows of its tensor each name is (five
    numbers per name: expert, offset, stride, groups, tensor_rows; see
    `RowView` in compiler/pack/WeightPacker.h): for checkpoints that keep
    several parts in one tensor (`in_proj_qkv`, `gate_up_proj`).
    With `add_one`, the weight is 1 + the checkpoint's values (a norm
    stored zero-centred, x̂ · (1 + w): Qwen3-Next, Qwen3.5), the sum taken in
    FP32 when the weights are packed.
    `scale_names`, when present, has one entry per name: for an FP8 E4M3
    tensor, the tensor of scales that multiply it (per tensor, per row or
    per 128 x 128 block), else "". The weight is then E4M3 × scale formed
    in FP32 and rounded once to the result's element type when packed:
    FP8 checkpoints run weight-only, stored in FP16 on GPUs without FP8
    arithmetic. With `fp8_rows` (every name FP8, scaled per tensor or per
    output row; of every expert for experts, whose gate|up and down weights
    are then both FP8 rows) the weight is instead kept as its E4M3 bytes
    and an FP32 scale per row, which the GEMMs apply to their FP32 sums:
    half the bytes of FP16, and no rounding of E4M3 × scale. The result
    type stays the FP16 the consumers compute in.

    ```mlir
    %w = volt.weight {names = ["model.layers.0.mlp.gate"], part_rows = array<i64: 8>}
        : tensor<8x64xbf16>
    %q = volt.weight {names = ["model.layers.0.self_attn.q_proj.weight"],
                      part_rows = array<i64: 64>,
                      scale_names = ["model.layers.0.self_attn.q_proj.weight_scale"]}
        : tensor<64x64xf16>
    ```
  }];
  let arguments = (ins StrArrayAttr:$names, DenseI64ArrayAttr:$part_rows,
                       DefaultValuedAttr<I64Attr, "0">:$experts,
                       OptionalAttr<F32Attr>:$max_abs,
                       OptionalAttr<ArrayAttr>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$views, UnitAttr:$add_one,
                       OptionalAttr<StrArrayAttr>:$scale_names, UnitAttr:$fp8_rows);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Volt_Nvfp4WeightOp : Volt_Op<"nvfp4_weight", [Pure]> {
  let summary = "An NVFP4 weight read from the checkpoint: packed data and block scales.";
  let description = [{
    Like `volt.weight`, for NVFP4 tensors: `packed` holds two E2M1 elements
    per byte along K (the even element in the low nibble), `scales` one E4M3
    scale per 16 elements along K, and `global_scales` the FP32 multiplier of
    each name (part, per expert), in volt's convention (compressed-tensors'
    divisors are inverted on import). With `from_dense`, the names are dense
    checkpoint tensors that the weight packer quantizes to NVFP4 with these
    global scales (`weights: {quantize: nvfp4}` in the spec). `views` as
    for `volt.weight`.

    ```mlir
    %p, %s = volt.nvfp4_weight {names = ["model.layers.0.self_attn.o_proj"],
        part_rows = array<i64: 64>, global_scales = array<f32: 1.5e-04>}
        : tensor<64x32xui8>, tensor<64x4xf8E4M3FN>
    ```
  }];
  let arguments = (ins StrArrayAttr:$names, DenseI64ArrayAttr:$part_rows,
                       DenseF32ArrayAttr:$global_scales,
                       DefaultValuedAttr<I64Attr, "0">:$experts,
                       OptionalAttr<ArrayAttr>:$shards, UnitAttr:$from_dense,
                       OptionalAttr<DenseI64ArrayAttr>:$views);
  let results = (outs Volt_PackedTensor:$packed, Volt_ScaleTensor:$scales);
  let assemblyFormat = "attr-dict `:` type($packed) `,` type($scales)";
  let hasVerifier = 1;
}

def Volt_DequantOp : Volt_Op<"dequant", [Pure]> {
  let summary = "Decodes an NVFP4 weight: e2m1 · e4m3 · global scale.";
  let description = [{
    `result[.., n, k] = e2m1(packed[.., n, k / 2]) * e4m3(scales[.., n, k / 16])
    * global_scales[part of row n]`. Linear layers fed by a dequant are
    rewritten into `volt.qlinear` (dequant-into-GEMM fusion), which never
    materialises the decoded weight.

    ```mlir
    %w = volt.dequant %p, %s {global_scales = array<f32: 1.5e-04>, part_rows = array<i64: 64>}
        : (tensor<64x32xui8>, tensor<64x4xf8E4M3FN>) -> tensor<64x64xf16>
    ```
  }];
  let arguments = (ins Volt_PackedTensor:$packed, Volt_ScaleTensor:$scales,
                       DenseF32ArrayAttr:$global_scales, DenseI64ArrayAttr:$part_rows);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$packed `,` $scales attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Token-wise ops
//===----------------------------------------------------------------------===//

def Volt_EmbeddingOp : Volt_Op<"embedding", [Pure]> {
  let summary = "Rows of the embedding table for each token.";
  let description = [{
    `result[t] = table[tokens[t]]`. With `vocab_parallel`, the table is this
    rank's slice of rows [rank * rows, (rank + 1) * rows); tokens outside it
    give zeros, and an all-reduce completes the result.

    ```mlir
    %x = volt.embedding %tokens, %table : (tensor<?xi32>, tensor<512x64xf16>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_IdTensor:$tokens, Volt_FloatTensor:$table, UnitAttr:$vocab_parallel);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$tokens `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_RmsNormOp : Volt_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm over the last dimension.";
  let description = [{
    `result = x * rsqrt(mean(x^2, last dim) + eps) * weight`, accumulating
    in FP32.

    ```mlir
    %y = volt.rms_norm %x, %w {eps = 1.0e-06 : f32}
        : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$weight, F32Attr:$eps);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_AddOp : Volt_Op<"add", [Pure]> {
  let summary = "Element-wise sum (the residual connection).";
  let description = [{
    ```mlir
    %r = volt.add %a, %b : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$lhs, Volt_FloatTensor:$rhs);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_AddRmsNormOp : Volt_Op<"add_rms_norm", [Pure]> {
  let summary = "Residual add fused with the RMSNorm that follows it.";
  let description = [{
    `residual_out = residual + x; result = rms_norm(residual_out)`. Made by
    the elementwise fusion pass from `volt.add` + `volt.rms_norm`; the
    residual stream may be kept in FP32 while activations are FP16.

    ```mlir
    %y, %r2 = volt.add_rms_norm %x, %r, %w {eps = 1.0e-06 : f32}
        : (tensor<?x64xf16>, tensor<?x64xf32>, tensor<64xf16>) -> (tensor<?x64xf16>, tensor<?x64xf32>)
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$residual,
                       Volt_FloatTensor:$weight, F32Attr:$eps);
  let results = (outs Volt_FloatTensor:$result, Volt_FloatTensor:$residual_out);
  let assemblyFormat = "$x `,` $residual `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_LinearOp : Volt_Op<"linear", [Pure]> {
  let summary = "x · Wᵀ (+ bias) with a dense weight.";
  let description = [{
    `result[t, n] = sum_k x[t, k] * weight[n, k] (+ bias[n])`, accumulating
    in FP32; the result type says whether the output is FP16 or FP32 (router
    and LM-head logits).

    ```mlir
    %y = volt.linear %x, %w : (tensor<?x64xf16>, tensor<8x64xf16>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$weight,
                       Optional<Volt_FloatTensor>:$bias);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Volt_QLinearOp : Volt_Op<"qlinear", [Pure]> {
  let summary = "x · Wᵀ (+ bias) with an NVFP4 weight, decoded inside the GEMM.";
  let description = [{
    The fused form of `volt.linear(x, volt.dequant(packed, scales))`: each
    product e2m1 · e4m3 is exact in FP16, products accumulate in FP32, and
    the global scale of each output part is applied in the epilogue (never
    folded into FP16 weights, where it would underflow). With `epilogue =
    "silu_mul"` the weight holds gate and up parts of equal rows and the
    result is silu(gate) * up, half as wide.

    ```mlir
    %y = volt.qlinear %x, %p, %s {global_scales = array<f32: 1.5e-04, 1.7e-04>,
        part_rows = array<i64: 64, 64>}
        : (tensor<?x64xf16>, tensor<128x32xui8>, tensor<128x4xf8E4M3FN>) -> tensor<?x128xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_PackedTensor:$packed,
                       Volt_ScaleTensor:$scales, Optional<Volt_FloatTensor>:$bias,
                       DenseF32ArrayAttr:$global_scales, DenseI64ArrayAttr:$part_rows,
                       OptionalAttr<StrAttr>:$epilogue);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $packed `,` $scales (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Volt_SiluMulOp : Volt_Op<"silu_mul", [Pure]> {
  let summary = "silu(gate) * up over the two halves of the last dimension.";
  let description = [{
    ```mlir
    %h = volt.silu_mul %gu : (tensor<?x256xf16>) -> tensor<?x128xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Volt_QkNormOp : Volt_Op<"qk_norm", [Pure]> {
  let summary = "Per-head RMSNorm of the q and k heads of a fused q|k|v row.";
  let description = [{
    `qkv` rows hold `num_heads` q heads, then `num_kv_heads` k heads, then
    as many v heads, each `head_dim` wide. Each q head is normalised with
    `q_weight`, each k head with `k_weight`; v is unchanged.

    ```mlir
    %n = volt.qk_norm %qkv, %qw, %kw {num_heads = 4 : i64, num_kv_heads = 2 : i64,
        head_dim = 16 : i64, eps = 1.0e-06 : f32}
        : (tensor<?x128xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<?x128xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$qkv, Volt_FloatTensor:$q_weight,
                       Volt_FloatTensor:$k_weight, I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F32Attr:$eps);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$qkv `,` $q_weight `,` $k_weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_RopeOp : Volt_Op<"rope", [Pure]> {
  let summary = "Rotate-half rotary position embedding of the q and k heads.";
  let description = [{
    For each q and k head of each token at position p, element pairs
    (i, i + R / 2) are rotated by p · theta^(-2i / R), R = `rotary_dim`
    (default head_dim; partial RoPE rotates the first R dims and passes the
    rest through).

    ```mlir
    %r = volt.rope %qkv, %positions {num_heads = 4 : i64, num_kv_heads = 2 : i64,
        head_dim = 16 : i64, theta = 1.0e+06 : f32}
        : (tensor<?x128xf16>, tensor<?xi32>) -> tensor<?x128xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$qkv, Volt_IdTensor:$positions, I64Attr:$num_heads,
                       I64Attr:$num_kv_heads, I64Attr:$head_dim, F32Attr:$theta,
                       OptionalAttr<I64Attr>:$rotary_dim);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$qkv `,` $positions attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_QkNormRopeOp : Volt_Op<"qk_norm_rope", [Pure, AttrSizedOperandSegments]> {
  let summary = "QK-norm (when weights are given) and RoPE in one pass.";
  let description = [{
    The fusion of `volt.qk_norm` and `volt.rope`; without norm weights, RoPE
    alone. `rotary_dim` as for `volt.rope`.

    ```mlir
    %r = volt.qk_norm_rope %qkv, %positions, %qw, %kw {num_heads = 4 : i64,
        num_kv_heads = 2 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f32,
        theta = 1.0e+06 : f32}
        : (tensor<?x128xf16>, tensor<?xi32>, tensor<16xf16>, tensor<16xf16>) -> tensor<?x128xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$qkv, Volt_IdTensor:$positions,
                       Optional<Volt_FloatTensor>:$q_weight, Optional<Volt_FloatTensor>:$k_weight,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads, I64Attr:$head_dim,
                       F32Attr:$eps, F32Attr:$theta, OptionalAttr<I64Attr>:$rotary_dim);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `,` $positions (`,` $q_weight^)? (`,` $k_weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Volt_AttentionOp : Volt_Op<"attention", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Causal attention over the paged KV cache (GQA).";
  let description = [{
    Writes each token's k and v (from `qkv`) into the KV cache of `layer` at
    its slot, then attends each token to its sequence's positions up to its
    own: softmax(q · kᵀ / sqrt(head_dim)) · v in FP32, with `num_heads /
    num_kv_heads` q heads per KV head. The op has side effects (the cache).

    ```mlir
    %o = volt.attention %qkv, %attn {layer = 0 : i64, num_heads = 4 : i64,
        num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : (tensor<?x128xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$qkv, Volt_AttentionMetadataType:$metadata,
                       I64Attr:$layer, I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$qkv `,` $metadata attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_EmaScanOp : Volt_Op<"ema_scan", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "A per-channel moving average over each sequence, with state.";
  let description = [{
    s = a * s + (1 - a) * x and result = s for each token of a sequence in
    order, channel by channel, in FP32, with `a` = `decay` ([H], in (0, 1)).
    The state s of layer `layer` is kept per sequence between steps (a state
    slot); a sequence whose step starts at position 0 starts from s = 0.
    The op has side effects (the state).

    ```mlir
    %y = volt.ema_scan %x, %decay, %attn {layer = 0 : i64}
        : (tensor<?x64xf16>, tensor<64xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$decay,
                       Volt_AttentionMetadataType:$metadata, I64Attr:$layer);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $decay `,` $metadata attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_CausalConv1dOp : Volt_Op<"causal_conv1d", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Gated DeltaNet's depthwise causal convolution over q|k|v, then SiLU.";
  let description = [{
    result[t, c] = silu(Σ_j weight[c, j] · x[t − K + 1 + j, c]) over each
    sequence's inputs, K = the weight's width; the last K − 1 inputs of a
    sequence are kept between steps (layer `layer`'s conv state, a slot per
    sequence; a sequence starting at position 0 starts from zeros).
    runtime/cpu/GatedDeltaNet.h is the arithmetic.

    ```mlir
    %c = volt.causal_conv1d %qkv, %w, %attn {layer = 0 : i64}
        : (tensor<?x96xf16>, tensor<96x4xf16>, !volt.attention_metadata) -> tensor<?x96xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$weight,
                       Volt_AttentionMetadataType:$metadata, I64Attr:$layer);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $weight `,` $metadata attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_GatedDeltaRuleOp : Volt_Op<"gated_delta_rule", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "The gated delta rule over each sequence, with state, and its gated norm.";
  let description = [{
    Per value head, token by token: q, k L2-normalised (q scaled by
    1/√key_dim), key heads repeated to value heads; β = sigmoid(b),
    g = −exp(a_log) · softplus(a + dt_bias) with [b | a] = `gates`;
    S ← e^g S; S ← S + k ⊗ β(v − Sᵀk); o = Sᵀq; result = norm · rms(o) ·
    silu(z) per head. S ([key_dim, value_dim] FP32 per value head) is layer
    `layer`'s recurrent state, a slot per sequence. `qkv` is the conv's
    output [q | k | v]. runtime/cpu/GatedDeltaNet.h is the arithmetic.

    ```mlir
    %o = volt.gated_delta_rule %c, %ba, %z, %alog, %dtb, %nw, %attn {layer = 0 : i64,
        key_heads = 4 : i64, value_heads = 8 : i64, key_dim = 16 : i64, value_dim = 8 : i64,
        eps = 1.0e-06 : f32}
        : (tensor<?x192xf16>, tensor<?x16xf16>, tensor<?x64xf16>, tensor<8xf32>, tensor<8xf32>,
           tensor<8xf16>, !volt.attention_metadata) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$qkv, Volt_FloatTensor:$gates, Volt_FloatTensor:$z,
                       Volt_FloatTensor:$a_log, Volt_FloatTensor:$dt_bias,
                       Volt_FloatTensor:$norm_weight, Volt_AttentionMetadataType:$metadata,
                       I64Attr:$layer, I64Attr:$key_heads, I64Attr:$value_heads,
                       I64Attr:$key_dim, I64Attr:$value_dim, F32Attr:$eps);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `,` $gates `,` $z `,` $a_log `,` $dt_bias `,` $norm_weight `,` $metadata attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Volt_SigmoidMulOp : Volt_Op<"sigmoid_mul", [Pure]> {
  let summary = "x · sigmoid(gate), elementwise: gated attention's output gate.";
  let description = [{
    ```mlir
    %y = volt.sigmoid_mul %o, %g : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$gate);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $gate attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_ConcatOp : Volt_Op<"concat", [Pure]> {
  let summary = "Rows of a and b side by side: [a | b] along the last dimension.";
  let description = [{
    The MTP head's input to `mtp.fc`: its normed embedding and normed
    hidden state, concatenated per token.

    ```mlir
    %x = volt.concat %e, %h : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x128xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$a, Volt_FloatTensor:$b);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Volt_MoeRouterOp : Volt_Op<"moe_router", [Pure]> {
  let summary = "Softmax, top-k and optional renormalisation of router logits.";
  let description = [{
    Softmax in FP32 over the experts, the `top_k` largest (ties to the lower
    expert index), renormalised to sum to 1 when `renormalize` (Mixtral's
    softmax over the top-k logits is the same thing).

    ```mlir
    %ids, %w = volt.moe_router %logits {top_k = 2 : i64, renormalize}
        : (tensor<?x8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$logits, I64Attr:$top_k, UnitAttr:$renormalize);
  let results = (outs Volt_IdTensor:$ids, RankedTensorOf<[F32]>:$weights);
  let assemblyFormat = "$logits attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_MoeExpertsOp : Volt_Op<"moe_experts", [Pure]> {
  let summary = "The routed experts' MLPs, weighted and summed per token.";
  let description = [{
    `result[t] = sum_j weights[t, j] * down_e(silu(gate_e(x[t])) * up_e(x[t]))`
    with `e = ids[t, j]`; `gate_up` stacks each expert's gate and up rows
    (`[E, 2 I, H]`), `down` each expert's down projection (`[E, H, I]`).

    ```mlir
    %y = volt.moe_experts %x, %ids, %w, %gu, %d
        : (tensor<?x64xf16>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<8x128x64xf16>,
           tensor<8x64x64xf16>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_IdTensor:$ids, RankedTensorOf<[F32]>:$weights,
                       Volt_FloatTensor:$gate_up, Volt_FloatTensor:$down);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $ids `,` $weights `,` $gate_up `,` $down attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_MoeQExpertsOp : Volt_Op<"moe_qexperts", [Pure]> {
  let summary = "The routed experts with NVFP4 weights decoded inside grouped GEMMs.";
  let description = [{
    The fused form of `volt.moe_experts` over `volt.dequant`s: one grouped
    GEMM per projection over all active experts. `gate_up_scales` holds
    each expert's gate and up global scales (2 E values), `down_scales` each
    expert's (E values).

    ```mlir
    %y = volt.moe_qexperts %x, %ids, %w, %gup, %gus, %dp, %ds
        {gate_up_scales = array<f32: ...>, down_scales = array<f32: ...>}
        : (...) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_IdTensor:$ids, RankedTensorOf<[F32]>:$weights,
                       Volt_PackedTensor:$gate_up_packed, Volt_ScaleTensor:$gate_up_block_scales,
                       Volt_PackedTensor:$down_packed, Volt_ScaleTensor:$down_block_scales,
                       DenseF32ArrayAttr:$gate_up_scales, DenseF32ArrayAttr:$down_scales);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $ids `,` $weights `,` $gate_up_packed `,` $gate_up_block_scales `,` $down_packed `,`
    $down_block_scales attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Volt_SigmoidGateAddOp : Volt_Op<"sigmoid_gate_add", [Pure]> {
  let summary = "Adds a sigmoid-gated value: the shared expert's contribution.";
  let description = [{
    `result = x + sigmoid(gate) * value`, gate `[T, 1]` (Qwen2-MoE's
    shared_expert_gate).

    ```mlir
    %y = volt.sigmoid_gate_add %moe, %shared, %g
        : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x1xf16>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_FloatTensor:$value, Volt_FloatTensor:$gate);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $value `,` $gate attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives and outputs
//===----------------------------------------------------------------------===//

def Volt_AllReduceOp : Volt_Op<"all_reduce", [Pure, SameOperandsAndResultType]> {
  let summary = "Sum over the tensor-parallel ranks.";
  let description = [{
    ```mlir
    %s = volt.all_reduce %x : tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Volt_AllGatherOp : Volt_Op<"all_gather", [Pure]> {
  let summary = "Concatenation of the ranks' slices along the last dimension.";
  let description = [{
    ```mlir
    %l = volt.all_gather %x {parts = 2 : i64} : (tensor<?x256xf32>) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, I64Attr:$parts);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Volt_GatherRowsOp : Volt_Op<"gather_rows", [Pure]> {
  let summary = "Selects rows: each sequence's last token before the LM head.";
  let description = [{
    `result[s] = x[rows[s]]`.

    ```mlir
    %last = volt.gather_rows %x, %rows : (tensor<?x64xf16>, tensor<?xi32>) -> tensor<?x64xf16>
    ```
  }];
  let arguments = (ins Volt_FloatTensor:$x, Volt_IdTensor:$rows);
  let results = (outs Volt_FloatTensor:$result);
  let assemblyFormat = "$x `,` $rows attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // VOLT_OPS
