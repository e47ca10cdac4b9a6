//===- VoltBench.cpp - volt-bench: load an OpenAI-compatible server -------===//
//
// Sends streaming completion requests at fixed concurrency levels and
// reports what serving benchmarks report: time to first token (TTFT), time
// per output token after the first (TPOT), inter-token latency, request
// and token throughput. Prompts are exactly --prompt-tokens token ids
// (windows of a tokenized text, each request a different window, so that
// no two share a prefix); outputs are exactly --output-tokens tokens
// (ignore_eos). Works against volt-serve or any vLLM-compatible server.
//
//===----------------------------------------------------------------------===//
#include <CLI/CLI.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string apiKey, model;
  std::vector<int> concurrency = {1, 8, 32};
  int promptTokens = 512;
  int outputTokens = 128;
  /// Requests per concurrency level; 0: max(4 x concurrency, 16).
  int numRequests = 0;
  bool json = false;
};

/// One request's timings.
struct Sample {
  bool ok = false;
  std::string error;
  double ttft = 0, e2e = 0;
  std::vector<double> gaps; // between consecutive token events
  int outputTokens = 0;
};

httplib::Headers headers(const Options &o) {
  httplib::Headers h;
  if (!o.apiKey.empty())
    h.emplace("Authorization", "Bearer " + o.apiKey);
  return h;
}

/// Token ids of a long deterministic text, from the server's /tokenize.
std::vector<int> corpusTokens(const Options &o, size_t atLeast) {
  static const char *words[] = {"the",  "model",   "serves", "tokens", "across",  "many",
                                "GPUs", "quickly", "while",  "memory", "stays",   "within",
                                "its",  "budget",  "and",    "every",  "request", "streams"};
  std::mt19937 rng(42);
  std::vector<int> tokens;
  httplib::Client cli(o.host, o.port);
  cli.set_read_timeout(120);
  while (tokens.size() < atLeast) {
    std::string text;
    for (int i = 0; i < 4096; ++i)
      text += std::string(words[rng() % std::size(words)]) + (i % 13 == 12 ? ". " : " ");
    Json body = {{"prompt", text}, {"add_special_tokens", false}};
    if (!o.model.empty())
      body["model"] = o.model;
    auto res = cli.Post("/tokenize", headers(o), body.dump(), "application/json");
    if (!res || res->status != 200) {
      std::fprintf(stderr, "volt-bench: error: POST /tokenize failed (%s)\n",
                   res ? std::to_string(res->status).c_str()
                       : httplib::to_string(res.error()).c_str());
      std::exit(1);
    }
    Json parsed = Json::parse(res->body, nullptr, false);
    if (parsed.is_discarded() || !parsed["tokens"].is_array() || parsed["tokens"].empty()) {
      std::fprintf(stderr, "volt-bench: error: POST /tokenize gave no tokens\n");
      std::exit(1);
    }
    for (int t : parsed["tokens"])
      tokens.push_back(t);
  }
  return tokens;
}

Sample runOne(httplib::Client &cli, const Options &o, std::vector<int> prompt) {
  Sample s;
  Json body = {{"prompt", std::move(prompt)},
               {"max_tokens", o.outputTokens},
               {"ignore_eos", true},
               {"temperature", 0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (!o.model.empty())
    body["model"] = o.model;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = headers(o);
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  auto start = Clock::now();
  Clock::time_point last{};
  std::string buffer;
  bool done = false;
  req.content_receiver = [&](const char *data, size_t len, uint64_t, uint64_t) {
    buffer.append(data, len);
    auto now = Clock::now();
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0)
        continue;
      std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      Json chunk = Json::parse(payload, nullptr, false);
      if (chunk.is_discarded() || chunk.contains("error")) {
        s.error = chunk.is_discarded() ? "unparsable chunk"
                                       : chunk["error"]["message"].get<std::string>();
        return false;
      }
      if (chunk.contains("usage") && chunk["usage"].is_object())
        s.outputTokens = chunk["usage"]["completion_tokens"];
      if (!chunk["choices"].empty()) {
        if (last == Clock::time_point{})
          s.ttft = std::chrono::duration<double>(now - start).count();
        else
          s.gaps.push_back(std::chrono::duration<double>(now - last).count());
        last = now;
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  bool sent = cli.send(req, res, err);
  s.e2e = std::chrono::duration<double>(Clock::now() - start).count();
  if (!sent && s.error.empty())
    s.error = httplib::to_string(err);
  else if (res.status != 200 && s.error.empty())
    s.error = "status " + std::to_string(res.status) + ": " + res.body;
  s.ok = s.error.empty() && done;
  if (s.ok && s.outputTokens != o.outputTokens)
    s.error = "expected " + std::to_string(o.outputTokens) + " output tokens, got " +
              std::to_string(s.outputTokens);
  s.ok = s.error.empty() && done;
  return s;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  double rank = p / 100 * double(v.size() - 1);
  size_t lo = size_t(std::floor(rank)), hi = size_t(std::ceil(rank));
  return v[lo] + (v[hi] - v[lo]) * (rank - double(lo));
}

double mean(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

struct LevelResult {
  int concurrency = 0, requests = 0, failed = 0;
  double seconds = 0;
  long outputTokens = 0, promptTokens = 0;
  std::vector<double> ttft, tpot, itl, e2e;
  std::string firstError;
};

LevelResult runLevel(const Options &o, int concurrency, const std::vector<int> &corpus,
                     size_t &window) {
  LevelResult r;
  r.concurrency = concurrency;
  r.requests = o.numRequests > 0 ? o.numRequests : std::max(4 * concurrency, 16);
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < r.requests; ++i) {
    size_t start = (window++ * 97) % (corpus.size() - size_t(o.promptTokens));
    prompts.emplace_back(corpus.begin() + long(start),
                         corpus.begin() + long(start) + o.promptTokens);
  }
  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<Sample> samples;
  auto begin = Clock::now();
  std::vector<std::thread> workers;
  workers.reserve(size_t(concurrency));
  for (int w = 0; w < concurrency; ++w)
    workers.emplace_back([&] {
      httplib::Client cli(o.host, o.port);
      cli.set_keep_alive(true);
      // Without it the body waits for the ACK of the headers (Nagle against
      // delayed ACK: 40 ms per request).
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(3600);
      for (int i; (i = next.fetch_add(1)) < r.requests;) {
        Sample s = runOne(cli, o, prompts[size_t(i)]);
        std::lock_guard<std::mutex> lock(mu);
        samples.push_back(std::move(s));
      }
    });
  for (std::thread &t : workers)
    t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  for (const Sample &s : samples) {
    if (!s.ok) {
      ++r.failed;
      if (r.firstError.empty())
        r.firstError = s.error;
      continue;
    }
    r.outputTokens += s.outputTokens;
    r.promptTokens += o.promptTokens;
    r.ttft.push_back(s.ttft);
    r.e2e.push_back(s.e2e);
    if (s.outputTokens > 1)
      r.tpot.push_back((s.e2e - s.ttft) / double(s.outputTokens - 1));
    r.itl.insert(r.itl.end(), s.gaps.begin(), s.gaps.end());
  }
  return r;
}

int bench(int argc, char **argv) {
  CLI::App app{"volt-bench: TTFT, TPOT and throughput of an OpenAI-compatible server"};
  Options o;
  std::string url = "http://127.0.0.1:8000";
  app.add_option("--url", url, "server address")->capture_default_str();
  app.add_option("--api-key", o.apiKey, "Bearer key")->envname("VOLT_API_KEY");
  app.add_option("--model", o.model, "model name (default: the server's)");
  app.add_option("--concurrency", o.concurrency, "concurrency levels")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--prompt-tokens", o.promptTokens, "prompt length in tokens")
      ->capture_default_str();
  app.add_option("--output-tokens", o.outputTokens, "output length in tokens")
      ->capture_default_str();
  app.add_option("--num-requests", o.numRequests,
                 "requests per level (0: max(4 x concurrency, 16))")
      ->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object per level instead of a table");
  CLI11_PARSE(app, argc, argv);
  std::smatch m;
  if (!std::regex_match(url, m, std::regex(R"(http://([^:/]+)(?::(\d+))?/?)"))) {
    std::fprintf(stderr, "volt-bench: error: --url: expected http://host[:port], found '%s'\n",
                 url.c_str());
    return 1;
  }
  o.host = m[1];
  o.port = m[2].matched ? std::stoi(m[2]) : 80;
  if (o.promptTokens < 1 || o.outputTokens < 1) {
    std::fprintf(stderr, "volt-bench: error: --prompt-tokens and --output-tokens must be >= 1\n");
    return 1;
  }

  std::vector<int> corpus = corpusTokens(o, size_t(o.promptTokens) * 4 + 1024);
  size_t window = 0;
  // One request first, so that nothing measured pays for first-use costs.
  {
    Options warm = o;
    warm.numRequests = 1;
    runLevel(warm, 1, corpus, window);
  }
  if (!o.json)
    std::printf("%-5s %6s %8s %9s %9s %9s %9s %9s %9s %11s\n", "conc", "reqs", "req/s", "TTFT mean",
                "TTFT p50", "TTFT p99", "TPOT mean", "TPOT p99", "ITL p99", "out tok/s");
  int failures = 0;
  for (int c : o.concurrency) {
    LevelResult r = runLevel(o, c, corpus, window);
    failures += r.failed;
    double done = double(r.requests - r.failed);
    if (o.json) {
      Json j = {{"concurrency", c},
                {"requests", r.requests},
                {"failed", r.failed},
                {"prompt_tokens", o.promptTokens},
                {"output_tokens", o.outputTokens},
                {"seconds", r.seconds},
                {"requests_per_second", done / r.seconds},
                {"output_tokens_per_second", double(r.outputTokens) / r.seconds},
                {"ttft_mean_ms", mean(r.ttft) * 1e3},
                {"ttft_p50_ms", percentile(r.ttft, 50) * 1e3},
                {"ttft_p99_ms", percentile(r.ttft, 99) * 1e3},
                {"tpot_mean_ms", mean(r.tpot) * 1e3},
                {"tpot_p50_ms", percentile(r.tpot, 50) * 1e3},
                {"tpot_p99_ms", percentile(r.tpot, 99) * 1e3},
                {"itl_p50_ms", percentile(r.itl, 50) * 1e3},
                {"itl_p99_ms", percentile(r.itl, 99) * 1e3},
                {"e2e_mean_ms", mean(r.e2e) * 1e3}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%-5d %6d %8.2f %9.2f %9.2f %9.2f %9.3f %9.3f %9.3f %11.1f\n", c, r.requests,
                  done / r.seconds, mean(r.ttft) * 1e3, percentile(r.ttft, 50) * 1e3,
                  percentile(r.ttft, 99) * 1e3, mean(r.tpot) * 1e3, percentile(r.tpot, 99) * 1e3,
                  percentile(r.itl, 99) * 1e3, double(r.outputTokens) / r.seconds);
    }
    if (r.failed)
      std::fprintf(stderr, "volt-bench: %d of %d requests failed at concurrency %d; first: %s\n",
                   r.failed, r.requests, c, r.firstError.c_str());
  }
  if (!o.json)
    std::printf("(times in ms; %d-token prompts, %d-token outputs)\n", o.promptTokens,
                o.outputTokens);
  return failures ? 1 : 0;
}
} // namespace

int main(int argc, char **argv) {
  try {
    return bench(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "volt-bench: error: %s\n", e.what());
    return 1;
  }
}
