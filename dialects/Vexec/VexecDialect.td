//===- VexecDialect.td - the vexec dialect -----------------*- tablegen -*-===//
//
// The executable form of a step: buffers, weights and kernel launches, in
// the order a rank runs them. One vexec op maps to one entry of the plan
// (runtime/schema/plan.fbs).
//
//===----------------------------------------------------------------------===//
#ifndef VEXEC_DIALECT
#define VEXEC_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"

def Vexec_Dialect : Dialect {
  let name = "vexec";
  let cppNamespace = "::volt::vexec";
  let summary = "Launches over planned buffers: what one rank executes per step.";
  let description = [{
    A vexec `@step` function has no arguments and no results: its values are
    buffers — step inputs and outputs the engine owns, weights in the rank's
    pack, KV-cache layers, and arena buffers the memory planner places —
    and its `vexec.launch` ops run in order. Each launch names its OpKind
    (the computation, as the cpu backend defines it), its parameters, and
    the kernel variants that serve it by token count.
  }];
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class Vexec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Vexec_Dialect, mnemonic, traits>;

def Vexec_BufferType : TypeDef<Vexec_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "A region of device memory.";
  let description = [{
    ```mlir
    %b = vexec.alloc {name = "h", dtype = f16, per_token_bytes = 128 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    ```
  }];
}

#endif // VEXEC_DIALECT
