//===- YamlDocument.h - bounded, exception-free YAML reading ---*- C++ -*-===//
//
// Deployment specs and SKU files are outside input. yaml-cpp throws on
// malformed text and recurses once per nesting level, so everything that
// touches it goes through here: a size cap, a pre-scan that rejects absurd
// nesting before the recursive parser sees it, and every exception turned
// into a diagnostic with a line and column. (yaml-cpp's own depth guard, at
// about a thousand levels, stays as the backstop.)
//
// Private to compiler/spec.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/spec/Diagnostics.h"
#include "runtime/support/Status.h"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace volt::spec {

/// Spec and SKU files are a few kilobytes; anything past this is a mistake.
inline constexpr size_t kMaxYamlBytes = 1 << 20;
/// Deeper than any spec or SKU file needs (they nest three levels).
inline constexpr int kMaxYamlNesting = 64;

/// Reads a whole regular file of at most `maxBytes`.
Result<std::string> readTextFile(const std::filesystem::path &path, size_t maxBytes);

/// Where the nesting of `text` first exceeds `limit` levels, if it does. An
/// upper bound: counts flow brackets, indentation levels and block
/// indicators, skipping quoted scalars and comments.
std::optional<SourceLocation> findExcessiveNesting(std::string_view text, int limit);

/// Parses `text` as exactly one YAML document; on failure records why in
/// `diags` and returns nothing.
std::optional<YAML::Node> parseYamlDocument(std::string_view text, Diagnostics &diags);

/// The 1-based place of `node`, or of `fallback` when `node` has none (an
/// implicit empty value has no mark of its own).
SourceLocation locationOf(const YAML::Node &node, SourceLocation fallback = {});

/// "a mapping", "a sequence", "an empty value", "'abc'", "the string \"32\""
/// — what a message says was found.
std::string describeNode(const YAML::Node &node);

/// `text` quoted for a message, shortened and with unprintable bytes escaped.
std::string quoteForMessage(std::string_view text, char quote = '\'');

/// True for a scalar written plainly (not quoted, no block scalar, no tag):
/// only those are read as numbers or booleans.
bool isPlainScalar(const YAML::Node &node);

} // namespace volt::spec
