//===- InspectHtml.cpp - `voltc inspect --html`: the memory plan as a page -===//
//
// One self-contained page (inline CSS and SVG; no script, no network): per
// GPU, a bar of the device's memory (CUDA context, NCCL, weights by role,
// activation arena, workspaces, KV cache, recurrent state, what the budget
// leaves unused, what lies outside gpu_memory_utilization), the same as a
// table, and the arena's buffers drawn over the step's op timeline (x: op
// index, y: arena offset), so that an operator sees what the plan holds and
// where the arena's peak is. Every drawn element carries its numbers as
// data- attributes, which tests/lit/voltc/inspect-html.test reads back from
// the DOM a headless browser built.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Inspect.h"

#include "runtime/support/Strings.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace volt::driver {
namespace {

std::string escape(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

struct Part {
  std::string name;  ///< "weights: experts"
  std::string kind;  ///< CSS class: context, nccl, weights, arena, workspace, kv, state, free, outside
  uint64_t bytes;
};

/// A colour per buffer index that neighbours tell apart.
std::string hue(size_t i) { return "hsl(" + std::to_string((i * 47) % 360) + ",55%,62%)"; }

constexpr const char *kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-top: 1px solid #ddd; padding-top: 12px; }
h3 { font-size: 14px; margin: 18px 0 6px; }
.summary { color: #555; margin: 0 0 8px; }
.bar { display: flex; height: 34px; border: 1px solid #888; border-radius: 3px; overflow: hidden; }
.seg { height: 100%; min-width: 1px; box-sizing: border-box; border-right: 1px solid rgba(0,0,0,.25); }
.context { background: #9e9e9e; } .nccl { background: #bdbdbd; }
.weights { background: #5c6bc0; } .weights.r1 { background: #7986cb; } .weights.r2 { background: #3f51b5; }
.weights.r3 { background: #9fa8da; } .weights.r4 { background: #303f9f; }
.arena { background: #ef6c00; } .workspace { background: #ffb74d; }
.kv { background: #43a047; } .state { background: #00897b; }
.free { background: repeating-linear-gradient(45deg,#fff,#fff 4px,#eee 4px,#eee 8px); }
.outside { background: #eceff1; }
table { border-collapse: collapse; margin-top: 10px; }
td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid #eee; }
td:first-child, th:first-child { text-align: left; }
.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 6px; vertical-align: -1px; border: 1px solid rgba(0,0,0,.3); }
svg.arena-map { width: 100%; height: 320px; border: 1px solid #888; background: #fafafa; }
svg.arena-map rect.buffer { stroke: rgba(0,0,0,.35); stroke-width: .5; vector-effect: non-scaling-stroke; }
.axis { color: #555; font-size: 12px; display: flex; justify-content: space-between; }
)css";

} // namespace

std::string formatInspectHtml(const InspectReport &report) {
  const nlohmann::json &j = report.json;
  const std::string planName = j["plan"].get<std::string>();
  const uint64_t device = j["device_bytes"].get<uint64_t>();
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                    escape("volt plan " + planName) + "</title>\n<style>" + kStyle +
                    "</style></head>\n<body>\n";
  out += "<h1>" + escape(planName) + "</h1>\n<p class=\"summary\">" +
         escape(j["architecture"].get<std::string>()) + " for " +
         std::to_string(j["tensor_parallel_size"].get<uint64_t>()) + " × " +
         escape(j["sku"].get<std::string>()) + " (" + escape(j["arch"].get<std::string>()) +
         "), served as ‘" + escape(j["served_model_name"].get<std::string>()) +
         "’; max_model_len " + std::to_string(j["max_model_len"].get<uint64_t>()) +
         ", max_num_seqs " + std::to_string(j["max_num_seqs"].get<uint64_t>()) +
         ", max_num_batched_tokens " + std::to_string(j["max_num_batched_tokens"].get<uint64_t>()) +
         "; gpu_memory_utilization " + fixed(j["gpu_memory_utilization"].get<double>(), 2) + " of " +
         escape(formatBytes(device)) + " per GPU. " + escape(j["producer"].get<std::string>()) +
         ".</p>\n";

  for (const nlohmann::json &r : j["ranks"]) {
    const uint64_t rank = r["rank"].get<uint64_t>();
    const uint64_t budget = r["budget_bytes"].get<uint64_t>();
    const uint64_t total = r["total_bytes"].get<uint64_t>();
    std::vector<Part> parts;
    parts.push_back({"CUDA context", "context", r["cuda_context_bytes"].get<uint64_t>()});
    if (r["nccl_bytes"].get<uint64_t>() > 0)
      parts.push_back({"NCCL buffers", "nccl", r["nccl_bytes"].get<uint64_t>()});
    // Weights by role; the pack's alignment padding and header go with the rest.
    uint64_t roleBytes = 0;
    size_t roleIndex = 0;
    for (const nlohmann::json &w : r["weights_by_role"]) {
      parts.push_back({"weights: " + w["role"].get<std::string>(),
                       "weights r" + std::to_string(roleIndex++ % 5), w["bytes"].get<uint64_t>()});
      roleBytes += w["bytes"].get<uint64_t>();
    }
    const uint64_t weights = r["weights_bytes"].get<uint64_t>();
    if (weights > roleBytes)
      parts.push_back({"weights: pack header and alignment", "weights r4", weights - roleBytes});
    parts.push_back({"activation arena", "arena", r["arena_bytes"].get<uint64_t>()});
    if (r["workspace_bytes"].get<uint64_t>() > 0)
      parts.push_back({"kernel workspaces", "workspace", r["workspace_bytes"].get<uint64_t>()});
    if (r.value("hidden_rows_bytes", uint64_t{0}) > 0)
      parts.push_back({"MTP hidden rows", "workspace", r["hidden_rows_bytes"].get<uint64_t>()});
    parts.push_back({"KV cache", "kv", r["kv_cache"]["bytes"].get<uint64_t>()});
    uint64_t states = 0;
    for (const nlohmann::json &st : r["state"]) {
      parts.push_back({"recurrent state: " + st["name"].get<std::string>(), "state",
                       st["bytes"].get<uint64_t>()});
      states += st["bytes"].get<uint64_t>();
    }
    // The cache region's alignment between groups counts as cache.
    const uint64_t listed = [&] {
      uint64_t s = 0;
      for (const Part &p : parts)
        s += p.bytes;
      return s;
    }();
    if (total > listed)
      parts.push_back({"cache alignment", "kv", total - listed});
    if (budget > total)
      parts.push_back({"unused budget", "free", budget - total});
    if (device > std::max(budget, total))
      parts.push_back({"outside gpu_memory_utilization", "outside", device - std::max(budget, total)});
    uint64_t barBytes = 0;
    for (const Part &p : parts)
      barBytes += p.bytes;

    out += "<section class=\"gpu\" id=\"rank-" + std::to_string(rank) + "\" data-rank=\"" +
           std::to_string(rank) + "\" data-device-bytes=\"" + std::to_string(device) +
           "\" data-budget-bytes=\"" + std::to_string(budget) + "\" data-total-bytes=\"" +
           std::to_string(total) + "\">\n<h2>GPU " + std::to_string(rank) + " (rank " +
           std::to_string(rank) + "): " + escape(formatBytes(total)) + " of a " +
           escape(formatBytes(budget)) + " budget</h2>\n";
    out += "<div class=\"bar\" data-bar-bytes=\"" + std::to_string(barBytes) + "\">";
    for (const Part &p : parts) {
      const double share = barBytes ? 100.0 * static_cast<double>(p.bytes) / static_cast<double>(barBytes) : 0.0;
      out += "<div class=\"seg " + p.kind + "\" data-part=\"" + escape(p.name) + "\" data-bytes=\"" +
             std::to_string(p.bytes) + "\" style=\"width:" + fixed(share, 4) + "%\" title=\"" +
             escape(p.name + ": " + formatBytes(p.bytes) + " (" + fixed(share, 1) + " %)") +
             "\"></div>";
    }
    out += "</div>\n<table class=\"parts\"><tr><th>part</th><th>bytes</th><th>of the GPU</th></tr>\n";
    for (const Part &p : parts)
      out += "<tr><td><span class=\"swatch seg " + p.kind + "\"></span>" + escape(p.name) +
             "</td><td>" + escape(formatBytes(p.bytes)) + "</td><td>" +
             fixed(barBytes ? 100.0 * static_cast<double>(p.bytes) / static_cast<double>(barBytes) : 0.0, 1) +
             " %</td></tr>\n";
    const nlohmann::json &kv = r["kv_cache"];
    out += "</table>\n<p class=\"summary\">KV cache: " + std::to_string(kv["blocks"].get<uint64_t>()) +
           " blocks × " + std::to_string(kv["block_size"].get<uint64_t>()) + " tokens = " +
           std::to_string(kv["tokens"].get<uint64_t>()) + " tokens = " +
           fixed(kv["full_length_sequences"].get<double>(), 1) +
           " full-length sequences" +
           (states ? "; recurrent state " + escape(formatBytes(states)) + " for " +
                         std::to_string(j["max_num_seqs"].get<uint64_t>()) + " sequences"
                   : std::string()) +
           ".</p>\n";

    // The arena over the op timeline.
    const uint64_t arena = std::max<uint64_t>(r["arena_bytes"].get<uint64_t>(), 1);
    const uint64_t ops = std::max<uint64_t>(r["ops"].get<uint64_t>(), 1);
    const nlohmann::json &buffers = r["arena_buffers"];
    out += "<h3>Activation arena: " + std::to_string(buffers.size()) + " buffers over " +
           std::to_string(ops) + " ops (" + escape(formatBytes(arena)) + ", lower bound " +
           escape(formatBytes(r["arena_lower_bound"].get<uint64_t>())) + ")</h3>\n";
    out += "<svg class=\"arena-map\" viewBox=\"0 0 1000 1000\" preserveAspectRatio=\"none\" "
           "data-ops=\"" + std::to_string(ops) + "\" data-arena-bytes=\"" + std::to_string(arena) +
           "\">\n";
    const std::vector<std::string> opNames = r["op_names"].get<std::vector<std::string>>();
    for (size_t i = 0; i < buffers.size(); ++i) {
      const nlohmann::json &b = buffers[i];
      const uint64_t first = b["first_op"].get<uint64_t>(), last = b["last_op"].get<uint64_t>();
      const uint64_t offset = b["offset"].get<uint64_t>(), bytes = b["bytes"].get<uint64_t>();
      const double x = 1000.0 * static_cast<double>(first) / static_cast<double>(ops);
      const double w = 1000.0 * static_cast<double>(last - first + 1) / static_cast<double>(ops);
      const double y = 1000.0 * static_cast<double>(offset) / static_cast<double>(arena);
      const double h = std::max(1000.0 * static_cast<double>(bytes) / static_cast<double>(arena), 0.5);
      const std::string name = b["name"].get<std::string>();
      auto opName = [&](uint64_t op) { return op < opNames.size() ? opNames[op] : std::string("?"); };
      out += "<rect class=\"buffer\" data-name=\"" + escape(name) + "\" data-offset=\"" +
             std::to_string(offset) + "\" data-bytes=\"" + std::to_string(bytes) +
             "\" data-first-op=\"" + std::to_string(first) + "\" data-last-op=\"" +
             std::to_string(last) + "\" x=\"" + fixed(x, 3) + "\" y=\"" + fixed(y, 3) +
             "\" width=\"" + fixed(w, 3) + "\" height=\"" + fixed(h, 3) + "\" fill=\"" + hue(i) +
             "\"><title>" +
             escape(name + ": " + formatBytes(bytes) + " at " + formatBytes(offset) + ", ops " +
                    std::to_string(first) + "–" + std::to_string(last) + " (" + opName(first) +
                    " … " + opName(last) + ")") +
             "</title></rect>\n";
    }
    out += "</svg>\n<div class=\"axis\"><span>op 0 (" +
           escape(opNames.empty() ? std::string() : opNames.front()) + ")</span><span>x: op index, "
           "y: arena offset (0 at the top)</span><span>op " + std::to_string(ops - 1) + " (" +
           escape(opNames.empty() ? std::string() : opNames.back()) + ")</span></div>\n</section>\n";
  }
  out += "</body></html>\n";
  return out;
}

} // namespace volt::driver
