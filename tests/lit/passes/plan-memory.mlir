// RUN: volt-opt %s -split-input-file --vexec-plan-memory -verify-diagnostics | FileCheck %s

// Buffers live at the same time never share bytes; a buffer that dies
// before another is born lends it its bytes. At 100 tokens: a = 25600 B,
// b = 51200 B, c = 25600 B (aligned to 256). a and b overlap in time,
// c starts after a died and reuses its offset. Arena 76800 = lower bound.
// KV: 2 layers x K,V x 16 tokens x 2 heads x 8 dims x 2 bytes = 2048 B/block;
// 2 MiB budget holds 986 blocks, capped at 8 sequences x 16 blocks = 128.
// CHECK-LABEL: module attributes
// CHECK-SAME: vexec.memory = {arena_bytes = 76800 : i64, arena_lower_bound = 76800 : i64
// CHECK-SAME: kv_block_bytes = 2048 : i64{{.*}}kv_blocks = 128 : i64{{.*}}workspace_bytes = 0 : i64
// CHECK-DAG: vexec.alloc {{{.*}}name = "a", offset = 51200 : i64, per_token_bytes = 256 : i64}
// CHECK-DAG: vexec.alloc {{{.*}}name = "b", offset = 0 : i64, per_token_bytes = 512 : i64}
// CHECK-DAG: vexec.alloc {{{.*}}name = "c", offset = 51200 : i64, per_token_bytes = 256 : i64}
module attributes {
    volt.deployment = {max_num_batched_tokens = 100 : i64, max_model_len = 256 : i64, kv_block_size = 16 : i64,
                       max_num_seqs = 8 : i64, tensor_parallel_size = 1 : i64, gpu_memory_utilization = 0.5 : f64},
    volt.target = {name = "test", memory_bytes = 4194304 : i64, cuda_context_bytes = 0 : i64, nccl_bytes = 0 : i64}} {
  func.func @step() {
    %tok = vexec.input {name = "tokens"} : !vexec.buffer
    %a = vexec.alloc {name = "a", dtype = f16, per_token_bytes = 256 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %b = vexec.alloc {name = "b", dtype = f16, per_token_bytes = 512 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %c = vexec.alloc {name = "c", dtype = f16, per_token_bytes = 256 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %kv0 = vexec.kv_cache {layer = 0 : i64} : !vexec.buffer
    %kv1 = vexec.kv_cache {layer = 1 : i64} : !vexec.buffer
    vexec.launch "SiluMul"(%tok, %a) {params = {dim = 64 : i64}, kernels = [], name = "0"} : !vexec.buffer, !vexec.buffer
    vexec.launch "SiluMul"(%a, %b) {params = {dim = 128 : i64}, kernels = [], name = "1"} : !vexec.buffer, !vexec.buffer
    vexec.launch "Attention"(%b, %kv0, %tok, %tok, %tok, %tok, %c)
        {params = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, layer = 0 : i64}, kernels = [], name = "2"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    vexec.launch "Attention"(%c, %kv1, %tok, %tok, %tok, %tok, %c)
        {params = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, layer = 1 : i64}, kernels = [], name = "3"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    return
  }
}

// -----

// A deployment that cannot hold one full-length sequence fails with the
// arithmetic (the module keeps vexec.shortfall for voltc, which re-plans
// with other spec values to say what would make it fit).
// expected-error-re @+1 {{the deployment does not fit: 1 x tiny cannot hold the KV cache of one 65536-token sequence{{.*}}KV cache, one full-length sequence{{.*}}available (gpu_memory_utilization 0.50){{.*}}}}
module attributes {
    volt.deployment = {max_num_batched_tokens = 16 : i64, max_model_len = 65536 : i64, kv_block_size = 16 : i64,
                       max_num_seqs = 8 : i64, tensor_parallel_size = 1 : i64, gpu_memory_utilization = 0.5 : f64},
    volt.target = {name = "tiny", memory_bytes = 4194304 : i64, cuda_context_bytes = 0 : i64, nccl_bytes = 0 : i64}} {
  func.func @step() {
    %tok = vexec.input {name = "tokens"} : !vexec.buffer
    %a = vexec.alloc {name = "a", dtype = f16, per_token_bytes = 256 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %kv0 = vexec.kv_cache {layer = 0 : i64} : !vexec.buffer
    vexec.launch "Attention"(%tok, %kv0, %tok, %tok, %tok, %tok, %a)
        {params = {num_heads = 32 : i64, num_kv_heads = 32 : i64, head_dim = 32 : i64, layer = 0 : i64}, kernels = [], name = "0"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    return
  }
}

// -----

// Split-K attention's records go to the kernel workspace: contexts up to
// 256 positions in chunks of at least 32 give 8 chunks; fewer than 2 x 8
// records of 4 query heads x (8 + 2) FP32 = 2560 B (without a split
// variant, as in the first module, none).
// CHECK-LABEL: module attributes
// CHECK-SAME: vexec.memory = {{{.*}}workspace_bytes = 2560 : i64
module attributes {
    volt.deployment = {max_num_batched_tokens = 100 : i64, max_model_len = 256 : i64, kv_block_size = 16 : i64,
                       max_num_seqs = 8 : i64, tensor_parallel_size = 1 : i64, gpu_memory_utilization = 0.5 : f64},
    volt.target = {name = "test", memory_bytes = 4194304 : i64, cuda_context_bytes = 0 : i64, nccl_bytes = 0 : i64}} {
  func.func @step() {
    %tok = vexec.input {name = "tokens"} : !vexec.buffer
    %c = vexec.alloc {name = "c", dtype = f16, per_token_bytes = 256 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %kv0 = vexec.kv_cache {layer = 0 : i64} : !vexec.buffer
    vexec.launch "Attention"(%tok, %kv0, %tok, %tok, %tok, %tok, %c)
        {params = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, layer = 0 : i64},
         kernels = [{max_tokens = 1073741824 : i64, kernel = "paged_attention", split_k_tokens = 32 : i64}], name = "0"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    return
  }
}

// -----

// Cache groups: the paged KV group serves the layers of the step's
// vexec.kv_cache ops (1 and 3, not one per layer), and each state group
// holds max_num_seqs slots per layer, budgeted before the KV cache. KV: 2
// layers x K,V x 16 tokens x 2 heads x 8 dims x 2 bytes = 2048 B/block;
// state: 8 slots x 256 B x 2 layers = 4096 B. The groups lie in Cache-operand
// order: KV first, then the state.
// CHECK-LABEL: module attributes
// CHECK-SAME: cache_bytes = 266240 : i64, caches = [{block_size = 16 : i64, bytes = 262144 : i64, dtype = f16, head_dim = 8 : i64, kind = "paged_kv", layers = array<i64: 1, 3>, name = "kv", num_blocks = 128 : i64, num_kv_heads = 2 : i64, offset = 0 : i64}, {bytes = 4096 : i64, dtype = f32, kind = "state_slots", layers = array<i64: 0, 2>, name = "ema", num_slots = 8 : i64, offset = 262144 : i64, slot_bytes = 256 : i64}]
// CHECK-SAME: kv_block_bytes = 2048 : i64
// CHECK-SAME: state_bytes = 4096 : i64
module attributes {
    volt.deployment = {max_num_batched_tokens = 100 : i64, max_model_len = 256 : i64, kv_block_size = 16 : i64,
                       max_num_seqs = 8 : i64, tensor_parallel_size = 1 : i64, gpu_memory_utilization = 0.5 : f64},
    volt.target = {name = "test", memory_bytes = 4194304 : i64, cuda_context_bytes = 0 : i64, nccl_bytes = 0 : i64}} {
  func.func @step() {
    %tok = vexec.input {name = "tokens"} : !vexec.buffer
    %c = vexec.alloc {name = "c", dtype = f16, per_token_bytes = 256 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %s0 = vexec.state {group = "ema", layer = 0 : i64, dtype = f32, slot_bytes = 256 : i64} : !vexec.buffer
    %kv1 = vexec.kv_cache {layer = 1 : i64} : !vexec.buffer
    %s2 = vexec.state {group = "ema", layer = 2 : i64, dtype = f32, slot_bytes = 256 : i64} : !vexec.buffer
    %kv3 = vexec.kv_cache {layer = 3 : i64} : !vexec.buffer
    vexec.launch "EmaScan"(%tok, %tok, %s0, %tok, %tok, %tok, %tok, %c)
        {params = {dim = 64 : i64, layer = 0 : i64}, kernels = [], name = "0"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    vexec.launch "Attention"(%c, %kv1, %tok, %tok, %tok, %tok, %c)
        {params = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, layer = 1 : i64}, kernels = [], name = "1"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    vexec.launch "EmaScan"(%c, %tok, %s2, %tok, %tok, %tok, %tok, %c)
        {params = {dim = 64 : i64, layer = 2 : i64}, kernels = [], name = "2"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    vexec.launch "Attention"(%c, %kv3, %tok, %tok, %tok, %tok, %c)
        {params = {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, layer = 3 : i64}, kernels = [], name = "3"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    return
  }
}

// -----

// The slots of one state group are alike.
module attributes {
    volt.deployment = {max_num_batched_tokens = 100 : i64, max_model_len = 256 : i64, kv_block_size = 16 : i64,
                       max_num_seqs = 8 : i64, tensor_parallel_size = 1 : i64, gpu_memory_utilization = 0.5 : f64},
    volt.target = {name = "test", memory_bytes = 4194304 : i64, cuda_context_bytes = 0 : i64, nccl_bytes = 0 : i64}} {
  // expected-error @+1 {{state group 'ema': layer 2 has slots of 128 bytes, another layer of 256 (a group's slots are all alike)}}
  func.func @step() {
    %tok = vexec.input {name = "tokens"} : !vexec.buffer
    %c = vexec.alloc {name = "c", dtype = f16, per_token_bytes = 256 : i64, fixed_bytes = 0 : i64} : !vexec.buffer
    %s0 = vexec.state {group = "ema", layer = 0 : i64, dtype = f32, slot_bytes = 256 : i64} : !vexec.buffer
    %s2 = vexec.state {group = "ema", layer = 2 : i64, dtype = f32, slot_bytes = 128 : i64} : !vexec.buffer
    vexec.launch "EmaScan"(%tok, %tok, %s0, %tok, %tok, %tok, %tok, %c)
        {params = {dim = 64 : i64, layer = 0 : i64}, kernels = [], name = "0"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    vexec.launch "EmaScan"(%c, %tok, %s2, %tok, %tok, %tok, %tok, %c)
        {params = {dim = 64 : i64, layer = 2 : i64}, kernels = [], name = "2"}
        : !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer, !vexec.buffer
    return
  }
}
