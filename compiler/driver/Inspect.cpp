//===- Inspect.cpp - `voltc inspect`: what a plan needs, before deploying -===//
#include "compiler/driver/Inspect.h"

#include "runtime/plan/Caches.h"

#include "compiler/spec/Sku.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/StepOperands.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

namespace volt::driver {
namespace {

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

/// The role of a pack entry by its name, coarse enough for a budget bar:
/// experts, shared expert, attention, linear attention, routers, dense
/// MLPs, embedding, lm_head, norms and the rest.
std::string weightRole(const std::string &name) {
  auto has = [&](const char *s) { return name.find(s) != std::string::npos; };
  if (has("shared_expert"))
    return "shared expert";
  if (has(".experts"))
    return "experts";
  if (has("linear_attn"))
    return "linear attention";
  if (has("self_attn"))
    return "attention";
  if (has("embed_tokens"))
    return "embedding";
  if (has("lm_head"))
    return "lm_head";
  if (has("mlp.gate") && !has("gate_proj") && !has("gate_up"))
    return "routers";
  if (has(".mlp."))
    return "dense MLP";
  return "norms and other";
}

/// What one decode step launches, by kernel (GPU plans) or op (cpu plans).
std::map<std::string, int> launchesPerDecodeStep(const plan::Plan &p, const plan::Rank &r,
                                                 plan::Program program = plan::Program::Target) {
  std::map<std::string, int> counts;
  const auto [first, last] = plan::programOps(r, program);
  for (uint32_t i = first; i < last; ++i) {
    const plan::Op *op = r.ops()->Get(i);
    std::string name = plan::EnumNameOpKind(op->kind());
    if (op->launches() && op->launches()->size() > 0 && p.kernels()) {
      // A decode step of one sequence runs the first variant.
      const plan::Launch *l = op->launches()->Get(0);
      if (l->kernel() < p.kernels()->size())
        name = str(p.kernels()->Get(l->kernel())->name());
    }
    ++counts[name];
  }
  return counts;
}

/// Resident warps per SM over the most an SM holds, for the first launch of
/// kernel `index` (block size and dynamic shared memory come from the
/// launch): limited by threads, registers and shared memory per SM.
std::optional<nlohmann::json> occupancy(const plan::Plan &p, uint32_t index,
                                        const std::optional<spec::Sku> &sku) {
  if (!sku || sku->maxThreadsPerSm <= 0 || sku->registersPerSm <= 0)
    return std::nullopt;
  const plan::Kernel *k = p.kernels()->Get(index);
  const plan::KernelResources *res = k->resources();
  auto at = [&](int64_t threads, int64_t dynamicShared) -> std::optional<nlohmann::json> {
    if (threads <= 0)
      return std::nullopt;
    int64_t warps = (threads + 31) / 32;
    int64_t byThreads = sku->maxThreadsPerSm / (warps * 32);
    int64_t regs = res ? std::max<int64_t>(res->registers(), 1) : 1;
    // Registers are allocated per warp in units of 256.
    int64_t perWarp = (regs * 32 + 255) / 256 * 256;
    int64_t byRegisters = sku->registersPerSm / (perWarp * warps);
    int64_t shared = (res ? res->static_shared_bytes() : 0) + dynamicShared;
    int64_t byShared =
        shared > 0 ? static_cast<int64_t>(sku->sharedMemoryPerSmBytes) / shared : byThreads;
    int64_t blocks = std::min({byThreads, byRegisters, byShared, int64_t{32}});
    const char *limit = blocks == byThreads     ? "threads"
                        : blocks == byRegisters ? "registers"
                        : blocks == byShared    ? "shared memory"
                                                : "32 blocks per SM";
    double fraction = static_cast<double>(blocks * warps * 32) / sku->maxThreadsPerSm;
    return nlohmann::json{{"threads_per_block", threads},
                          {"blocks_per_sm", blocks},
                          {"fraction", fraction},
                          {"limited_by", limit}};
  };
  // The sampler runs outside the step program, with the plan's threads.
  if (p.sampler() && p.sampler()->kernel() == index)
    return at(p.sampler()->threads(), 0);
  for (const plan::Rank *r : *p.ranks())
    for (const plan::Op *op : *r->ops()) {
      if (!op->launches())
        continue;
      for (const plan::Launch *l : *op->launches())
        if (l->kernel() == index)
          return at(static_cast<int64_t>(l->block_x()) * l->block_y() * l->block_z(),
                    l->shared_bytes());
    }
  return std::nullopt;
}

} // namespace

Result<InspectReport> inspect(const std::filesystem::path &planPath) {
  plan::LoadOptions options;
  options.loadWeights = false;
  auto loaded = plan::LoadedPlan::load(planPath, options);
  if (!loaded)
    return loaded.error();
  const plan::Plan &p = (*loaded)->plan();
  InspectReport report;
  nlohmann::json ranks = nlohmann::json::array();
  const plan::MemoryBudget *budget = p.memory_budget();
  uint64_t maxModelLen = p.limits()->max_model_len();
  for (const plan::Rank *r : *p.ranks()) {
    // The loader checked that the rank has its paged KV group.
    const plan::CacheGroup *kv = plan::pagedKvGroup(*r);
    uint64_t kvTokens = static_cast<uint64_t>(kv->num_blocks()) * kv->block_size();
    nlohmann::json states = nlohmann::json::array();
    for (const plan::CacheGroup *g : *r->caches())
      if (g->kind() == plan::CacheKind::StateSlots)
        states.push_back(
            {{"name", str(g->name())},
             {"layers", std::vector<uint32_t>(g->layers()->begin(), g->layers()->end())},
             {"dtype", plan::EnumNameDType(g->dtype())},
             {"slots", g->num_slots()},
             // Beyond one per sequence: the copies a speculative verify
             // step keeps to roll rejected drafts back.
             {"rollback_slots", g->num_slots() - std::min(g->num_slots(),
                                                          p.limits()->max_num_seqs())},
             {"slot_bytes", g->slot_bytes()},
             {"bytes_per_sequence", g->slot_bytes() * g->layers()->size()},
             {"bytes", g->bytes()}});
    nlohmann::json buffers = nlohmann::json::array();
    std::vector<const plan::Buffer *> largest(r->buffers()->begin(), r->buffers()->end());
    std::stable_sort(
        largest.begin(), largest.end(),
        [](const plan::Buffer *a, const plan::Buffer *b) { return a->bytes() > b->bytes(); });
    if (largest.size() > 8)
      largest.resize(8);
    for (const plan::Buffer *b : largest)
      buffers.push_back({{"name", str(b->name())},
                         {"bytes", b->bytes()},
                         {"offset", b->offset()},
                         {"first_op", b->first_op()},
                         {"last_op", b->last_op()},
                         {"first_op_name", str(r->ops()->Get(b->first_op())->name())},
                         {"last_op_name", str(r->ops()->Get(b->last_op())->name())}});
    nlohmann::json arenaBuffers = nlohmann::json::array();
    for (const plan::Buffer *b : *r->buffers())
      arenaBuffers.push_back({{"name", str(b->name())},
                              {"offset", b->offset()},
                              {"bytes", b->bytes()},
                              {"first_op", b->first_op()},
                              {"last_op", b->last_op()}});
    std::map<std::string, std::pair<uint64_t, uint64_t>> roles; // role -> (bytes, entries)
    std::map<std::string, uint64_t> formats;                    // format -> bytes
    if (r->weights())
      for (const plan::WeightEntry *w : *r->weights()) {
        auto &[bytes, entries] = roles[weightRole(str(w->name()))];
        bytes += w->bytes();
        ++entries;
        formats[w->layout() == plan::WeightLayout::Nvfp4RowMajor  ? "NVFP4"
                : w->layout() == plan::WeightLayout::Fp8RowScaled ? "FP8 E4M3 (row scales)"
                                                                  : plan::EnumNameDType(w->dtype())] +=
            w->bytes();
      }
    nlohmann::json weightFormats = nlohmann::json::object();
    for (const auto &[format, bytes] : formats)
      weightFormats[format] = bytes;
    nlohmann::json weightRoles = nlohmann::json::array();
    for (const auto &[role, v] : roles)
      weightRoles.push_back({{"role", role}, {"bytes", v.first}, {"entries", v.second}});
    std::stable_sort(weightRoles.begin(), weightRoles.end(),
                     [](const nlohmann::json &a, const nlohmann::json &b) {
                       return a["bytes"].get<uint64_t>() > b["bytes"].get<uint64_t>();
                     });
    std::vector<std::string> opNames;
    for (const plan::Op *op : *r->ops())
      opNames.push_back(str(op->name()));
    nlohmann::json kernels = nlohmann::json::object();
    for (const auto &[name, count] : launchesPerDecodeStep(p, *r))
      kernels[name] = count;
    nlohmann::json draft = nullptr;
    if (r->draft_ops_begin() > 0) {
      nlohmann::json launches = nlohmann::json::object();
      for (const auto &[name, count] : launchesPerDecodeStep(p, *r, plan::Program::Draft))
        launches[name] = count;
      draft = {{"first_op", r->draft_ops_begin()},
               {"ops", r->ops()->size() - r->draft_ops_begin()},
               {"launches_per_draft_step", launches}};
    }
    uint64_t total = (budget ? budget->cuda_context_bytes() + budget->nccl_bytes() : 0) +
                     r->pack()->bytes() + r->arena_bytes() + r->workspace_bytes() +
                     r->cache_bytes();
    // A draft program's hidden rows (StepOutput.Hidden): what the rank's
    // device bytes hold beyond the parts above.
    const uint64_t hidden =
        r->draft_ops_begin() > 0 && r->device_bytes() > total ? r->device_bytes() - total : 0;
    total += hidden;
    ranks.push_back(
        {{"rank", r->rank()},
         {"weights_bytes", r->pack()->bytes()},
         {"weights_file", str(r->pack()->file())},
         {"kv_cache",
          {{"bytes", kv->bytes()},
           {"blocks", kv->num_blocks()},
           {"block_size", kv->block_size()},
           {"tokens", kvTokens},
           {"full_length_sequences",
            maxModelLen ? static_cast<double>(kvTokens) / static_cast<double>(maxModelLen) : 0.0},
           {"layers", std::vector<uint32_t>(kv->layers()->begin(), kv->layers()->end())},
           {"bytes_per_token", kvTokens ? kv->bytes() / kvTokens : 0},
           {"kv_heads", kv->num_kv_heads()},
           {"head_dim", kv->head_dim()}}},
         {"state", states},
         {"arena_bytes", r->arena_bytes()},
         {"arena_lower_bound", r->arena_lower_bound()},
         {"workspace_bytes", r->workspace_bytes()},
         {"hidden_rows_bytes", hidden},
         {"cuda_context_bytes", budget ? budget->cuda_context_bytes() : 0},
         {"nccl_bytes", budget ? budget->nccl_bytes() : 0},
         {"total_bytes", total},
         {"budget_bytes", budget ? budget->budget_bytes() : 0},
         {"ops", r->ops()->size()},
         {"largest_buffers", buffers},
         {"arena_buffers", arenaBuffers},
         {"weights_by_role", weightRoles},
         {"weights_by_format", weightFormats},
         {"op_names", opNames},
         {"launches_per_decode_step", kernels},
         {"draft_program", draft}});
  }
  nlohmann::json kernelList = nlohmann::json::array();
  // The SKU the plan was compiled for, for occupancy.
  std::optional<spec::Sku> sku;
  if (p.sku_yaml() && p.sku_yaml()->size() > 0)
    if (auto parsed = spec::parseSku(p.sku_yaml()->str(), str(p.sku_name())); parsed)
      sku = std::move(*parsed);
  if (p.kernels())
    for (uint32_t index = 0; index < p.kernels()->size(); ++index) {
      const plan::Kernel *k = p.kernels()->Get(index);
      const plan::KernelResources *res = k->resources();
      nlohmann::json entry = {{"name", str(k->name())},
                              {"source", str(k->source())},
                              {"registers", res ? res->registers() : 0},
                              {"static_shared_bytes", res ? res->static_shared_bytes() : 0},
                              {"local_bytes", res ? res->local_bytes() : 0},
                              {"cubin_bytes", k->cubin() ? k->cubin()->size() : 0}};
      if (auto occ = occupancy(p, index, sku); occ)
        entry["occupancy"] = *occ;
      kernelList.push_back(entry);
    }
  nlohmann::json speculative = nullptr;
  if (const plan::Speculative *sp = p.speculative()) {
    speculative = {{"method", str(sp->method())},
                   {"num_speculative_tokens", sp->num_speculative_tokens()}};
    if (str(sp->method()) == "ngram") {
      speculative["prompt_lookup_min"] = sp->prompt_lookup_min();
      speculative["prompt_lookup_max"] = sp->prompt_lookup_max();
    }
  }
  report.json = {{"plan", planPath.string()},
                 {"format_version", p.format_version()},
                 {"producer", str(p.producer())},
                 {"sku", str(p.sku_name())},
                 {"arch", str(p.arch())},
                 {"served_model_name", str(p.served_model_name())},
                 {"architecture", str(p.model()->architecture())},
                 {"tensor_parallel_size", p.tensor_parallel_size()},
                 {"max_model_len", maxModelLen},
                 {"max_num_seqs", p.limits()->max_num_seqs()},
                 {"max_num_batched_tokens", p.limits()->max_num_batched_tokens()},
                 {"max_logits_rows", plan::maxLogitsRows(*p.limits())},
                 {"speculative", speculative},
                 {"generation_defaults", plan::generationDefaultsOf(p).describe()},
                 {"device_bytes", budget ? budget->device_bytes() : 0},
                 {"gpu_memory_utilization", budget ? budget->gpu_memory_utilization() : 0.0f},
                 {"ranks", ranks},
                 {"kernels", kernelList}};
  return report;
}

std::string formatInspectReport(const InspectReport &report) {
  const nlohmann::json &j = report.json;
  std::ostringstream out;
  out << j["plan"].get<std::string>() << ": " << j["architecture"].get<std::string>() << " for "
      << j["tensor_parallel_size"] << " x " << j["sku"].get<std::string>() << " ("
      << j["arch"].get<std::string>() << "), served as '"
      << j["served_model_name"].get<std::string>() << "'\n";
  out << "  limits: max_model_len " << j["max_model_len"] << ", max_num_seqs " << j["max_num_seqs"]
      << ", max_num_batched_tokens " << j["max_num_batched_tokens"] << "\n";
  if (!j["speculative"].is_null()) {
    const auto &sp = j["speculative"];
    out << "  speculative: " << sp["method"].get<std::string>() << ", "
        << sp["num_speculative_tokens"] << " draft tokens per step";
    if (sp.contains("prompt_lookup_min"))
      out << " (prompt lookup " << sp["prompt_lookup_min"] << ".." << sp["prompt_lookup_max"]
          << ")";
    else
      out << " (the checkpoint's MTP head, greedy)";
    out << ", up to " << j["max_logits_rows"] << " logits rows per step\n";
  }
  out << "  sampling defaults (generation_config.json): "
      << j["generation_defaults"].get<std::string>() << "\n";
  auto row = [&](const std::string &what, uint64_t bytes, const std::string &note = "") {
    char buf[384];
    std::snprintf(buf, sizeof buf, "    %-28s %12s  %s\n", what.c_str(), formatBytes(bytes).c_str(),
                  note.c_str());
    out << buf;
  };
  for (const auto &r : j["ranks"]) {
    out << "  rank " << r["rank"] << ":\n";
    std::string formatNote;
    for (const auto &[format, bytes] : r["weights_by_format"].items())
      formatNote += (formatNote.empty() ? "" : ", ") + format + " " +
                    formatBytes(bytes.get<uint64_t>());
    row("weights (" + r["weights_file"].get<std::string>() + ")", r["weights_bytes"], formatNote);
    const auto &kv = r["kv_cache"];
    char kvNote[256];
    std::snprintf(kvNote, sizeof kvNote,
                  "%s blocks x %llu = %s tokens = %.1f full-length sequences; %s per token "
                  "(%zu attention layers)",
                  formatCount(kv["blocks"].get<uint64_t>()).c_str(),
                  static_cast<unsigned long long>(kv["block_size"].get<uint64_t>()),
                  formatCount(kv["tokens"].get<uint64_t>()).c_str(),
                  kv["full_length_sequences"].get<double>(),
                  formatBytes(kv["bytes_per_token"].get<uint64_t>()).c_str(), kv["layers"].size());
    row("KV cache", kv["bytes"], kvNote);
    for (const auto &st : r["state"]) {
      char note[240];
      int n = std::snprintf(note, sizeof note, "%s slots x %s per sequence (%zu layers, %s)",
                            formatCount(st["slots"].get<uint64_t>()).c_str(),
                            formatBytes(st["bytes_per_sequence"].get<uint64_t>()).c_str(),
                            st["layers"].size(), st["dtype"].get<std::string>().c_str());
      if (const uint64_t extra = st["rollback_slots"].get<uint64_t>(); extra > 0 && n > 0)
        std::snprintf(note + n, sizeof note - static_cast<size_t>(n),
                      "; %s of them copies for draft rollback (%s)", formatCount(extra).c_str(),
                      formatBytes(extra * st["bytes_per_sequence"].get<uint64_t>()).c_str());
      row("recurrent state '" + st["name"].get<std::string>() + "'", st["bytes"], note);
    }
    uint64_t arena = r["arena_bytes"], lower = r["arena_lower_bound"];
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "lower bound %s (x%.2f)", formatBytes(lower).c_str(),
                  lower ? static_cast<double>(arena) / static_cast<double>(lower) : 1.0);
    row("activation arena", arena, ratio);
    row("kernel workspaces", r["workspace_bytes"]);
    if (r["hidden_rows_bytes"].get<uint64_t>() > 0)
      row("MTP hidden rows", r["hidden_rows_bytes"],
          "the target's last hidden state per token, for the draft program");
    row("CUDA context", r["cuda_context_bytes"]);
    if (r["nccl_bytes"].get<uint64_t>() > 0)
      row("NCCL buffers", r["nccl_bytes"]);
    char budgetNote[96];
    std::snprintf(budgetNote, sizeof budgetNote, "of %s budget (gpu_memory_utilization %.2f)",
                  formatBytes(r["budget_bytes"].get<uint64_t>()).c_str(),
                  j["gpu_memory_utilization"].get<double>());
    row("total", r["total_bytes"], budgetNote);
    out << "    largest buffers (bytes, live from op to op):\n";
    for (const auto &b : r["largest_buffers"]) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "      %-40s %12s  ops %llu..%llu (%s .. %s)\n",
                    b["name"].get<std::string>().c_str(),
                    formatBytes(b["bytes"].get<uint64_t>()).c_str(),
                    static_cast<unsigned long long>(b["first_op"].get<uint64_t>()),
                    static_cast<unsigned long long>(b["last_op"].get<uint64_t>()),
                    b["first_op_name"].get<std::string>().c_str(),
                    b["last_op_name"].get<std::string>().c_str());
      out << buf;
    }
    uint64_t launches = 0;
    for (const auto &[name, count] : r["launches_per_decode_step"].items())
      launches += count.get<uint64_t>();
    out << "    launches per decode step: " << launches << "\n";
    for (const auto &[name, count] : r["launches_per_decode_step"].items())
      out << "      " << count << " x " << name << "\n";
    if (!r["draft_program"].is_null()) {
      const auto &d = r["draft_program"];
      uint64_t draftLaunches = 0;
      for (const auto &[name, count] : d["launches_per_draft_step"].items())
        draftLaunches += count.get<uint64_t>();
      out << "    draft program (MTP head): ops " << d["first_op"] << ".."
          << d["first_op"].get<uint64_t>() + d["ops"].get<uint64_t>() - 1 << ", "
          << draftLaunches << " launches per draft step\n";
      for (const auto &[name, count] : d["launches_per_draft_step"].items())
        out << "      " << count << " x " << name << "\n";
    }
  }
  if (!j["kernels"].empty()) {
    out << "  kernels:\n";
    for (const auto &k : j["kernels"]) {
      out << "    " << k["name"].get<std::string>() << ": " << k["registers"] << " registers, "
          << k["static_shared_bytes"] << " B static shared, " << k["local_bytes"] << " B local";
      if (k.contains("occupancy")) {
        const auto &o = k["occupancy"];
        char buf[128];
        std::snprintf(
            buf, sizeof buf, "; %lld threads/block, %lld blocks/SM, occupancy %.0f%% (%s)",
            static_cast<long long>(o["threads_per_block"].get<int64_t>()),
            static_cast<long long>(o["blocks_per_sm"].get<int64_t>()),
            100.0 * o["fraction"].get<double>(), o["limited_by"].get<std::string>().c_str());
        out << buf;
      }
      out << "\n";
    }
  }
  return out.str();
}

} // namespace volt::driver
