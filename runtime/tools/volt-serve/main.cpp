//===- volt-serve - serve a plan over an OpenAI-compatible HTTP API -------===//
//
// Parses flags, binds the port (answering 503 while the plan loads), loads
// the plan, serves until SIGTERM or SIGINT, then shuts down gracefully.
// The server itself is runtime/server.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/Server.h"
#include "runtime/server/ServerInfo.h"
#include "runtime/serving/Session.h"
#include "runtime/tools/CpuFlags.h"

#include <CLI/CLI.hpp>

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <iterator>
#include <sys/resource.h>

#include <cstdio>
#include <thread>

namespace {

int serve(int argc, char **argv) {
  // Request bodies up to --max-body-bytes are parsed on whichever worker
  // thread is free, each thread with its own malloc arena: with glibc's
  // adaptive threshold, freed multi-megabyte buffers stay in those arenas
  // and the resident size grows by tens of MB per large request. A fixed
  // threshold maps every buffer of 1 MiB or more and unmaps it when freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  CLI::App app{"volt-serve: serve a compiled plan over an OpenAI-compatible HTTP API"};
  std::string planPath, backend = "auto";
  int threads = 0, samplerThreads = 0;
  bool noVerify = false, noAccessLog = false, syntheticWeights = false;
  volt::server::ServerOptions o;
  app.add_option("plan", planPath, "plan file (weights.rankN.bin beside it)")->required();
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port to listen on (0: pick a free one and print it)")
      ->capture_default_str();
  app.add_option("--api-key", o.apiKey,
                 "require 'Authorization: Bearer <key>' (also read from VOLT_API_KEY)")
      ->envname("VOLT_API_KEY");
  app.add_flag("--auth-health-metrics", o.authHealthAndMetrics,
               "require the API key on /health and /metrics too (open by default)");
  app.add_flag("--strict-fields", o.strictFields,
               "refuse unknown request fields with 400 (default: ignore them with a warning, as "
               "vLLM does)");
  app.add_option("--allowed-origins", o.allowedOrigins,
                 "origins browser pages may call the API from (CORS), comma-separated, or '*' "
                 "for any (default: none)")
      ->delimiter(',');
  app.add_option("--served-model-name", o.servedModelNames,
                 "names the model answers to (default: the plan's served_model_name); the "
                 "first is the one responses report");
  app.add_option("--backend", backend, "auto, cpu or cuda")->capture_default_str();
  volt::tools::CpuFlags cpuFlags;
  cpuFlags.addTo(app);
  app.add_option("--threads", threads, "CPU threads for the cpu backend (0: all)")
      ->capture_default_str();
  app.add_option("--sampler-threads", samplerThreads,
                 "threads that sample a step's sequences (0: one per core, at most 8)")
      ->capture_default_str();
  app.add_option("--max-body-bytes", o.maxBodyBytes, "largest request body (413 beyond)")
      ->capture_default_str();
  app.add_option("--max-concurrent-requests", o.maxConcurrentRequests,
                 "generation requests served at once (429 beyond)")
      ->capture_default_str();
  app.add_option("--max-queue-len", o.maxQueueLen,
                 "sequences waiting for the engine beyond which requests get 503")
      ->capture_default_str();
  app.add_option("--request-timeout", o.requestTimeoutSeconds,
                 "seconds a generation request may take (0: no limit)")
      ->capture_default_str();
  app.add_option("--shutdown-grace-period", o.shutdownGraceSeconds,
                 "seconds requests in flight may finish after SIGTERM/SIGINT")
      ->capture_default_str();
  app.add_option("--keep-alive-timeout", o.keepAliveSeconds,
                 "idle seconds before a keep-alive connection is closed")
      ->capture_default_str();
  app.add_option("--http-threads", o.httpThreads,
                 "threads that run requests once read (idle and slow connections take none; "
                 "0: max-concurrent-requests + 64)")
      ->capture_default_str();
  app.add_option("--max-header-bytes", o.maxHeaderBytes,
                 "largest request line and headers (431 beyond)")
      ->capture_default_str();
  app.add_option("--max-headers", o.maxHeaders, "most header fields in a request (431 beyond)")
      ->capture_default_str();
  app.add_option("--header-timeout", o.headerTimeoutSeconds,
                 "seconds for a request's line and headers from its first byte (408 beyond)")
      ->capture_default_str();
  app.add_option("--body-timeout", o.bodyTimeoutSeconds,
                 "seconds for a request's body after its headers (408 beyond)")
      ->capture_default_str();
  app.add_option("--write-timeout", o.writeTimeoutSeconds,
                 "seconds a client may take to accept a write before its connection is closed")
      ->capture_default_str();
  app.add_option("--max-connections", o.maxConnections,
                 "open connections (503 and close beyond; 0: no limit)")
      ->capture_default_str();
  app.add_option("--max-connections-per-client", o.maxConnectionsPerClient,
                 "open connections from one client address (503 and close beyond; 0: no limit)")
      ->capture_default_str();
  app.add_flag("--no-access-log", noAccessLog, "do not log a line per request");
  app.add_flag("--no-verify-checksums", noVerify,
               "skip reading the weight packs to check their checksums");
  app.add_flag("--synthetic-weights", syntheticWeights,
               "benchmarking only: load the plan without its weight packs and fill the GPU's "
               "weight memory with pseudo-random values (cuda backend; the output is "
               "meaningless text)");
  app.add_option("--metrics-prefix", o.metricsPrefix,
                 "prefix of the /metrics families: volt (volt:num_requests_running) or vllm "
                 "(vLLM's own names, so that dashboards built for vLLM work unchanged)")
      ->check(CLI::IsMember({"volt", "vllm"}))
      ->capture_default_str();
  std::string generationConfig = "auto";
  app.add_option("--generation-config", generationConfig,
                 "sampling defaults for fields a request leaves unset: auto (the model's "
                 "generation_config.json, carried by the plan), vllm (vLLM's own defaults), "
                 "or a folder holding a generation_config.json")
      ->capture_default_str();
  std::string reasoningParser, toolCallParser;
  app.add_option("--reasoning-parser", reasoningParser,
                 "return what a chat model writes inside <think>...</think> as "
                 "reasoning_content: qwen3 (Qwen3, Qwen3.5, Qwen3.6, Qwen3-Next)")
      ->check(CLI::IsMember({"qwen3"}));
  app.add_option("--tool-call-parser", toolCallParser,
                 "read tool calls from chat outputs: hermes (<tool_call>{json}</tool_call>: "
                 "Qwen3, Qwen2.5) or qwen3_coder (<function=...><parameter=...>: Qwen3.5, "
                 "Qwen3.6, Qwen3-Coder)")
      ->check(CLI::IsMember({"hermes", "qwen3_coder"}));
  app.add_flag("--enable-auto-tool-choice", o.enableAutoToolChoice,
               "let tool_choice auto (the default when a request has tools) read tool calls "
               "from the output; needs --tool-call-parser");
  CLI11_PARSE(app, argc, argv);
  o.planPath = planPath;
  {
    // Each connection is a descriptor: the usual soft limit of 1024 would
    // refuse connections long before --max-connections.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max;
      setrlimit(RLIMIT_NOFILE, &files);
    }
  }
  if (!reasoningParser.empty())
    o.reasoningParser = *volt::server::reasoningParserByName(reasoningParser);
  if (!toolCallParser.empty())
    o.toolCallParser = *volt::server::toolCallParserByName(toolCallParser);
  if (o.enableAutoToolChoice && o.toolCallParser == volt::server::ToolCallParser::None) {
    std::fprintf(stderr, "volt-serve: error: --enable-auto-tool-choice needs --tool-call-parser "
                         "(hermes or qwen3_coder)\n");
    return 1;
  }
  // A folder's generation_config.json is read before anything is loaded, so
  // that a bad one fails at once.
  std::optional<volt::engine::GenerationDefaults> folderDefaults;
  if (generationConfig != "auto" && generationConfig != "vllm") {
    const std::filesystem::path file =
        std::filesystem::path(generationConfig) / "generation_config.json";
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr,
                   "volt-serve: error: --generation-config: %s: cannot be read (expected auto, "
                   "vllm or a folder with a generation_config.json)\n",
                   file.string().c_str());
      return 1;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = volt::engine::parseGenerationDefaults(text, file.string());
    if (!parsed) {
      std::fprintf(stderr, "volt-serve: error: --generation-config: %s\n",
                   parsed.message().c_str());
      return 1;
    }
    folderDefaults = *parsed;
  }
  o.accessLog = noAccessLog ? nullptr : stderr;

  // Signals are taken by one thread with sigwait, so every other thread
  // (HTTP workers, the engine) must have them blocked: block them before
  // any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1); // ends the signal thread at exit
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = volt::server::Server::create(o);
  if (!server) {
    std::fprintf(stderr, "volt-serve: error: %s\n", server.message().c_str());
    return 1;
  }
  volt::server::Server &srv = **server;
  std::fprintf(stderr, "volt-serve: listening on http://%s:%d (loading %s)\n", srv.host().c_str(),
               srv.port(), planPath.c_str());

  std::thread signalThread([&srv, &signals, grace = o.shutdownGraceSeconds] {
    for (int received = 0;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0 || sig == SIGUSR1)
        return;
      if (received++ == 0)
        std::fprintf(stderr,
                     "volt-serve: %s: shutting down (no new connections; requests in flight "
                     "have %g s to finish; signal again to cancel them now)\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT", grace);
      else
        std::fprintf(stderr, "volt-serve: cancelling the requests in flight\n");
      srv.beginShutdown();
    }
  });
  auto stopSignalThread = [&] {
    pthread_kill(signalThread.native_handle(), SIGUSR1);
    signalThread.join();
  };

  volt::serving::SessionOptions sessionOptions;
  sessionOptions.backend = backend;
  sessionOptions.threads = threads;
  cpuFlags.applyTo(sessionOptions);
  sessionOptions.samplerThreads = samplerThreads;
  sessionOptions.verifyChecksums = !noVerify;
  sessionOptions.syntheticWeights = syntheticWeights;
  if (syntheticWeights)
    std::fprintf(stderr, "volt-serve: %s\n", volt::serving::kSyntheticWeightsNotice);
  auto session = volt::serving::Session::open(planPath, sessionOptions);
  if (!session) {
    std::fprintf(stderr, "volt-serve: error: %s\n", session.message().c_str());
    srv.beginShutdown();
    srv.wait();
    stopSignalThread();
    return 1;
  }
  std::fprintf(stderr, "volt-serve: plan %s\n%s%s", planPath.c_str(),
               volt::server::describePlan(**session).c_str(),
               volt::server::describeLimits(o).c_str());
  volt::engine::GenerationDefaults defaults;
  if (folderDefaults)
    defaults = *folderDefaults;
  else if (generationConfig == "auto")
    defaults = (*session)->generationDefaults();
  if (!defaults.empty())
    std::fprintf(stderr,
                 "volt-serve: default sampling parameters from %s: %s (a request that sets a "
                 "field overrides it; --generation-config vllm turns this off)\n",
                 folderDefaults ? (generationConfig + "/generation_config.json").c_str()
                                : "the model's generation_config.json",
                 defaults.describe().c_str());
  srv.attach(**session, defaults);
  std::vector<std::string> names = srv.servedModelNames();
  if (!names.empty())
    std::fprintf(stderr, "volt-serve: ready: serving '%s' at http://%s:%d/v1\n",
                 names.front().c_str(), srv.host().c_str(), srv.port());
  srv.wait();
  stopSignalThread();
  server->reset();
  std::fprintf(stderr, "volt-serve: stopped\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return serve(argc, argv);
  } catch (const std::exception &e) {
    // The libraries return errors as values; this is the last resort for
    // what they let through (allocation failure, a flag parser error).
    std::fprintf(stderr, "volt-serve: error: %s\n", e.what());
    return 1;
  }
}
