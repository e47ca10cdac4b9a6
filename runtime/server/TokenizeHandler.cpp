//===- TokenizeHandler.cpp - POST /tokenize and POST /detokenize ----------===//
//
// vLLM's tokenizer endpoints: a prompt (or a conversation, through the chat
// template) to token ids, and token ids back to text.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/ServerImpl.h"

namespace volt::server {

using Json = nlohmann::ordered_json;

void Server::Impl::handleTokenize(const http::Request &req, http::Response &res) {
  serving::Session *session = readySession(res, false);
  if (!session)
    return;
  auto parsed = parseTokenizeRequest(req.body, limits);
  if (!parsed)
    return sendError(res, parsed.error());
  const TokenizeRequest &r = *parsed;
  if (auto e = checkModel(r.model))
    return sendError(res, *e);
  std::string text;
  if (r.prompt) {
    text = *r.prompt;
  } else {
    auto rendered = renderChatPrompt(*session, r.messages, r.addGenerationPrompt,
                                     r.continueFinalMessage, r.tools, r.templateKwargs);
    if (!rendered)
      return sendError(res, rendered.error());
    text = std::move(*rendered);
  }
  const tok::Tokenizer &tokenizer = session->tokenizer();
  std::vector<int32_t> tokens = tokenizer.encode(text, r.addSpecialTokens);
  Json body = Json::object();
  body["count"] = tokens.size();
  body["max_model_len"] = maxModelLen;
  body["tokens"] = tokens;
  if (r.returnTokenStrs) {
    Json strs = Json::array();
    for (int32_t id : tokens)
      strs.push_back(tokenizer.idToToken(id).value_or(""));
    body["token_strs"] = std::move(strs);
  } else {
    body["token_strs"] = Json();
  }
  currentRequest().record.promptTokens = int32_t(tokens.size());
  sendJson(res, body);
}

void Server::Impl::handleDetokenize(const http::Request &req, http::Response &res) {
  serving::Session *session = readySession(res, false);
  if (!session)
    return;
  auto parsed = parseDetokenizeRequest(req.body, limits);
  if (!parsed)
    return sendError(res, parsed.error());
  if (auto e = checkModel(parsed->model))
    return sendError(res, *e);
  auto text = session->tokenizer().decode(parsed->tokens, false);
  if (!text)
    return sendError(res, badRequest("tokens", "tokens: " + text.message()));
  sendJson(res, Json{{"prompt", *text}});
}

} // namespace volt::server
