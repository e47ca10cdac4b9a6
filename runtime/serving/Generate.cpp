//===- Generate.cpp -------------------------------------------------------===//
#include "runtime/serving/Generate.h"

#include <chrono>

namespace volt::serving {

Result<Generation> generate(Session &session, std::vector<int32_t> promptTokens,
                            const engine::SamplingParams &sampling,
                            const std::function<void(const std::string &)> &onText) {
  Generation g;
  g.promptTokens = promptTokens;
  std::string error;
  bool done = false;
  engine::Clock::time_point firstToken{}, lastToken{};
  engine::Request request;
  request.promptTokens = std::move(promptTokens);
  request.sampling = sampling;
  request.detokenizer = session.detokenizer(true);
  auto start = engine::Clock::now();
  request.onOutput = [&](const engine::RequestOutput &out) {
    if (out.token) {
      g.tokens.push_back(*out.token);
      if (g.tokens.size() == 1)
        firstToken = engine::Clock::now();
      lastToken = engine::Clock::now();
    }
    if (!out.text.empty()) {
      g.text += out.text;
      if (onText)
        onText(out.text);
    }
    if (out.finished) {
      done = true;
      error = out.error;
      g.finishReason = engine::finishReasonName(out.finishReason);
    }
  };
  auto id = session.engine().submit(std::move(request));
  if (!id)
    return id.error();
  VOLT_RETURN_IF_ERROR(session.engine().runUntilIdle());
  if (!done)
    return Error("the request did not finish");
  if (!error.empty())
    return Error(error);
  auto end = engine::Clock::now();
  using Seconds = std::chrono::duration<double>;
  g.totalSeconds = Seconds(end - start).count();
  if (!g.tokens.empty())
    g.timeToFirstTokenSeconds = Seconds(firstToken - start).count();
  if (g.tokens.size() > 1) {
    double decode = Seconds(lastToken - firstToken).count();
    g.decodeTokensPerSecond = decode > 0 ? static_cast<double>(g.tokens.size() - 1) / decode : 0;
  }
  return g;
}

} // namespace volt::serving
