// RUN: volt-opt %s -split-input-file -verify-diagnostics
// The launch verifier holds each launch to its kind's definition
// (runtime/schema/Ops.def) and names the op; the buffer ops refuse what
// the plan cannot hold.

func.func @unknown_kind(%b: !vexec.buffer) {
  // expected-error-re @+1 {{unknown kind 'Convolution' (valid: Embedding, RmsNorm, {{.*}}, EmaScan, CausalConv1d, GatedDeltaRule, SigmoidMul, GatherHidden, Concat)}}
  vexec.launch "Convolution"(%b) {params = {}, kernels = [], name = "x"} : !vexec.buffer
  return
}

// -----

func.func @operand_count(%b: !vexec.buffer) {
  // expected-error @+1 {{'Linear' ('proj') takes 3 or 4 operands (in, weight, bias?, out), found 2}}
  vexec.launch "Linear"(%b, %b) {params = {dim = 8 : i64, out_features = 8 : i64}, kernels = [],
      name = "proj"} : !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @missing_param(%b: !vexec.buffer) {
  // expected-error @+1 {{'RmsNorm' ('norm') lacks its param 'eps' (a float)}}
  vexec.launch "RmsNorm"(%b, %b, %b) {params = {dim = 8 : i64}, kernels = [], name = "norm"}
      : !vexec.buffer, !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @misspelled_param(%b: !vexec.buffer) {
  // expected-error @+1 {{'SiluMul' ('act') has no param 'dimm' (its params: dim)}}
  vexec.launch "SiluMul"(%b, %b) {params = {dimm = 8 : i64}, kernels = [], name = "act"}
      : !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @mistyped_param(%b: !vexec.buffer) {
  // expected-error @+1 {{'MoeRouter' ('router') param 'renormalize': expected a bool, found 1 : i64}}
  vexec.launch "MoeRouter"(%b, %b, %b) {params = {num_experts = 8 : i64, top_k = 2 : i64,
      renormalize = 1 : i64}, kernels = [], name = "router"}
      : !vexec.buffer, !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @negative_param(%b: !vexec.buffer) {
  // expected-error @+1 {{'SiluMul' ('act') param 'dim': expected an unsigned 32-bit integer, found -8 : i64}}
  vexec.launch "SiluMul"(%b, %b) {params = {dim = -8 : i64}, kernels = [], name = "act"}
      : !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @unknown_enum(%b: !vexec.buffer) {
  // expected-error @+1 {{'QLinear' ('proj') param 'epilogue': expected an epilogue name (none, silu_mul), found "gelu"}}
  vexec.launch "QLinear"(%b, %b, %b) {params = {dim = 16 : i64, out_features = 8 : i64,
      epilogue = "gelu"}, kernels = [], name = "proj"} : !vexec.buffer, !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @unknown_dtype(%b: !vexec.buffer) {
  // expected-error @+1 {{'Linear' ('head') param 'out_dtype': expected a dtype name (f32, f16, bf16, i32, u8, f8e4m3), found "f64"}}
  vexec.launch "Linear"(%b, %b, %b) {params = {dim = 16 : i64, out_features = 8 : i64,
      out_dtype = "f64"}, kernels = [], name = "head"} : !vexec.buffer, !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @kernels_not_dictionaries(%b: !vexec.buffer) {
  // expected-error @+1 {{kernels must be dictionaries}}
  vexec.launch "SiluMul"(%b, %b) {params = {dim = 8 : i64}, kernels = ["nvfp4_gemv"], name = "act"}
      : !vexec.buffer, !vexec.buffer
  return
}

// -----

func.func @unknown_input() {
  // expected-error @+1 {{unknown name 'token_ids' (valid: tokens, positions, slot_mapping, seq_starts, context_lens, block_tables, logits_rows, state_slots, state_snapshots, hidden_rows)}}
  %t = vexec.input {name = "token_ids"} : !vexec.buffer
  return
}

// -----

func.func @unknown_output() {
  // expected-error @+1 {{unknown name 'hiddens' (valid: logits, hidden)}}
  %t = vexec.output {name = "hiddens"} : !vexec.buffer
  return
}

// -----

func.func @weight_layout() {
  // expected-error @+1 {{unknown layout 'nvfp8' (valid: dense, nvfp4, fp8)}}
  %w = vexec.weight {name = "w", names = ["w"], part_rows = array<i64: 8>, layout = "nvfp8",
      dtype = ui8, shape = array<i64: 8, 16>} : !vexec.buffer
  return
}

// -----

func.func @fp8_weight_without_scales() {
  // expected-error @+1 {{an fp8 weight needs scale_names}}
  %w = vexec.weight {name = "w", names = ["w"], part_rows = array<i64: 8>, layout = "fp8",
      dtype = f8E4M3FN, shape = array<i64: 8, 16>} : !vexec.buffer
  return
}

// -----

func.func @nvfp4_without_scales() {
  // expected-error @+1 {{an nvfp4 weight needs global_scales}}
  %w = vexec.weight {name = "w", names = ["w"], part_rows = array<i64: 8>, layout = "nvfp4",
      dtype = ui8, shape = array<i64: 8, 16>} : !vexec.buffer
  return
}

// -----

func.func @alloc_without_size() {
  // expected-error @+1 {{buffer 'h' has no size}}
  %h = vexec.alloc {name = "h", dtype = f16, per_token_bytes = 0 : i64, fixed_bytes = 0 : i64}
      : !vexec.buffer
  return
}

// -----

func.func @state_in_the_kv_group() {
  // expected-error @+1 {{needs a group name other than 'kv' (the paged KV group's)}}
  %s = vexec.state {group = "kv", layer = 0 : i64, dtype = f32, slot_bytes = 64 : i64} : !vexec.buffer
  return
}

// -----

func.func @state_without_bytes() {
  // expected-error @+1 {{slot_bytes 0 is outside (0, 2^36]}}
  %s = vexec.state {group = "ema", layer = 0 : i64, dtype = f32, slot_bytes = 0 : i64} : !vexec.buffer
  return
}

// -----

func.func @state_of_integers() {
  // expected-error @+1 {{dtype must be f32, f16 or bf16, found 'i32'}}
  %s = vexec.state {group = "ema", layer = 0 : i64, dtype = i32, slot_bytes = 64 : i64} : !vexec.buffer
  return
}

// -----

func.func @negative_layer() {
  // expected-error @+1 {{layer -1 is outside [0, 2^32)}}
  %kv = vexec.kv_cache {layer = -1 : i64} : !vexec.buffer
  return
}
