//===- ApiError.cpp -------------------------------------------------------===//
#include "runtime/server/ApiError.h"

#include "runtime/support/Strings.h"

namespace volt::server {

nlohmann::ordered_json ApiError::toJson() const {
  nlohmann::ordered_json e = nlohmann::ordered_json::object();
  // Messages and params may quote the request: bounded, so that an error
  // costs little whatever the client sent.
  e["message"] = clipForMessage(message, kMaxMessageBytes);
  e["type"] = type;
  e["param"] = param.empty() ? nlohmann::ordered_json()
                             : nlohmann::ordered_json(clipForMessage(param, kMaxParamBytes));
  e["code"] = code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(code);
  return {{"error", std::move(e)}};
}

std::string ApiError::body() const { return dumpJson(toJson()); }

ApiError badRequest(std::string param, std::string message) {
  ApiError e;
  e.status = 400;
  e.param = std::move(param);
  e.message = std::move(message);
  return e;
}

ApiError badRequestFromMessage(const std::string &message) {
  ApiError e;
  e.status = 400;
  e.message = message;
  size_t colon = message.find(':');
  if (colon != std::string::npos && colon > 0 &&
      message.find_first_of(" \t", 0) > colon) // "top_p: ...", not "request needs ...: "
    e.param = message.substr(0, colon);
  return e;
}

ApiError serverError(int status, std::string code, std::string message) {
  ApiError e;
  e.status = status;
  e.type = "server_error";
  e.code = std::move(code);
  e.message = std::move(message);
  return e;
}

std::string dumpJson(const nlohmann::ordered_json &value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace volt::server
