//===- RequestFuzzer.cpp - request bodies through the server's parser -----===//
//
// The first byte picks the endpoint (completions, chat, tokenize,
// detokenize); the rest is the body. Whatever it is, the parser returns a
// request whose options pass the engine's validation, or an error that
// serializes to OpenAI's error JSON.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/RequestParser.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace volt::server;

namespace {

void check(bool ok) {
  if (!ok)
    std::abort();
}

template <typename T> void checkError(const ApiResult<T> &r) {
  if (r.ok())
    return;
  const ApiError &e = r.error();
  check(e.status == 400);
  check(!e.message.empty());
  check(!e.body().empty());
}

void checkSampling(const GenerationOptions &o, const ParseLimits &limits) {
  check(
      volt::engine::validateSamplingParams(o.sampling, limits.vocabSize, limits.maxLogprobs).ok());
  check(o.n >= 1 && o.n <= limits.maxChoices);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  ParseLimits limits;
  limits.vocabSize = 151936;
  std::string_view body(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 4) {
  case 0: {
    auto r = parseCompletionRequest(body, limits);
    checkError(r);
    if (r.ok()) {
      checkSampling(*r, limits);
      check(!r->prompts.empty());
      check(int64_t(r->prompts.size()) * r->n <= limits.maxChoices);
      for (const PromptInput &p : r->prompts)
        for (int32_t id : p.tokenIds)
          check(id >= 0 && id < limits.vocabSize);
    }
    break;
  }
  case 1: {
    auto r = parseChatRequest(body, limits);
    checkError(r);
    if (r.ok()) {
      checkSampling(*r, limits);
      check(r->messages.is_array() && !r->messages.empty());
      for (const auto &m : r->messages) {
        auto content = m.find("content");
        check(content == m.end() || content->is_string() || content->is_null());
      }
    }
    break;
  }
  case 2:
    checkError(parseTokenizeRequest(body, limits));
    break;
  case 3: {
    auto r = parseDetokenizeRequest(body, limits);
    checkError(r);
    if (r.ok())
      for (int32_t id : r->tokens)
        check(id >= 0 && id < limits.vocabSize);
    break;
  }
  }
  return 0;
}
