//===- Metrics.cpp --------------------------------------------------------===//
#include "runtime/server/Metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

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
  out += labels.empty() ? name + " " : name + "{" + labels + "} ";
  out += formatNumber(v) + "\n";
}

/// The process_* metrics of Prometheus client libraries, from /proc.
void renderProcessMetrics(std::string &out) {
  // /proc/self/stat: utime and stime (clock ticks) are fields 14 and 15,
  // starttime (ticks after boot) field 22, vsize (bytes) 23, rss (pages) 24.
  std::ifstream statFile("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(statFile)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')'); // the command name may hold spaces
  if (close == std::string::npos)
    return;
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields),
                             std::istream_iterator<std::string>()};
  // f[0] is field 3 (state).
  auto field = [&](size_t n) { return n - 3 < f.size() ? std::strtod(f[n - 3].c_str(), nullptr) : 0; };
  const double ticks = double(sysconf(_SC_CLK_TCK));
  const double page = double(sysconf(_SC_PAGESIZE));
  double bootTime = 0;
  std::ifstream procStat("/proc/stat");
  for (std::string line; std::getline(procStat, line);)
    if (line.rfind("btime ", 0) == 0)
      bootTime = std::strtod(line.c_str() + 6, nullptr);
  int64_t fds = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  struct rlimit limit {};
  getrlimit(RLIMIT_NOFILE, &limit);

  header(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time in seconds.");
  sample(out, "process_cpu_seconds_total", "", (field(14) + field(15)) / ticks);
  header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  sample(out, "process_resident_memory_bytes", "", field(24) * page);
  header(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  sample(out, "process_virtual_memory_bytes", "", field(23));
  header(out, "process_start_time_seconds", "gauge",
         "Start time of the process since the Unix epoch in seconds.");
  sample(out, "process_start_time_seconds", "", bootTime + field(22) / ticks);
  header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
  sample(out, "process_open_fds", "", double(fds));
  header(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
  sample(out, "process_max_fds", "",
         limit.rlim_cur == RLIM_INFINITY ? -1.0 : double(limit.rlim_cur));
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

Metrics::Metrics(const std::string &modelName, const std::string &prefix)
    : prefix_(prefix), modelLabel_("model_name=\"" + escapeLabel(modelName) + "\""),
      ttft_(kTtftBuckets), interToken_(kInterTokenBuckets), e2e_(kRequestLatencyBuckets),
      queue_(kRequestLatencyBuckets), prefill_(kRequestLatencyBuckets),
      decode_(kRequestLatencyBuckets), inference_(kRequestLatencyBuckets),
      timePerOutputToken_(kInterTokenBuckets), requestPrompt_(tokenCountBuckets(1 << 20)),
      requestGeneration_(tokenCountBuckets(1 << 20)) {}

std::string Metrics::name(const char *family) const { return prefix_ + family; }

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
  const engine::Clock::time_point unset{};
  if (times.firstScheduled != unset) {
    queue_.observe(seconds(times.arrival, times.firstScheduled));
    inference_.observe(seconds(times.firstScheduled, times.finished));
    if (times.firstToken != unset)
      prefill_.observe(seconds(times.firstScheduled, times.firstToken));
  }
  if (times.firstToken != unset) {
    decode_.observe(seconds(times.firstToken, times.finished));
    if (generationTokens > 1)
      timePerOutputToken_.observe(seconds(times.firstToken, times.finished) /
                                  (generationTokens - 1));
  }
  requestPrompt_.observe(promptTokens);
  requestGeneration_.observe(generationTokens);
}

std::string Metrics::render(const engine::EngineStats *stats, const EngineInfo &info) const {
  std::string out;
  std::unique_lock<std::mutex> lock(mu_);
  const std::string m = modelLabel_;
  lock.unlock();
  engine::EngineStats s = stats ? *stats : engine::EngineStats{};

  header(out, name("num_requests_running"), "gauge", "Sequences in the engine's running batch.");
  sample(out, name("num_requests_running"), m, s.numRunning);
  header(out, name("num_requests_waiting"), "gauge", "Sequences waiting to be scheduled.");
  sample(out, name("num_requests_waiting"), m, s.numWaiting);
  header(out, name("kv_cache_usage_perc"), "gauge",
         "Fraction of KV-cache blocks held by sequences (1 = full).");
  sample(out, name("kv_cache_usage_perc"), m, s.kvCache.usage);
  // vLLM's name for it before V1, which dashboards still query.
  header(out, name("gpu_cache_usage_perc"), "gauge",
         "Fraction of KV-cache blocks held by sequences (kv_cache_usage_perc's former name).");
  sample(out, name("gpu_cache_usage_perc"), m, s.kvCache.usage);
  header(out, name("kv_cache_used_blocks"), "gauge", "KV-cache blocks held by sequences.");
  sample(out, name("kv_cache_used_blocks"), m, s.kvCache.usedBlocks);
  header(out, name("cache_config_info"), "gauge", "KV-cache configuration (value is 1).");
  sample(out, name("cache_config_info"),
         m + ",block_size=\"" + std::to_string(info.blockSize) + "\",num_gpu_blocks=\"" +
             std::to_string(info.numKvBlocks) + "\"",
         1);
  header(out, name("num_preemptions_total"), "counter", "Sequences preempted (recomputed).");
  sample(out, name("num_preemptions_total"), m, double(s.numPreemptions));
  header(out, name("prompt_tokens_total"), "counter",
         "Prompt tokens of requests, counted when first scheduled.");
  sample(out, name("prompt_tokens_total"), m, double(s.promptTokens));
  header(out, name("generation_tokens_total"), "counter", "Generated tokens.");
  sample(out, name("generation_tokens_total"), m, double(s.generationTokens));
  header(out, name("prefix_cache_queries_total"), "counter",
         "Prompt tokens looked up in the prefix cache.");
  sample(out, name("prefix_cache_queries_total"), m, double(s.prefixCacheQueries));
  header(out, name("prefix_cache_hits_total"), "counter",
         "Prompt tokens found in the prefix cache.");
  sample(out, name("prefix_cache_hits_total"), m, double(s.prefixCacheHits));
  header(out, name("sampled_from_candidates_total"), "counter",
         "Tokens sampled from the backend's candidates (no logits row crossed to the host).");
  sample(out, name("sampled_from_candidates_total"), m, double(s.sampledFromCandidates));
  header(out, name("logits_rows_fetched_total"), "counter",
         "Tokens whose logits row was fetched because the candidates did not decide them.");
  sample(out, name("logits_rows_fetched_total"), m, double(s.rowsFetched));
  // vLLM's spec_decode counters; zero when the plan does not speculate.
  header(out, name("spec_decode_num_drafts_total"), "counter",
         "Speculative verify rounds (a sequence's drafts checked in one step).");
  sample(out, name("spec_decode_num_drafts_total"), m, double(s.specDecode.numDrafts));
  header(out, name("spec_decode_num_draft_tokens_total"), "counter", "Draft tokens verified.");
  sample(out, name("spec_decode_num_draft_tokens_total"), m, double(s.specDecode.numDraftTokens));
  header(out, name("spec_decode_num_accepted_tokens_total"), "counter",
         "Draft tokens the target's sampling agreed with (kept).");
  sample(out, name("spec_decode_num_accepted_tokens_total"), m,
         double(s.specDecode.numAcceptedTokens));
  header(out, name("spec_decode_num_accepted_tokens_per_pos_total"), "counter",
         "Verify rounds whose draft at this position was kept.");
  for (int32_t j = 0; j < info.numSpeculativeTokens && j < engine::kMaxSpeculativeTokens; ++j)
    sample(out, name("spec_decode_num_accepted_tokens_per_pos_total"),
           m + ",position=\"" + std::to_string(j) + "\"",
           double(s.specDecode.acceptedPerPosition[size_t(j)]));

  lock.lock();
  header(out, name("request_success_total"), "counter",
         "Finished sequences (one per choice) by finish reason.");
  for (const char *reason : {"stop", "length", "abort"}) {
    auto it = finished_.find(reason);
    sample(out, name("request_success_total"), m + ",finished_reason=\"" + reason + "\"",
           it == finished_.end() ? 0 : double(it->second));
  }
  header(out, name("request_prompt_tokens_total"), "counter",
         "Prompt tokens of finished sequences.");
  sample(out, name("request_prompt_tokens_total"), m, double(promptTokensOfFinished_));
  header(out, name("request_generation_tokens_total"), "counter",
         "Generated tokens of finished sequences.");
  sample(out, name("request_generation_tokens_total"), m, double(generationTokensOfFinished_));
  header(out, name("requests_rejected_total"), "counter",
         "Requests turned away before the engine, by reason.");
  for (const char *reason : {"concurrency", "queue_full", "loading", "shutting_down"}) {
    auto it = rejected_.find(reason);
    sample(out, name("requests_rejected_total"), m + ",reason=\"" + reason + "\"",
           it == rejected_.end() ? 0 : double(it->second));
  }
  header(out, name("http_requests_total"), "counter", "HTTP responses by route, method, status.");
  for (const auto &[key, count] : http_) {
    const auto &[handler, method, status] = key;
    std::string labels = m;
    labels += ",handler=\"" + escapeLabel(handler) + "\"";
    labels += ",method=\"" + escapeLabel(method) + "\"";
    labels += ",status=\"" + status + "\"";
    sample(out, name("http_requests_total"), labels, double(count));
  }

  header(out, name("time_to_first_token_seconds"), "histogram",
         "Seconds from arrival to the first generated token.");
  ttft_.render(out, name("time_to_first_token_seconds"), m);
  header(out, name("inter_token_latency_seconds"), "histogram",
         "Seconds between consecutive tokens of a sequence.");
  interToken_.render(out, name("inter_token_latency_seconds"), m);
  // The same histogram under vLLM's former name for it.
  header(out, name("time_per_output_token_seconds"), "histogram",
         "Seconds between consecutive tokens (inter_token_latency_seconds' former name).");
  interToken_.render(out, name("time_per_output_token_seconds"), m);
  header(out, name("e2e_request_latency_seconds"), "histogram",
         "Seconds from arrival to finish, per sequence.");
  e2e_.render(out, name("e2e_request_latency_seconds"), m);
  header(out, name("request_queue_time_seconds"), "histogram",
         "Seconds from arrival to first scheduling, per sequence.");
  queue_.render(out, name("request_queue_time_seconds"), m);
  header(out, name("request_prefill_time_seconds"), "histogram",
         "Seconds from first scheduling to the first token, per sequence.");
  prefill_.render(out, name("request_prefill_time_seconds"), m);
  header(out, name("request_decode_time_seconds"), "histogram",
         "Seconds from the first token to finish, per sequence.");
  decode_.render(out, name("request_decode_time_seconds"), m);
  header(out, name("request_inference_time_seconds"), "histogram",
         "Seconds from first scheduling to finish, per sequence.");
  inference_.render(out, name("request_inference_time_seconds"), m);
  header(out, name("request_time_per_output_token_seconds"), "histogram",
         "Per sequence: seconds after the first token per further token (its TPOT).");
  timePerOutputToken_.render(out, name("request_time_per_output_token_seconds"), m);
  header(out, name("request_prompt_tokens"), "histogram", "Prompt tokens per finished sequence.");
  requestPrompt_.render(out, name("request_prompt_tokens"), m);
  header(out, name("request_generation_tokens"), "histogram",
         "Generated tokens per finished sequence.");
  requestGeneration_.render(out, name("request_generation_tokens"), m);
  lock.unlock();
  renderProcessMetrics(out);
  return out;
}


} // namespace volt::server
