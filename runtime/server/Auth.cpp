//===- Auth.cpp -----------------------------------------------------------===//
#include "runtime/server/Auth.h"

#include <cctype>
#include <cstddef>

namespace volt::server {

bool constantTimeEquals(std::string_view candidate, std::string_view secret) {
  // Every byte of the secret is visited whatever the candidate is; the
  // accumulator is volatile so that the loop cannot end early.
  volatile unsigned char diff = candidate.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < secret.size(); ++i) {
    unsigned char c = i < candidate.size() ? static_cast<unsigned char>(candidate[i]) : 0;
    diff = diff | static_cast<unsigned char>(c ^ static_cast<unsigned char>(secret[i]));
  }
  return diff == 0;
}

bool bearerMatches(std::string_view authorization, std::string_view apiKey) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size())
    return false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i])
      return false;
  std::string_view rest = authorization.substr(scheme.size());
  if (rest.front() != ' ' && rest.front() != '\t')
    return false;
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
    rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t'))
    rest.remove_suffix(1);
  return constantTimeEquals(rest, apiKey);
}

} // namespace volt::server
