//===- Metrics.h - Prometheus metrics of the server ------------*- C++ -*-===//
//
// What GET /metrics reports, in the Prometheus text format, with vLLM's
// metric names under a `volt:` prefix (vllm:time_to_first_token_seconds ->
// volt:time_to_first_token_seconds), or under vLLM's own `vllm:` (volt-serve
// --metrics-prefix vllm) so that dashboards built for vLLM work unchanged;
// and the process_* metrics of Prometheus client libraries. Request-level numbers are observed by the
// server as requests stream and finish; engine gauges and counters are read
// from an engine::EngineStats snapshot at scrape time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace volt::server {

/// A cumulative Prometheus histogram.
class Histogram {
public:
  explicit Histogram(std::vector<double> upperBounds);
  void observe(double value);
  /// `name_bucket{...le=...}`, `name_sum`, `name_count` lines.
  void render(std::string &out, const std::string &name, const std::string &labels) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// Engine facts that do not change while serving.
struct EngineInfo {
  int32_t numKvBlocks = 0;
  int32_t blockSize = 0;
  /// Draft tokens per verify round (0: no speculative decoding).
  int32_t numSpeculativeTokens = 0;
};

class Metrics {
public:
  /// `prefix` starts every family name but process_*'s: "volt:" or
  /// "vllm:".
  explicit Metrics(const std::string &modelName, const std::string &prefix = "volt:");
  /// The model_name label (known once the plan is loaded).
  void setModelName(const std::string &modelName);

  /// One HTTP response (every endpoint). `handler` is the route template
  /// ("/v1/completions"), or "other" for unknown paths.
  void observeHttp(const std::string &handler, const std::string &method, int status);
  /// A request turned away before reaching the engine: "concurrency",
  /// "queue_full", "loading", "shutting_down".
  void observeRejected(const std::string &reason);
  /// Per generated token of one sequence: TTFT for the first, the gap since
  /// the previous token otherwise.
  void observeToken(bool first, double seconds);
  /// One sequence (choice) finished, with its engine times.
  void observeFinished(engine::FinishReason reason, const engine::RequestTimes &times,
                       int32_t promptTokens, int32_t generationTokens);
  /// The Prometheus text; `stats` is null while the plan is loading.
  std::string render(const engine::EngineStats *stats, const EngineInfo &info) const;

private:
  std::string name(const char *family) const;
  std::string prefix_;
  std::string modelLabel_;
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> http_;
  std::map<std::string, uint64_t> rejected_;
  std::map<std::string, uint64_t> finished_;
  uint64_t promptTokensOfFinished_ = 0, generationTokensOfFinished_ = 0;
  Histogram ttft_, interToken_, e2e_, queue_, prefill_, decode_, inference_,
      timePerOutputToken_, requestPrompt_, requestGeneration_;
};

/// Prometheus label value escaping (backslash, quote, newline).
std::string escapeLabel(const std::string &value);

} // namespace volt::server
