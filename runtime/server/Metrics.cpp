//===- Metrics.cpp --------------------------------------------------------===//
#include "runtime/server/Metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace volt::server {
namespace {

// vLLM's bucket boundaries for the same metrics.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kInterTokenBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

std::vector<double> tokenCountBuckets(int32_t maxModelLen) {
  // 1, 2, 5, 10, 20, 50, ... up to max_model_len, as vLLM builds them.
  std::vector<double> b;
  for (double scale = 1;; scale *= 10)
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * scale;
      if (v > std::max(maxModelLen, 1))
        return b;
      b.push_back(v);
    }
}

std::string formatNumber(double v) {
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // The shortest form that reads back as the same double ("0.1", not
  // "0.10000000000000001").
  for (int precision : {15, 17}) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

void header(std::string &out, const std::string &name, const char *type, const char *help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string &out, const std::string &name, const std::string &labels, double v) {
  out += name + "{" + labels + "} " + formatNumber(v) + "\n";
}

} // namespace

std::string escapeLabel(const std::string &value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Histogram::Histogram(std::vector<double> upperBounds)
    : bounds_(std::move(upperBounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string &out, const std::string &name, const std::string &labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    double le = i < bounds_.size() ? bounds_[i] : INFINITY;
    sample(out, name + "_bucket", labels + ",le=\"" + formatNumber(le) + "\"", double(cumulative));
  }
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, double(count_));
}

Metrics::Metrics(const std::string &modelName)
    : modelLabel_("model_name=\"" + escapeLabel(modelName) + "\""), ttft_(kTtftBuckets),
      interToken_(kInterTokenBuckets), e2e_(kRequestLatencyBuckets), queue_(kRequestLatencyBuckets),
      requestPrompt_(tokenCountBuckets(1 << 20)), requestGeneration_(tokenCountBuckets(1 << 20)) {}

void Metrics::setModelName(const std::string &modelName) {
  std::lock_guard<std::mutex> lock(mu_);
  modelLabel_ = "model_name=\"" + escapeLabel(modelName) + "\"";
}

void Metrics::observeHttp(const std::string &handler, const std::string &method, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_[{handler, method, std::to_string(status)}];
}

void Metrics::observeRejected(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_[reason];
}

void Metrics::observeToken(bool first, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  (first ? ttft_ : interToken_).observe(seconds);
}

void Metrics::observeFinished(engine::FinishReason reason, const engine::RequestTimes &times,
                              int32_t promptTokens, int32_t generationTokens) {
  auto seconds = [](engine::Clock::time_point a, engine::Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[engine::finishReasonName(reason)];
  promptTokensOfFinished_ += uint64_t(std::max(promptTokens, 0));
  generationTokensOfFinished_ += uint64_t(std::max(generationTokens, 0));
  e2e_.observe(seconds(times.arrival, times.finished));
  if (times.firstScheduled != engine::Clock::time_point{})
    queue_.observe(seconds(times.arrival, times.firstScheduled));
  requestPrompt_.observe(promptTokens);
  requestGeneration_.observe(generationTokens);
}

std::string Metrics::render(const engine::EngineStats *stats, const EngineInfo &info) const {
  std::string out;
  std::unique_lock<std::mutex> lock(mu_);
  const std::string m = modelLabel_;
  lock.unlock();
  engine::EngineStats s = stats ? *stats : engine::EngineStats{};

  header(out, "volt:num_requests_running", "gauge", "Sequences in the engine's running batch.");
  sample(out, "volt:num_requests_running", m, s.numRunning);
  header(out, "volt:num_requests_waiting", "gauge", "Sequences waiting to be scheduled.");
  sample(out, "volt:num_requests_waiting", m, s.numWaiting);
  header(out, "volt:kv_cache_usage_perc", "gauge",
         "Fraction of KV-cache blocks held by sequences (1 = full).");
  sample(out, "volt:kv_cache_usage_perc", m, s.kvCache.usage);
  header(out, "volt:kv_cache_used_blocks", "gauge", "KV-cache blocks held by sequences.");
  sample(out, "volt:kv_cache_used_blocks", m, s.kvCache.usedBlocks);
  header(out, "volt:cache_config_info", "gauge", "KV-cache configuration (value is 1).");
  sample(out, "volt:cache_config_info",
         m + ",block_size=\"" + std::to_string(info.blockSize) + "\",num_gpu_blocks=\"" +
             std::to_string(info.numKvBlocks) + "\"",
         1);
  header(out, "volt:num_preemptions_total", "counter", "Sequences preempted (recomputed).");
  sample(out, "volt:num_preemptions_total", m, double(s.numPreemptions));
  header(out, "volt:prompt_tokens_total", "counter",
         "Prompt tokens of requests, counted when first scheduled.");
  sample(out, "volt:prompt_tokens_total", m, double(s.promptTokens));
  header(out, "volt:generation_tokens_total", "counter", "Generated tokens.");
  sample(out, "volt:generation_tokens_total", m, double(s.generationTokens));
  header(out, "volt:prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache.");
  sample(out, "volt:prefix_cache_queries_total", m, double(s.prefixCacheQueries));
  header(out, "volt:prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache.");
  sample(out, "volt:prefix_cache_hits_total", m, double(s.prefixCacheHits));
  header(out, "volt:sampled_from_candidates_total", "counter",
         "Tokens sampled from the backend's candidates (no logits row crossed to the host).");
  sample(out, "volt:sampled_from_candidates_total", m, double(s.sampledFromCandidates));
  header(out, "volt:logits_rows_fetched_total", "counter",
         "Tokens whose logits row was fetched because the candidates did not decide them.");
  sample(out, "volt:logits_rows_fetched_total", m, double(s.rowsFetched));
  // vLLM's spec_decode counters; zero when the plan does not speculate.
  header(out, "volt:spec_decode_num_drafts_total", "counter",
         "Speculative verify rounds (a sequence's drafts checked in one step).");
  sample(out, "volt:spec_decode_num_drafts_total", m, double(s.specDecode.numDrafts));
  header(out, "volt:spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified.");
  sample(out, "volt:spec_decode_num_draft_tokens_total", m, double(s.specDecode.numDraftTokens));
  header(out, "volt:spec_decode_num_accepted_tokens_total", "counter",
         "Draft tokens the target's sampling agreed with (kept).");
  sample(out, "volt:spec_decode_num_accepted_tokens_total", m,
         double(s.specDecode.numAcceptedTokens));
  header(out, "volt:spec_decode_num_accepted_tokens_per_pos_total", "counter",
         "Verify rounds whose draft at this position was kept.");
  for (int32_t j = 0; j < info.numSpeculativeTokens && j < engine::kMaxSpeculativeTokens; ++j)
    sample(out, "volt:spec_decode_num_accepted_tokens_per_pos_total",
           m + ",position=\"" + std::to_string(j) + "\"",
           double(s.specDecode.acceptedPerPosition[size_t(j)]));

  lock.lock();
  header(out, "volt:request_success_total", "counter",
         "Finished sequences (one per choice) by finish reason.");
  for (const char *reason : {"stop", "length", "abort"}) {
    auto it = finished_.find(reason);
    sample(out, "volt:request_success_total", m + ",finished_reason=\"" + reason + "\"",
           it == finished_.end() ? 0 : double(it->second));
  }
  header(out, "volt:request_prompt_tokens_total", "counter",
         "Prompt tokens of finished sequences.");
  sample(out, "volt:request_prompt_tokens_total", m, double(promptTokensOfFinished_));
  header(out, "volt:request_generation_tokens_total", "counter",
         "Generated tokens of finished sequences.");
  sample(out, "volt:request_generation_tokens_total", m, double(generationTokensOfFinished_));
  header(out, "volt:requests_rejected_total", "counter",
         "Requests turned away before the engine, by reason.");
  for (const char *reason : {"concurrency", "queue_full", "loading", "shutting_down"}) {
    auto it = rejected_.find(reason);
    sample(out, "volt:requests_rejected_total", m + ",reason=\"" + reason + "\"",
           it == rejected_.end() ? 0 : double(it->second));
  }
  header(out, "volt:http_requests_total", "counter", "HTTP responses by route, method, status.");
  for (const auto &[key, count] : http_) {
    const auto &[handler, method, status] = key;
    std::string labels = m;
    labels += ",handler=\"" + escapeLabel(handler) + "\"";
    labels += ",method=\"" + escapeLabel(method) + "\"";
    labels += ",status=\"" + status + "\"";
    sample(out, "volt:http_requests_total", labels, double(count));
  }

  header(out, "volt:time_to_first_token_seconds", "histogram",
         "Seconds from arrival to the first generated token.");
  ttft_.render(out, "volt:time_to_first_token_seconds", m);
  header(out, "volt:inter_token_latency_seconds", "histogram",
         "Seconds between consecutive tokens of a sequence.");
  interToken_.render(out, "volt:inter_token_latency_seconds", m);
  header(out, "volt:e2e_request_latency_seconds", "histogram",
         "Seconds from arrival to finish, per sequence.");
  e2e_.render(out, "volt:e2e_request_latency_seconds", m);
  header(out, "volt:request_queue_time_seconds", "histogram",
         "Seconds from arrival to first scheduling, per sequence.");
  queue_.render(out, "volt:request_queue_time_seconds", m);
  header(out, "volt:request_prompt_tokens", "histogram", "Prompt tokens per finished sequence.");
  requestPrompt_.render(out, "volt:request_prompt_tokens", m);
  header(out, "volt:request_generation_tokens", "histogram",
         "Generated tokens per finished sequence.");
  requestGeneration_.render(out, "volt:request_generation_tokens", m);
  return out;
}

} // namespace volt::server
