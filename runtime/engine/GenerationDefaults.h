//===- GenerationDefaults.h - a checkpoint's recommended sampling -*- C++ -*-===//
//
// The sampling fields of a model's generation_config.json (temperature,
// top_p, top_k, min_p, repetition_penalty), which vLLM applies by default
// to every request that leaves the field unset (its `--generation-config
// auto`): a Qwen3 checkpoint recommends temperature 0.6, top_p 0.95, top_k
// 20. voltc reads them into the plan (ModelInfo.generation_defaults);
// volt-serve applies them, or another folder's, or none.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/SamplingParams.h"
#include "runtime/support/Status.h"

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace volt::engine {

struct GenerationDefaults {
  std::optional<float> temperature;
  std::optional<float> topP;
  std::optional<int32_t> topK;
  std::optional<float> minP;
  std::optional<float> repetitionPenalty;

  bool empty() const {
    return !temperature && !topP && !topK && !minP && !repetitionPenalty;
  }
  /// Sets the fields of `params` that are set here.
  void applyTo(SamplingParams &params) const;
  /// The set fields with generation_config.json's names, e.g.
  /// "temperature 0.6, top_p 0.95, top_k 20"; "none" when empty.
  std::string describe() const;
};

/// What is out of vLLM's range in `d` ("field 'top_p': 1.5 is out of range
/// (above 0 and at most 1)"), or empty; header-only, so that the plan
/// loader checks a plan's defaults without this library.
inline std::string generationDefaultsProblem(const GenerationDefaults &d) {
  auto bad = [](const char *key, double v, const char *range) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", v);
    return std::string("field '") + key + "': " + value + " is out of range (" + range + ")";
  };
  auto finite = [](float v) { return v == v && v - v == 0; };
  if (d.temperature && (!finite(*d.temperature) || *d.temperature < 0))
    return bad("temperature", *d.temperature, "at least 0");
  if (d.topP && (!finite(*d.topP) || *d.topP <= 0 || *d.topP > 1))
    return bad("top_p", *d.topP, "above 0 and at most 1");
  if (d.topK && *d.topK < -1)
    return bad("top_k", *d.topK, "-1 or 0: off, else at least 1");
  if (d.minP && (!finite(*d.minP) || *d.minP < 0 || *d.minP > 1))
    return bad("min_p", *d.minP, "0 to 1");
  if (d.repetitionPenalty && (!finite(*d.repetitionPenalty) || *d.repetitionPenalty <= 0))
    return bad("repetition_penalty", *d.repetitionPenalty, "above 0");
  return {};
}

/// The sampling fields of a generation_config.json document (`text`; other
/// keys are ignored, a null value is unset). `where` (the file) is named in
/// errors: not a JSON object, a field that is not a number (top_k: not an
/// integer), or out of vLLM's range (temperature >= 0, 0 < top_p <= 1,
/// top_k -1 or >= 0, 0 <= min_p <= 1, repetition_penalty > 0).
Result<GenerationDefaults> parseGenerationDefaults(std::string_view text,
                                                   const std::string &where);

} // namespace volt::engine
