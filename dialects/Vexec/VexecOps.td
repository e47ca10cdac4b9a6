//===- VexecOps.td - the ops of the vexec dialect ----------*- tablegen -*-===//
#ifndef VEXEC_OPS
#define VEXEC_OPS

include "dialects/Vexec/VexecDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Vexec_InputOp : Vexec_Op<"input", [Pure]> {
  let summary = "A step input the engine fills before each step.";
  let description = [{
    `name` is one of the plan's StepInput values: tokens, positions,
    slot_mapping, seq_starts, context_lens, block_tables, logits_rows,
    state_slots, state_snapshots.

    ```mlir
    %tokens = vexec.input {name = "tokens"} : !vexec.buffer
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Vexec_BufferType:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Vexec_OutputOp : Vexec_Op<"output", [Pure]> {
  let summary = "A step output the engine reads after each step.";
  let description = [{
    ```mlir
    %logits = vexec.output {name = "logits"} : !vexec.buffer
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Vexec_BufferType:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Vexec_KvCacheOp : Vexec_Op<"kv_cache", [Pure]> {
  let summary = "The K and V blocks of one attention layer.";
  let description = [{
    One layer of the plan's paged KV cache group (CacheKind.PagedKv): the
    memory planner gathers the layers of every `vexec.kv_cache` into that
    group, which the engine's block tables address.

    ```mlir
    %kv = vexec.kv_cache {layer = 3 : i64} : !vexec.buffer
    ```
  }];
  let arguments = (ins I64Attr:$layer);
  let results = (outs Vexec_BufferType:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Vexec_StateOp : Vexec_Op<"state", [Pure]> {
  let summary = "The recurrent state of one layer: a slot per sequence.";
  let description = [{
    One layer of a state cache group (CacheKind.StateSlots) named `group`:
    `max_num_seqs` slots of `slot_bytes` in `dtype`, one per running
    sequence (StepInput.StateSlots). Every state of a group has the same
    slot size and dtype; a layer may hold states of several groups (a
    convolution state and a recurrent state).

    ```mlir
    %s = vexec.state {group = "ema", layer = 0 : i64, dtype = f32, slot_bytes = 256 : i64}
        : !vexec.buffer
    ```
  }];
  let arguments = (ins StrAttr:$group, I64Attr:$layer, TypeAttr:$dtype, I64Attr:$slot_bytes);
  let results = (outs Vexec_BufferType:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Vexec_WeightOp : Vexec_Op<"weight", [Pure]> {
  let summary = "One entry of the rank's weight pack.";
  let description = [{
    The weight packer writes this entry: the checkpoint tensors `names`
    (parts along rows, `experts` stacked), this rank's slice of each part
    (`shards`), converted to `dtype` in `layout` (dense, nvfp4 for
    Nvfp4RowMajor, fp8 for Fp8RowScaled: E4M3 bytes and a scale per row),
    with its NVFP4 `global_scales`. `shape` is this rank's logical shape.
    With `from_dense`, NVFP4 entries are quantized from dense tensors.
    `views`: which rows of its tensor each name is, as on `volt.weight`;
    `add_one`: the entry holds 1 + the checkpoint's values;
    `scale_names`: the scales of FP8 names, as on `volt.weight`.

    ```mlir
    %w = vexec.weight {name = "model.layers.0.self_attn.qkv", names = ["q", "k", "v"],
        part_rows = array<i64: 32, 16, 16>, layout = "nvfp4", dtype = ui8,
        shape = array<i64: 64, 64>, experts = 0 : i64, global_scales = array<f32: 1.0, 1.0, 1.0>}
        : !vexec.buffer
    ```
  }];
  let arguments = (ins StrAttr:$name, StrArrayAttr:$names, DenseI64ArrayAttr:$part_rows,
                       StrAttr:$layout, TypeAttr:$dtype, DenseI64ArrayAttr:$shape,
                       DefaultValuedAttr<I64Attr, "0">:$experts,
                       OptionalAttr<DenseF32ArrayAttr>:$global_scales,
                       OptionalAttr<ArrayAttr>:$shards, UnitAttr:$from_dense,
                       OptionalAttr<DenseI64ArrayAttr>:$views, UnitAttr:$add_one,
                       OptionalAttr<StrArrayAttr>:$scale_names);
  let results = (outs Vexec_BufferType:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Vexec_AllocOp : Vexec_Op<"alloc", [Pure]> {
  let summary = "An activation buffer in the arena.";
  let description = [{
    Its size at T tokens is `per_token_bytes * T + fixed_bytes`; the memory
    planner sizes it at the largest step and sets `offset`.

    ```mlir
    %h = vexec.alloc {name = "h", dtype = f16, per_token_bytes = 128 : i64, fixed_bytes = 0 : i64,
        offset = 4096 : i64} : !vexec.buffer
    ```
  }];
  let arguments = (ins StrAttr:$name, TypeAttr:$dtype, I64Attr:$per_token_bytes,
                       I64Attr:$fixed_bytes, OptionalAttr<I64Attr>:$offset);
  let results = (outs Vexec_BufferType:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Vexec_LaunchOp : Vexec_Op<"launch", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Runs one op of the step program.";
  let description = [{
    `kind` is the plan's OpKind (the computation), `operands` follow the
    order the kind lists, `params` holds the kind's params by their plan
    names, and `kernels` the GPU variants chosen for the SKU (each a
    dictionary with `max_tokens`, `kernel` and its configuration; empty on
    the cpu target). `name` says where the op comes from.

    The kinds, their operands and their params are defined once, in
    `runtime/schema/Ops.def` (reference: `docs/reference/plan-ops.md`). The
    verifier refuses an unknown kind, a wrong operand count, and a param
    that is missing (where the kind has no default for it), unknown or of
    the wrong type, naming the op.

    ```mlir
    vexec.launch "QLinear" (%h, %w, %qkv) {name = "model.layers.0.self_attn.qkv",
        params = {dim = 64 : i64, out_features = 128 : i64}, kernels = []}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer
    ```
  }];
  let arguments = (ins StrAttr:$kind, Variadic<Vexec_BufferType>:$operands_,
                       DictionaryAttr:$params, ArrayAttr:$kernels, StrAttr:$name);
  let assemblyFormat = "$kind `(` $operands_ `)` attr-dict `:` type($operands_)";
  let hasVerifier = 1;
}

#endif // VEXEC_OPS
