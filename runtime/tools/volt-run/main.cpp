//===- volt-run - generate from a plan ------------------------------------===//
//
// Loads a plan, generates for one prompt, prints the text as it streams and
// then the timings. Parses flags and calls runtime/serving.
//
//===----------------------------------------------------------------------===//
#include "runtime/executor/CpuBackend.h"
#include "runtime/serving/Generate.h"
#include "runtime/serving/Session.h"
#include "runtime/tools/CpuFlags.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
  CLI::App app{"volt-run: generate text from a compiled plan"};
  std::string planPath, prompt, promptIds, chat, backend = "auto";
  int maxTokens = 64, threads = 0, topK = 0, warmup = 0;
  float temperature = 0.0f, topP = 1.0f, minP = 0.0f;
  uint64_t seed = 0;
  bool ignoreEos = false, printIds = false, noVerify = false, syntheticWeights = false;
  app.add_option("plan", planPath, "plan file (weights.rankN.bin beside it)")->required();
  auto *p = app.add_option("--prompt", prompt, "prompt text (tokenized without special tokens)");
  auto *ids = app.add_option("--prompt-ids", promptIds, "prompt token ids, comma-separated");
  auto *c =
      app.add_option("--chat", chat, "a user message, rendered with the model's chat template");
  p->excludes(ids)->excludes(c);
  ids->excludes(c);
  app.add_option("--max-tokens", maxTokens, "tokens to generate at most")->capture_default_str();
  app.add_option("--temperature", temperature, "0: greedy")->capture_default_str();
  app.add_option("--top-p", topP)->capture_default_str();
  app.add_option("--top-k", topK, "0: off")->capture_default_str();
  app.add_option("--min-p", minP)->capture_default_str();
  app.add_option("--seed", seed, "sampling seed")->capture_default_str();
  app.add_flag("--ignore-eos", ignoreEos, "keep generating past end-of-sequence tokens");
  app.add_option("--backend", backend, "auto, cpu or cuda")->capture_default_str();
  volt::tools::CpuFlags cpuFlags;
  cpuFlags.addTo(app);
  app.add_option("--threads", threads, "CPU threads for the cpu backend (0: all)");
  app.add_flag("--print-ids", printIds, "also print the generated token ids");
  app.add_flag("--no-verify-checksums", noVerify,
               "skip reading the weight packs to check their checksums");
  app.add_flag("--synthetic-weights", syntheticWeights,
               "benchmarking only: load the plan without its weight packs and fill the GPU's "
               "weight memory with pseudo-random values (cuda backend; the output is "
               "meaningless text)");
  app.add_option("--warmup", warmup,
                 "benchmarking: first run this many throwaway generations of one token on the "
                 "prompt reversed (no prefix of the prompt is cached), so that the timed one "
                 "runs warm")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  bool profileOps = false;
  app.add_flag("--profile-ops", profileOps,
               "cpu backend: print the time rank 0 spent in each op kind, for decode steps "
               "(one token) and the others");
  CLI11_PARSE(app, argc, argv);

  volt::serving::SessionOptions options;
  options.backend = backend;
  options.threads = threads;
  cpuFlags.applyTo(options);
  options.verifyChecksums = !noVerify;
  options.syntheticWeights = syntheticWeights;
  if (syntheticWeights)
    std::fprintf(stderr, "volt-run: %s\n", volt::serving::kSyntheticWeightsNotice);
  auto session = volt::serving::Session::open(planPath, options);
  if (!session) {
    std::fprintf(stderr, "volt-run: error: %s\n", session.message().c_str());
    return 1;
  }
  volt::serving::Session &s = **session;
  std::fprintf(stderr, "volt-run: %s on the %s backend (%s), loaded in %.3f s\n",
               s.servedModelName().c_str(), s.backendName().c_str(), s.backendReason().c_str(),
               s.loadSeconds());

  // --profile-ops: the time between consecutive ops of a step on rank 0 is
  // the later op's (the first op of each step has no start and is not
  // counted).
  struct OpTime {
    double seconds = 0;
    long calls = 0;
  };
  std::map<std::pair<bool, std::string>, OpTime> opTimes;
  using Clock = std::chrono::steady_clock;
  Clock::time_point lastOp;
  if (profileOps) {
    auto *cpu = dynamic_cast<volt::executor::CpuBackend *>(&s.backend());
    if (!cpu) {
      std::fprintf(stderr, "volt-run: error: --profile-ops needs the cpu backend\n");
      return 1;
    }
    cpu->setOpObserver([&](const volt::executor::OpObservation &o) {
      if (o.rank != 0)
        return;
      Clock::time_point now = Clock::now();
      if (o.opIndex > 0) {
        // The kind and the op's name without its layer ("Linear
        // self_attn.o_proj"), so that the layers' ops add up.
        std::string name(o.name);
        if (name.rfind("model.layers.", 0) == 0) {
          size_t dot = name.find('.', 13);
          name = dot == std::string::npos ? "" : name.substr(dot + 1);
        }
        OpTime &t = opTimes[{o.numTokens == 1,
                             std::string(volt::plan::EnumNameOpKind(o.kind)) +
                                 (name.empty() ? "" : " " + name)}];
        t.seconds += std::chrono::duration<double>(now - lastOp).count();
        ++t.calls;
      }
      lastOp = now;
    });
  }

  std::vector<int32_t> tokens;
  if (!promptIds.empty()) {
    std::stringstream in(promptIds);
    std::string item;
    while (std::getline(in, item, ',')) {
      try {
        tokens.push_back(std::stoi(item));
      } catch (...) {
        std::fprintf(stderr, "volt-run: error: --prompt-ids: '%s' is not a token id\n",
                     item.c_str());
        return 1;
      }
    }
  } else {
    std::string text = prompt;
    if (!chat.empty()) {
      nlohmann::ordered_json messages = {{{"role", "user"}, {"content", chat}}};
      auto rendered = s.applyChatTemplate(messages, true);
      if (!rendered) {
        std::fprintf(stderr, "volt-run: error: %s\n", rendered.message().c_str());
        return 1;
      }
      text = *rendered;
    }
    tokens = s.tokenizer().encode(text, false);
  }
  if (tokens.empty()) {
    std::fprintf(stderr, "volt-run: error: the prompt is empty (give --prompt, --prompt-ids or "
                         "--chat)\n");
    return 1;
  }

  volt::engine::SamplingParams sampling;
  sampling.temperature = temperature;
  sampling.topP = topP;
  sampling.topK = topK;
  sampling.minP = minP;
  sampling.seed = seed;
  sampling.maxTokens = maxTokens;
  sampling.ignoreEos = ignoreEos;
  if (warmup > 0) {
    // Buffers first touched, scratch grown, caches filled: what a server
    // has done long before, and what llama-bench's and the HF script's
    // warm-up runs do.
    std::vector<int32_t> reversed(tokens.rbegin(), tokens.rend());
    volt::engine::SamplingParams once = sampling;
    once.maxTokens = 1;
    for (int i = 0; i < warmup; ++i) {
      auto w = volt::serving::generate(s, reversed, once, [](const std::string &) {});
      if (!w) {
        std::fprintf(stderr, "volt-run: error: warm-up: %s\n", w.message().c_str());
        return 1;
      }
    }
    opTimes.clear();
  }
  auto generation = volt::serving::generate(
      s, tokens, sampling, [](const std::string &text) { std::cout << text << std::flush; });
  std::cout << std::endl;
  if (!generation) {
    std::fprintf(stderr, "volt-run: error: %s\n", generation.message().c_str());
    return 1;
  }
  if (printIds) {
    std::cout << "ids:";
    for (int32_t t : generation->tokens)
      std::cout << " " << t;
    std::cout << "\n";
  }
  std::fprintf(stderr,
               "volt-run: %zu prompt tokens, %zu generated (%s); time to first token %.1f ms, "
               "%.1f tokens/s after it, %.3f s in all\n",
               tokens.size(), generation->tokens.size(), generation->finishReason.c_str(),
               generation->timeToFirstTokenSeconds * 1e3, generation->decodeTokensPerSecond,
               generation->totalSeconds);
  if (profileOps) {
    for (bool decode : {true, false}) {
      std::vector<std::pair<std::string, OpTime>> rows;
      double total = 0;
      for (const auto &[key, t] : opTimes)
        if (key.first == decode) {
          rows.emplace_back(key.second, t);
          total += t.seconds;
        }
      if (rows.empty())
        continue;
      std::sort(rows.begin(), rows.end(),
                [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
      std::fprintf(stderr, "volt-run: ops of the %s steps (rank 0): %.1f ms in all\n",
                   decode ? "decode (one-token)" : "other", total * 1e3);
      for (const auto &[kind, t] : rows)
        std::fprintf(stderr, "volt-run:   %-44s %7ld calls %10.2f ms %5.1f %%\n", kind.c_str(),
                     t.calls, t.seconds * 1e3, 100.0 * t.seconds / total);
    }
  }
  if (s.engine().config().numSpeculativeTokens > 0) {
    const volt::engine::SpecDecodeStats sd = s.engine().stats().specDecode;
    std::fprintf(stderr,
                 "volt-run: speculative: %llu verify rounds, %llu of %llu draft tokens accepted, "
                 "mean acceptance length %.2f\n",
                 static_cast<unsigned long long>(sd.numDrafts),
                 static_cast<unsigned long long>(sd.numAcceptedTokens),
                 static_cast<unsigned long long>(sd.numDraftTokens), sd.meanAcceptedLength());
  }
  return 0;
}
