//===- VoltDialect.td - the volt dialect -------------------*- tablegen -*-===//
//
// The model graph at tensor level: one step of a decoder-only MoE model over
// a symbolic token count (the leading `?` of every activation).
//
//===----------------------------------------------------------------------===//
#ifndef VOLT_DIALECT
#define VOLT_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"

def Volt_Dialect : Dialect {
  let name = "volt";
  let cppNamespace = "::volt::ir";
  let summary = "The model graph of one serving step, at tensor level.";
  let description = [{
    A `volt` module holds one function, `@step`, that computes the logits of
    one engine step: T new tokens (the leading dynamic dimension of every
    activation) from any mix of sequences, prefilling or decoding. Weights
    are values made by `volt.weight` / `volt.nvfp4_weight`, which name the
    checkpoint tensors they read; quantized weights reach a linear layer
    through an explicit `volt.dequant`, so that fusing the dequantization
    into the GEMM is a rewrite a test can show. After tensor-parallel
    sharding every shape is one rank's shape (the program is SPMD: every
    rank runs it over its own slice of the weights).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class Volt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Volt_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Volt_AttentionMetadataType : TypeDef<Volt_Dialect, "AttentionMetadata"> {
  let mnemonic = "attention_metadata";
  let summary = "The paged KV cache and this step's sequence layout.";
  let description = [{
    What attention needs beyond q, k and v: each token's KV-cache slot, the
    sequences' token ranges and context lengths, and their block tables.
    The engine fills it each step; an attention op reads it and writes the
    new tokens' keys and values into the cache of its layer.

    ```mlir
    func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                    %attn: !volt.attention_metadata, %rows: tensor<?xi32>)
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Volt_ShardAttr : AttrDef<Volt_Dialect, "Shard"> {
  let mnemonic = "shard";
  let summary = "Which slice of a weight each tensor-parallel rank holds.";
  let description = [{
    The weight is cut along dimension `dim` into `parts` equal slices (the
    last one padded with zeros when the size does not divide); rank r holds
    slice `r / replicas`, so `replicas` ranks share each slice (KV heads
    fewer than the ranks are replicated this way). `parts = 1` means
    replicated on every rank.

    ```mlir
    #volt.shard<dim = 0, parts = 2, replicas = 1>
    ```
  }];
  let parameters = (ins "int64_t":$dim, "int64_t":$parts, "int64_t":$replicas);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // VOLT_DIALECT
