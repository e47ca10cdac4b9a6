//===- Bench.cpp - time of every GEMM-family and attention kernel on the GPU ===//
//
// For the linears and attention of Qwen3-30B-A3B and a dense 32B model (GpuCases.h):
// decode (1 and 8 tokens) and prefill (512 tokens) times, measured with
// CUDA events over repeated launches, as
//   - effective bandwidth: bytes the kernel must move (weights it reads —
//     for a MoE step only the experts that received tokens — plus
//     activations in and out) / time, and its fraction of the device's copy
//     bandwidth measured in the same run (cuMemcpyDtoD of 1 GiB, counted as
//     bytes read + written);
//   - for prefill, TFLOP/s (2 T N K / time) and the fraction of
//     --peak-tflops when given.
// and for attention: decode at long context (1, 8 and 16 sequences of
// 4,000 positions) as GB/s of K and V read against the copy bandwidth, and
// prefill (one chunk of 512 and of 2,048 tokens from position 0, causal) as
// TFLOP/s (4 d sum of contexts per query head) and the fraction of
// --peak-tflops; and for the Gated DeltaNet recurrence at Qwen3.6-35B-A3B's
// shapes: decode (1, 8, 64 sequences) as GB/s of state, and a 4,096- and
// a 16,384-token prompt through the token-by-token kernel and the chunked
// one, with the ratio of their times.
// Prints a Markdown table for docs/perf/kernels.md. Not a test: it asserts
// nothing.
//
//   gpu_bench [--peak-tflops 125] [--repeats 50]
//
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuCases.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <numeric>
#include <random>
#include <set>

using namespace volt;
using namespace volt::gpu;

namespace {

uint64_t weightBytes(const OperandInfo &w, uint64_t expertsUsed) {
  uint64_t elements = 1;
  for (int64_t d : w.shape)
    elements *= static_cast<uint64_t>(d);
  uint64_t bytes = w.nvfp4 ? elements / 2 + elements / 16
                  : w.fp8 ? elements + 4 * (elements / static_cast<uint64_t>(w.shape.back()))
                          : elements * 2;
  if (w.shape.size() == 3)
    bytes = bytes / static_cast<uint64_t>(w.shape[0]) * expertsUsed;
  return bytes;
}

/// Device buffers bound to a launch's operands, released with it.
class DeviceOperands {
public:
  explicit DeviceOperands(Gpu &g) : g_(g) {}
  ~DeviceOperands() {
    for (const DeviceBuffer &b : buffers_)
      (void)g_.release(b);
  }
  DeviceOperands(const DeviceOperands &) = delete;
  DeviceOperands &operator=(const DeviceOperands &) = delete;
  /// `bytes` for operand `o`: `data` uploaded, or filled with 0x11 bytes.
  bool put(const OperandInfo &o, size_t bytes, const void *data) {
    auto b = g_.allocate(bytes);
    if (!b)
      return false;
    buffers_.push_back(*b);
    if (data ? !g_.upload(*b, data, bytes).ok() : !g_.fill(*b, 0x11).ok())
      return false;
    bindings_.bind(o, *b);
    return true;
  }
  Bindings &bindings() { return bindings_; }

private:
  Gpu &g_;
  Bindings bindings_;
  std::vector<DeviceBuffer> buffers_;
};

struct AttentionRun {
  const char *what;
  /// New tokens per sequence and each sequence's context after the step.
  int fresh, context, seqs;
};

/// Times the attention launch that serves each run; prints table rows.
void benchAttention(Gpu &g, const GpuCase &c, const std::vector<PlannedLaunch> &launches,
                    const KernelRegistry &registry, double copyGbps, double peakTflops,
                    int repeats) {
  const codegen::OpInfo &op = c.op.op;
  const codegen::ProgramInfo &program = c.program;
  const plan::AttentionParamsT &ap = *op.params.AsAttentionParams();
  const int64_t hq = ap.num_heads, hkv = ap.num_kv_heads, d = ap.head_dim;
  const int64_t blockSize = program.kvBlockSize, maxBlocks = program.maxBlocksPerSeq;
  for (const AttentionRun &r :
       {AttentionRun{"decode", 1, 4000, 1}, AttentionRun{"decode", 1, 4000, 8},
        AttentionRun{"decode", 1, 4000, 16}, AttentionRun{"prefill", 512, 512, 1},
        AttentionRun{"prefill", 2048, 2048, 1}}) {
    const int tokens = r.fresh * r.seqs, seqs = r.seqs;
    const int64_t blocksPerSeq = (r.context + blockSize - 1) / blockSize;
    if (blocksPerSeq > maxBlocks || blocksPerSeq * seqs > program.kvBlocks)
      continue;
    const PlannedLaunch *launch = launchFor(launches, tokens);
    if (!launch)
      continue;
    std::vector<int32_t> seqStarts = {0}, contexts,
                         tables(static_cast<size_t>(seqs * maxBlocks), 0),
                         slots(static_cast<size_t>(tokens));
    for (int s = 0; s < seqs; ++s) {
      seqStarts.push_back(seqStarts.back() + r.fresh);
      contexts.push_back(r.context);
      for (int64_t b = 0; b < blocksPerSeq; ++b)
        tables[static_cast<size_t>(s * maxBlocks + b)] = static_cast<int32_t>(s * blocksPerSeq + b);
      for (int t = 0; t < r.fresh; ++t) {
        const int pos = r.context - r.fresh + t;
        slots[static_cast<size_t>(s * r.fresh + t)] = static_cast<int32_t>(
            tables[static_cast<size_t>(s * maxBlocks + pos / blockSize)] * blockSize +
            pos % blockSize);
      }
    }
    auto operands = std::make_unique<DeviceOperands>(g);
    auto device = [&](const OperandInfo &o, size_t bytes, const void *data) {
      return operands->put(o, bytes, data);
    };
    bool ok =
        device(op.operands[0], static_cast<size_t>(tokens * (hq + 2 * hkv) * d * 2), nullptr) &&
        device(op.operands[1], 2 * program.kvLayerBytes(), nullptr) &&
        device(op.operands[2], slots.size() * 4, slots.data()) &&
        device(op.operands[3], seqStarts.size() * 4, seqStarts.data()) &&
        device(op.operands[4], contexts.size() * 4, contexts.data()) &&
        device(op.operands[5], tables.size() * 4, tables.data()) &&
        device(op.operands[6], static_cast<size_t>(tokens * hq * d * 2), nullptr);
    if (ok && program.workspaceBytes > 0) {
      OperandInfo workspace;
      workspace.kind = codegen::OperandKind::Workspace;
      ok = device(workspace, program.workspaceBytes, nullptr);
    }
    if (!ok) {
      std::printf("| %s | cannot allocate |\n", op.name.c_str());
      continue;
    }
    auto prepared = g.prepare(*launch, operands->bindings().map(), tokens, seqs);
    auto ms = prepared ? g.time([&] { return g.launch(*prepared); }, repeats)
                       : Result<float>(prepared.error());
    operands.reset();
    if (!ms) {
      std::printf("| %s | error: %s |\n", op.name.c_str(), ms.message().c_str());
      continue;
    }
    const double seconds = *ms * 1e-3;
    // K and V of every position each sequence attends to, read once per kv head.
    const double kvBytes = 2.0 * seqs * r.context * hkv * d * 2;
    // Causal: query at position p takes 2 d (p + 1) for S and as much for P V.
    double positions = 0;
    for (int t = 0; t < r.fresh; ++t)
      positions += r.context - r.fresh + t + 1;
    const double flops = 4.0 * d * hq * positions * seqs;
    const double gbps = kvBytes / seconds / 1e9, tflops = flops / seconds / 1e12;
    std::printf("| %s %s (S = %d, context %d) | %s | %d | %.1f | %.0f | %.0f%% | %.2f |",
                op.name.c_str(), r.what, seqs, r.context,
                registry.requests()[launch->kernel].kernel.c_str(), tokens, *ms * 1e3, gbps,
                copyGbps > 0 ? 100 * gbps / copyGbps : 0, tflops);
    if (peakTflops > 0)
      std::printf(" %.0f%% |", 100 * tflops / peakTflops);
    std::printf("\n");
  }
}

/// Times one Gated DeltaNet launch over S sequences of `perSeq` tokens
/// each, continuing from their slots (every state slot read and written
/// once); the time in ms.
Result<float> timeGatedDeltaRule(Gpu &g, const codegen::OpInfo &op, const PlannedLaunch &launch,
                                 int seqs, int perSeq, int repeats) {
  const plan::GatedDeltaRuleParamsT &p = *op.params.AsGatedDeltaRuleParams();
  const int64_t hk = p.key_heads, hv = p.value_heads, dk = p.key_dim, dv = p.value_dim;
  const int64_t tokens = int64_t{seqs} * perSeq;
  std::vector<int32_t> starts(static_cast<size_t>(seqs + 1)), contexts(static_cast<size_t>(seqs)),
      slots(static_cast<size_t>(seqs));
  for (int s = 0; s < seqs; ++s) {
    starts[static_cast<size_t>(s + 1)] = (s + 1) * perSeq;
    contexts[static_cast<size_t>(s)] = perSeq + 100; // continuing: the state is read
    slots[static_cast<size_t>(s)] = s;
  }
  const std::vector<int32_t> noCopies(static_cast<size_t>(tokens), -1);
  DeviceOperands operands(g);
  auto device = [&](const OperandInfo &o, size_t bytes, const void *data) {
    return operands.put(o, bytes, data);
  };
  const bool ok =
      device(op.operands[0], static_cast<size_t>(tokens * (2 * hk * dk + hv * dv) * 2), nullptr) &&
      device(op.operands[1], static_cast<size_t>(tokens * 2 * hv * 2), nullptr) &&
      device(op.operands[2], static_cast<size_t>(tokens * hv * dv * 2), nullptr) &&
      device(op.operands[3], static_cast<size_t>(hv * 4), nullptr) &&
      device(op.operands[4], static_cast<size_t>(hv * 4), nullptr) &&
      device(op.operands[5], static_cast<size_t>(dv * 2), nullptr) &&
      device(op.operands[6], static_cast<size_t>(seqs * hv * dk * dv * 4), nullptr) &&
      device(op.operands[7], starts.size() * 4, starts.data()) &&
      device(op.operands[8], contexts.size() * 4, contexts.data()) &&
      device(op.operands[9], slots.size() * 4, slots.data()) &&
      device(op.operands[10], noCopies.size() * 4, noCopies.data()) &&
      device(op.operands[11], static_cast<size_t>(tokens * hv * dv * 2), nullptr);
  auto prepared = ok ? g.prepare(launch, operands.bindings().map(), static_cast<int>(tokens), seqs)
                     : Result<PreparedLaunch>(Error("cannot allocate"));
  return prepared ? g.time([&] { return g.launch(*prepared); }, repeats)
                  : Result<float>(prepared.error());
}

/// Gated DeltaNet decode: S sequences of one token each; GB/s counts the
/// state bytes (the inputs and the output are 1/100 of them). Prefill: one
/// sequence of T tokens (a long prompt's linear-attention layer), in
/// tokens/s; each kernel's prefill times are kept so that the chunked
/// form's speed-up over the token-by-token kernel is printed after both.
void benchGatedDeltaRule(Gpu &g, const GpuCase &c, const std::vector<PlannedLaunch> &launches,
                         KernelRegistry &registry, double copyGbps, int repeats) {
  const codegen::OpInfo &op = c.op.op;
  const plan::GatedDeltaRuleParamsT &p = *op.params.AsGatedDeltaRuleParams();
  const int64_t hv = p.value_heads, dk = p.key_dim, dv = p.value_dim;
  for (int seqs : {1, 8, 64}) {
    const PlannedLaunch *launch = launchFor(launches, seqs);
    if (!launch)
      continue;
    auto ms = timeGatedDeltaRule(g, op, *launch, seqs, 1, repeats);
    if (!ms) {
      std::printf("| %s | error: %s |\n", op.name.c_str(), ms.message().c_str());
      continue;
    }
    const double stateBytes = static_cast<double>(seqs * hv * dk * dv * 4);
    const double gbps = 2.0 * stateBytes / (*ms * 1e-3) / 1e9;
    std::printf("| %s decode (S = %d) | %s | %d | %.1f | %.0f | %.0f%% | - |\n", op.name.c_str(),
                seqs, registry.requests()[launch->kernel].kernel.c_str(), seqs, *ms * 1e3, gbps,
                copyGbps > 0 ? 100 * gbps / copyGbps : 0);
  }
  static std::map<int, std::map<std::string, double>> prefillMs;
  for (int tokens : {4096, 16384}) {
    const PlannedLaunch *launch = launchFor(launches, tokens);
    if (!launch)
      continue;
    const std::string kernel = registry.requests()[launch->kernel].kernel;
    // A 16K-token prompt takes tens of ms token by token: few repeats.
    auto ms = timeGatedDeltaRule(g, op, *launch, 1, tokens, std::max(2, repeats / 10));
    if (!ms) {
      std::printf("| %s | error: %s |\n", op.name.c_str(), ms.message().c_str());
      continue;
    }
    prefillMs[tokens][op.name] = *ms;
    std::printf("| %s prefill (S = 1, %d tokens: %.0f tokens/s) | %s | %d | %.1f | - | - | - |\n",
                op.name.c_str(), tokens, tokens / (*ms * 1e-3), kernel.c_str(), tokens, *ms * 1e3);
    const auto &times = prefillMs[tokens];
    auto ratio = [&](const char *what, const std::string &slow, const std::string &fast) {
      if (op.name == fast && times.count(slow) && times.count(fast))
        std::printf("| %s prefill, %d tokens: %s | %.2fx faster | %d | | | | |\n",
                    op.name.c_str(), tokens, what, times.at(slow) / times.at(fast), tokens);
    };
    ratio("chunked / token by token", "linear_attn_gated_delta_rule",
          "linear_attn_gated_delta_rule_chunked");
    ratio("value dims over 4 blocks / 1 block", "linear_attn_gated_delta_rule_chunked",
          "linear_attn_gated_delta_rule_chunked_dv_split");
  }
}

} // namespace

int main(int argc, char **argv) {
  double peakTflops = 0;
  int repeats = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--peak-tflops") == 0)
      peakTflops = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeats") == 0)
      repeats = std::max(1, std::atoi(argv[i + 1]));
  }
  auto gpu = Gpu::open();
  if (!gpu) {
    std::printf("gpu_bench: no GPU: %s\n", gpu.message().c_str());
    return 0;
  }
  Gpu &g = **gpu;
  KernelRegistry registry;
  std::vector<GpuCase> cases = gpuCases();
  auto planned = planCases(cases, registry);
  if (!planned) {
    std::fprintf(stderr, "gpu_bench: %s\n", planned.message().c_str());
    return 1;
  }
  auto kernels = buildKernels(registry);
  if (!kernels) {
    std::fprintf(stderr, "gpu_bench: %s\n", kernels.message().c_str());
    return 1;
  }
  if (Status s = g.load(*kernels); !s) {
    std::fprintf(stderr, "gpu_bench: %s\n", s.message().c_str());
    return 1;
  }

  // Copy bandwidth of this device, in this run.
  const size_t copyBytes = size_t{1} << 30;
  auto src = g.allocate(copyBytes), dst = g.allocate(copyBytes);
  if (!src || !dst) {
    std::fprintf(stderr, "gpu_bench: cannot allocate the copy buffers\n");
    return 1;
  }
  auto copyMs = g.time(
      [&] {
        return g.driver().check(
            g.driver().cuMemcpyDtoDAsync(dst->ptr, src->ptr, copyBytes, g.stream()), "copy");
      },
      10);
  const double copyGbps = copyMs ? 2.0 * copyBytes / (*copyMs * 1e-3) / 1e9 : 0;
  std::printf("# %s (sm_%d), kernels %s; copy bandwidth %.0f GB/s (read + write)\n\n",
              g.name().c_str(), g.computeCapability(),
              g.computeCapability() == 70 ? "from sm_70 cubins" : "JIT-compiled from sm_70 PTX",
              copyGbps);
  std::printf("| op | kernel | T | time (us) | GB/s | of copy | TFLOP/s |%s\n",
              peakTflops > 0 ? " of peak |" : "");
  std::printf("|---|---|---|---|---|---|---|%s\n", peakTflops > 0 ? "---|" : "");

  std::mt19937 rng(7);
  for (size_t c = 0; c < cases.size(); ++c) {
    const codegen::OpInfo &op = cases[c].op.op;
    // The grouped experts: NVFP4, and the FP16 and FP8-row ones of
    // unquantized and FP8-dynamic checkpoints.
    const bool moe = op.kind == plan::OpKind::MoeGroupedQLinear ||
                     op.kind == plan::OpKind::MoeGroupedLinear;
    if (op.kind == plan::OpKind::Attention) {
      benchAttention(g, cases[c], (*planned)[c], registry, copyGbps, peakTflops, repeats);
      continue;
    }
    if (op.kind == plan::OpKind::GatedDeltaRule) {
      benchGatedDeltaRule(g, cases[c], (*planned)[c], registry, copyGbps, repeats);
      continue;
    }
    if (op.kind != plan::OpKind::QLinear && op.kind != plan::OpKind::Linear && !moe)
      continue;
    for (int tokens : {1, 8, 512}) {
      if (op.name.ends_with("lm_head") && tokens == 512)
        continue;
      const PlannedLaunch *launch = launchFor((*planned)[c], tokens);
      if (!launch)
        continue;
      const codegen::GemmParams gp = *codegen::gemmParams(op);
      const int64_t k = gp.k, n = gp.n;
      const int64_t columns = gp.silu ? n / 2 : n;
      DeviceOperands operands(g);
      auto device = [&](const OperandInfo &o, size_t bytes, const void *data) {
        return operands.put(o, bytes, data);
      };
      uint64_t expertsUsed = 1, rows = static_cast<uint64_t>(tokens);
      bool ok = true;
      if (moe) {
        const int64_t e = gp.experts, topK = gp.topK;
        std::vector<int32_t> ids;
        std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(e - 1));
        for (int t = 0; t < tokens; ++t) {
          std::set<int32_t> chosen;
          while (static_cast<int64_t>(chosen.size()) < topK)
            chosen.insert(pick(rng));
          ids.insert(ids.end(), chosen.begin(), chosen.end());
        }
        std::set<int32_t> used(ids.begin(), ids.end());
        expertsUsed = used.size();
        std::vector<int32_t> order(ids.size()), starts(static_cast<size_t>(e + 1), 0);
        for (int32_t id : ids)
          ++starts[static_cast<size_t>(id + 1)];
        std::partial_sum(starts.begin(), starts.end(), starts.begin());
        std::vector<int32_t> next(starts.begin(), starts.end() - 1);
        for (size_t p = 0; p < ids.size(); ++p)
          order[static_cast<size_t>(next[static_cast<size_t>(ids[p])]++)] = static_cast<int32_t>(p);
        rows = ids.size();
        const uint64_t inRows = gp.gatherTokens ? static_cast<uint64_t>(tokens) : rows;
        ok = device(op.operands[0], inRows * k * 2, nullptr) &&
             device(op.operands[1], order.size() * 4, order.data()) &&
             device(op.operands[2], starts.size() * 4, starts.data()) &&
             device(op.operands[3], weightBytes(op.operands[3], e) + 4096, nullptr) &&
             device(op.operands[4], rows * columns * 2, nullptr);
      } else {
        ok = device(op.operands[0], static_cast<size_t>(tokens * k * 2), nullptr) &&
             device(op.operands[1], weightBytes(op.operands[1], 1) + 4096, nullptr);
        if (op.operands.size() == 4)
          ok = ok && device(op.operands[2], static_cast<size_t>(n * 2), nullptr);
        ok = ok && device(op.operands.back(),
                          static_cast<size_t>(tokens * columns * (gp.outF32 ? 4 : 2)), nullptr);
      }
      // Copies of the weights, launched in turn, so that at least 256 MiB
      // of them rotate: a GPU whose L2 holds one copy (an H200's 50 MB
      // holds most single projections) still streams them from memory.
      const OperandInfo &weight = moe ? op.operands[3] : op.operands[1];
      const size_t weightSize = weightBytes(weight, moe ? gp.experts : 1) + 4096;
      const size_t copies =
          std::clamp<size_t>(((size_t{256} << 20) + weightSize - 1) / weightSize, 1, 64);
      std::vector<PreparedLaunch> prepared;
      for (size_t i = 0; ok && i < copies; ++i) {
        if (i > 0)
          ok = device(weight, weightSize, nullptr);
        if (!ok)
          break;
        auto p = g.prepare(*launch, operands.bindings().map(), tokens, tokens);
        if (!p) {
          std::printf("| %s | error: %s |\n", op.name.c_str(), p.message().c_str());
          ok = false;
          break;
        }
        prepared.push_back(std::move(*p));
      }
      if (!ok) {
        std::printf("| %s | cannot allocate |\n", op.name.c_str());
        continue;
      }
      size_t next = 0;
      auto ms = g.time([&] { return g.launch(prepared[next++ % prepared.size()]); }, repeats);
      if (!ms) {
        std::printf("| %s | error: %s |\n", op.name.c_str(), ms.message().c_str());
        continue;
      }
      const uint64_t bytes = weightBytes(moe ? op.operands[3] : op.operands[1], expertsUsed) +
                             rows * static_cast<uint64_t>(k) * 2 +
                             rows * static_cast<uint64_t>(columns) * (gp.outF32 ? 4 : 2);
      const double seconds = *ms * 1e-3;
      const double gbps = bytes / seconds / 1e9;
      const double tflops = 2.0 * static_cast<double>(rows) * n * k / seconds / 1e12;
      const std::string kernel = registry.requests()[launch->kernel].kernel;
      std::printf("| %s | %s | %d | %.1f | %.0f | %.0f%% | %.1f |", op.name.c_str(), kernel.c_str(),
                  tokens, *ms * 1e3, gbps, copyGbps > 0 ? 100 * gbps / copyGbps : 0, tflops);
      if (peakTflops > 0)
        std::printf(" %.0f%% |", 100 * tflops / peakTflops);
      std::printf("\n");
    }
  }
  return 0;
}
