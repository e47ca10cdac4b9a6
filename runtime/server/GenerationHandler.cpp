//===- GenerationHandler.cpp - /v1/completions and /v1/chat/completions ---===//
//
// Parse, build the prompts (chat template, tokenizer), check them against
// the model's limits, admit (concurrency, queue), submit one engine request
// per choice, then either collect the outputs into one JSON response or
// stream them as server-sent events. While waiting, the HTTP thread looks
// at its connection: a client that has gone away gets its sequences
// cancelled, which frees their KV-cache blocks.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/ServerImpl.h"

#include <ctime>

namespace volt::server {
namespace {

using Json = nlohmann::ordered_json;

struct PreparedPrompts {
  std::vector<std::vector<int32_t>> tokens;
  /// Completions' echo: the text of each prompt.
  std::vector<std::string> echo;
};

/// Checks one prompt against max_model_len (the engine checks again, but
/// these messages say what to change).
MaybeError checkLength(const std::vector<int32_t> &prompt, const GenerationOptions &o,
                       int32_t maxModelLen, const char *promptField) {
  int64_t p = int64_t(prompt.size());
  if (p == 0)
    return badRequest(promptField,
                      std::string(promptField) + ": expected at least one token, found none");
  if (p >= maxModelLen) {
    ApiError e = badRequest(promptField, std::string(promptField) + ": " + std::to_string(p) +
                                             " tokens, but this model's maximum context length "
                                             "is " +
                                             std::to_string(maxModelLen) +
                                             " tokens (prompt and output together)");
    e.code = "context_length_exceeded";
    return e;
  }
  if (o.sampling.maxTokens && p + *o.sampling.maxTokens > maxModelLen) {
    ApiError e =
        badRequest("max_tokens", "max_tokens: this model's maximum context length is " +
                                     std::to_string(maxModelLen) + " tokens; the prompt has " +
                                     std::to_string(p) + " and max_tokens asks for " +
                                     std::to_string(*o.sampling.maxTokens) + " more (" +
                                     std::to_string(p + *o.sampling.maxTokens) +
                                     "); lower max_tokens or shorten the prompt");
    e.code = "context_length_exceeded";
    return e;
  }
  return std::nullopt;
}

void truncatePrompt(std::vector<int32_t> &tokens, const GenerationOptions &o) {
  if (o.truncatePromptTokens && int64_t(tokens.size()) > *o.truncatePromptTokens)
    tokens.erase(tokens.begin(), tokens.end() - *o.truncatePromptTokens);
}

/// The state of one streaming response, owned by the response's stream
/// provider; its destructor is where the request leaves the server.
struct StreamState {
  Server::Impl *server = nullptr;
  std::unique_ptr<GenerationRun> run;
  std::unique_ptr<ResponseBuilder> builder;
  /// The request's connection (clientGone()), without its body.
  http::Request peer;
  engine::Clock::time_point start, deadline;
  bool started = false;
  bool sawAbort = false;
  std::string engineError;

  ~StreamState() {
    if (run) {
      server->untrackRun(run.get());
      run->cancel();
    }
    server->activeGenerations.fetch_sub(1);
  }
};

void noteFirstToken(const std::vector<ChoiceEvent> &events, engine::Clock::time_point start) {
  AccessRecord &r = currentRequest().record;
  if (r.ttftSeconds)
    return;
  for (const ChoiceEvent &e : events)
    if (e.output.token) {
      r.ttftSeconds = std::chrono::duration<double>(engine::Clock::now() - start).count();
      return;
    }
}

void noteAborts(const std::vector<ChoiceEvent> &events, bool &sawAbort, std::string &error) {
  for (const ChoiceEvent &e : events)
    if (e.output.finished && e.output.finishReason == engine::FinishReason::Abort) {
      sawAbort = true;
      if (error.empty())
        error = e.output.error;
    }
}

/// The error for a run that ended with aborted sequences.
ApiError abortError(const std::string &engineError) {
  if (!engineError.empty())
    return serverError(500, "engine_error", "generation failed: " + engineError);
  ApiError e = serverError(503, "shutting_down",
                           "the request was cancelled because the server is shutting down");
  e.retryAfterSeconds = 1;
  return e;
}

ApiError timeoutError(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return serverError(504, "timeout",
                     std::string("the request did not finish within the server's request "
                                 "timeout (") +
                         buf + " s, --request-timeout)");
}

void finishRecord(const ResponseBuilder &b) {
  AccessRecord &r = currentRequest().record;
  r.promptTokens = b.promptTokens();
  r.completionTokens = b.completionTokens();
  r.finishReasons = b.finishReasons();
}

/// One call of the content provider: waits for outputs, writes them.
/// Returns false when the client is gone (the layer then drops the
/// connection).
bool provideStream(StreamState &s, http::StreamSink &sink) {
  AccessRecord &record = currentRequest().record;
  auto clientGone = [&] {
    s.run->cancel();
    record.clientDisconnected = true;
    record.status = 499;
    finishRecord(*s.builder);
    return false;
  };
  auto write = [&](const std::string &data) {
    return data.empty() || sink.write(data.data(), data.size());
  };
  if (!s.started) {
    s.started = true;
    if (!write(s.builder->streamStart()))
      return clientGone();
  }
  for (;;) {
    std::vector<ChoiceEvent> events = s.run->take(kPollInterval);
    noteFirstToken(events, s.start);
    noteAborts(events, s.sawAbort, s.engineError);
    std::string data = s.builder->streamEvents(events);
    if (s.run->done()) {
      if (s.sawAbort) {
        ApiError e = abortError(s.engineError);
        record.error = e.message;
        data += ResponseBuilder::streamError(e);
        data += "data: [DONE]\n\n";
      } else {
        data += s.builder->streamEnd();
      }
      finishRecord(*s.builder);
      if (!write(data))
        return clientGone();
      sink.done();
      return true;
    }
    // The deadline holds for a request that is still streaming too.
    if (s.deadline != engine::Clock::time_point{} && engine::Clock::now() >= s.deadline) {
      s.run->cancel();
      ApiError e = timeoutError(s.server->options.requestTimeoutSeconds);
      record.error = e.message;
      record.status = 504;
      finishRecord(*s.builder);
      if (!write(data + ResponseBuilder::streamError(e) + "data: [DONE]\n\n"))
        return clientGone();
      sink.done();
      return true;
    }
    if (!data.empty())
      return write(data) ? true : clientGone();
    if (s.peer.clientGone())
      return clientGone();
  }
}

} // namespace

ApiResult<std::string> renderChatPrompt(const serving::Session &session, const Json &messages,
                                        bool addGenerationPrompt, bool continueFinalMessage,
                                        const Json &tools, const Json &templateKwargs) {
  auto rendered = session.applyChatTemplate(messages, addGenerationPrompt,
                                            tools.is_null() ? nullptr : &tools, &templateKwargs);
  if (!rendered)
    return badRequest("messages", "messages: the chat template failed: " + rendered.message());
  std::string text = std::move(*rendered);
  if (continueFinalMessage) {
    // vLLM's rule: the prompt ends right after the last message's content,
    // dropping what the template puts after it (end of turn).
    const Json &last = messages.back();
    auto content = last.find("content");
    if (content == last.end() || !content->is_string() ||
        content->get_ref<const std::string &>().empty())
      return badRequest("continue_final_message",
                        "continue_final_message: the last message has no text content to "
                        "continue");
    const std::string &c = content->get_ref<const std::string &>();
    size_t at = text.rfind(c);
    if (at == std::string::npos)
      return badRequest("continue_final_message",
                        "continue_final_message: the chat template does not render the last "
                        "message's content verbatim");
    text.resize(at + c.size());
  }
  return text;
}

void Server::Impl::handleGeneration(const http::Request &req, http::Response &res,
                                    Endpoint endpoint) {
  const std::string requestId = currentRequest().record.requestId;
  engine::Clock::time_point start = currentRequest().start;
  serving::Session *session = readySession(res, true);
  if (!session)
    return;
  const bool chat = endpoint == Endpoint::ChatCompletions;

  // Parse and build the prompts.
  std::optional<CompletionRequest> completion;
  std::optional<ChatRequest> chatRequest;
  GenerationOptions *opts = nullptr;
  if (chat) {
    auto parsed = parseChatRequest(req.body, limits);
    if (!parsed)
      return sendError(res, parsed.error());
    chatRequest = std::move(*parsed);
    opts = &*chatRequest;
  } else {
    auto parsed = parseCompletionRequest(req.body, limits);
    if (!parsed)
      return sendError(res, parsed.error());
    completion = std::move(*parsed);
    opts = &*completion;
  }
  if (auto e = checkModel(opts->model))
    return sendError(res, *e);
  currentRequest().record.stream = opts->stream;

  const tok::Tokenizer &tokenizer = session->tokenizer();
  PreparedPrompts prompts;
  OutputParserOptions parsing;
  if (chat) {
    const ChatRequest &c = *chatRequest;
    const ToolChoice::Kind choice = c.toolChoice.kind;
    if (choice == ToolChoice::Auto &&
        !(options.enableAutoToolChoice && options.toolCallParser != ToolCallParser::None))
      return sendError(res, badRequest("tool_choice",
                                       "\"auto\" tool choice requires --enable-auto-tool-choice "
                                       "and --tool-call-parser to be set"));
    if ((choice == ToolChoice::Required || choice == ToolChoice::Named) &&
        options.toolCallParser == ToolCallParser::None)
      return sendError(res, badRequest("tool_choice",
                                       "tool_choice \"required\" or a named function needs "
                                       "--tool-call-parser (the call is opened in its format)"));
    auto text = renderChatPrompt(*session, c.messages, c.addGenerationPrompt,
                                 c.continueFinalMessage, c.tools, c.templateKwargs);
    if (!text)
      return sendError(res, text.error());
    parsing.reasoning = options.reasoningParser;
    parsing.tools = choice == ToolChoice::None ? ToolCallParser::None : options.toolCallParser;
    parsing.startInReasoning =
        parsing.reasoning != ReasoningParser::None && endsInOpenThink(*text);
    if (c.tools.is_array())
      parsing.toolDefinitions = std::make_shared<const Json>(c.tools);
    if (choice == ToolChoice::Required || choice == ToolChoice::Named) {
      // No guided decoding: the prompt ends with the call's opening, so
      // the model writes a call (of that function, when named). Thinking
      // left open by the template is closed first.
      std::string opening = forcedCallOpening(
          options.toolCallParser, choice == ToolChoice::Named ? c.toolChoice.name : "");
      if (parsing.startInReasoning)
        opening = "</think>\n\n" + opening;
      *text += opening;
      parsing.forcedPrefix = std::move(opening);
    }
    prompts.tokens.push_back(tokenizer.encode(*text, opts->addSpecialTokens));
  } else {
    for (const PromptInput &p : completion->prompts) {
      if (p.text) {
        prompts.tokens.push_back(tokenizer.encode(*p.text, opts->addSpecialTokens));
        if (completion->echo)
          prompts.echo.push_back(*p.text);
      } else {
        prompts.tokens.push_back(p.tokenIds);
        if (completion->echo) {
          auto text = tokenizer.decode(p.tokenIds, false);
          prompts.echo.push_back(text ? *text : "");
        }
      }
    }
  }
  for (std::vector<int32_t> &tokens : prompts.tokens) {
    truncatePrompt(tokens, *opts);
    if (auto e = checkLength(tokens, *opts, maxModelLen, chat ? "messages" : "prompt"))
      return sendError(res, *e);
  }

  // Admission: how many requests the server serves at once, and how long
  // the engine's queue may grow.
  int32_t numChoices = int32_t(prompts.tokens.size()) * opts->n;
  if (activeGenerations.fetch_add(1) >= options.maxConcurrentRequests) {
    activeGenerations.fetch_sub(1);
    metrics.observeRejected("concurrency");
    ApiError e;
    e.status = 429;
    e.type = "rate_limit_error";
    e.code = "too_many_requests";
    e.message = "the server is already serving " + std::to_string(options.maxConcurrentRequests) +
                " requests (--max-concurrent-requests); retry shortly";
    e.retryAfterSeconds = 1;
    return sendError(res, e);
  }
  struct ActiveGuard {
    std::atomic<int> *count;
    ~ActiveGuard() {
      if (count)
        count->fetch_sub(1);
    }
  } active{&activeGenerations};
  // More choices than the queue can ever hold is the request's fault, not
  // a busy server's: no retry would succeed.
  if (options.maxQueueLen > 0 && numChoices > options.maxQueueLen)
    return sendError(res, badRequest("n", "the request asks for " + std::to_string(numChoices) +
                                              " sequences (prompts x n) and the server queues at "
                                              "most " +
                                              std::to_string(options.maxQueueLen) +
                                              " (--max-queue-len); ask for fewer"));
  if (session->engine().stats().numWaiting + numChoices > options.maxQueueLen) {
    metrics.observeRejected("queue_full");
    ApiError e = serverError(503, "queue_full",
                             "the engine's queue is full (" + std::to_string(options.maxQueueLen) +
                                 " waiting sequences, --max-queue-len); retry shortly");
    e.retryAfterSeconds = 1;
    return sendError(res, e);
  }

  std::vector<ChoiceSpec> specs;
  for (const std::vector<int32_t> &tokens : prompts.tokens)
    for (int32_t i = 0; i < opts->n; ++i) {
      ChoiceSpec spec;
      spec.promptTokens = tokens;
      spec.sampling = opts->sampling;
      if (spec.sampling.seed)
        spec.sampling.seed = *spec.sampling.seed + uint64_t(i);
      spec.detokenizer = session->detokenizer(opts->skipSpecialTokens);
      specs.push_back(std::move(spec));
    }
  auto started = GenerationRun::start(session->engine(), std::move(specs), metrics);
  if (!started)
    return sendError(res, started.error());
  std::unique_ptr<GenerationRun> run = std::move(*started);

  ResponseOptions ro;
  ro.endpoint = endpoint;
  ro.id = (chat ? "chatcmpl-" : "cmpl-") + requestId;
  ro.created = std::time(nullptr);
  ro.model = opts->model.empty() ? modelNames.front() : opts->model;
  ro.systemFingerprint = systemFingerprint;
  ro.tokenizer = &tokenizer;
  ro.n = opts->n;
  for (const auto &tokens : prompts.tokens)
    ro.promptTokens.push_back(int32_t(tokens.size()));
  ro.echo = std::move(prompts.echo);
  ro.logprobs = chat ? chatRequest->logprobs : opts->sampling.logprobs.has_value();
  ro.topLogprobs = opts->sampling.logprobs.value_or(0);
  ro.returnTokensAsTokenIds = opts->returnTokensAsTokenIds;
  ro.includeUsage = opts->includeUsage;
  ro.continuousUsageStats = opts->continuousUsageStats;
  ro.parsing = std::move(parsing);
  ro.toolCallsFinish = chat && (chatRequest->toolChoice.kind == ToolChoice::Auto ||
                                chatRequest->toolChoice.kind == ToolChoice::Required);
  ro.toolCallIdPrefix = "chatcmpl-tool-" + requestId + "-";
  auto builder = std::make_unique<ResponseBuilder>(std::move(ro), run->numChoices());

  engine::Clock::time_point deadline{};
  if (options.requestTimeoutSeconds > 0)
    deadline = start + std::chrono::duration_cast<engine::Clock::duration>(
                           std::chrono::duration<double>(options.requestTimeoutSeconds));
  trackRun(run.get());

  if (opts->stream) {
    auto state = std::make_shared<StreamState>();
    state->server = this;
    state->run = std::move(run);
    state->builder = std::move(builder);
    state->peer.connection = req.connection;
    state->start = start;
    state->deadline = deadline;
    active.count = nullptr; // the stream state gives the slot back
    res.setHeader("Cache-Control", "no-cache");
    res.setStream("text/event-stream", [state](http::StreamSink &sink) {
      return provideStream(*state, sink);
    });
    return;
  }

  // Not streaming: collect everything, then answer once.
  AccessRecord &record = currentRequest().record;
  bool sawAbort = false, timedOut = false;
  std::string engineError;
  while (!run->done()) {
    std::vector<ChoiceEvent> events = run->take(kPollInterval);
    noteFirstToken(events, start);
    noteAborts(events, sawAbort, engineError);
    builder->add(events);
    if (run->done())
      break;
    if (req.clientGone()) {
      run->cancel();
      record.clientDisconnected = true;
      record.status = 499;
      break;
    }
    if (!timedOut && deadline != engine::Clock::time_point{} && engine::Clock::now() >= deadline) {
      timedOut = true;
      run->cancel();
      break;
    }
  }
  untrackRun(run.get());
  finishRecord(*builder);
  if (record.clientDisconnected) {
    res.status = 499;
    return;
  }
  if (timedOut)
    return sendError(res, timeoutError(options.requestTimeoutSeconds));
  if (sawAbort)
    return sendError(res, abortError(engineError));
  sendJson(res, builder->response());
}

} // namespace volt::server
