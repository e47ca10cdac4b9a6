//===- TokenizerEncodeFuzz.cpp - encode/decode of arbitrary bytes --------===//
//
// Loads the committed Mistral tokenizer once, then for each input: encodes
// it (with and without special tokens), decodes the ids (they must decode),
// streams them, and decodes the input read as ids (unknown ids must be an
// error, never a crash). Invariants checked: streaming adds up to decode,
// every output is valid UTF-8.
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/Unicode.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using volt::tok::IncrementalDecoder;
using volt::tok::Tokenizer;

namespace {

std::unique_ptr<Tokenizer> gTokenizer;

std::string readXz(const std::string &path) {
  FILE *pipe = popen(("xz -dc '" + path + "'").c_str(), "r");
  std::string out;
  if (!pipe)
    return out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
    out.append(buf, n);
  pclose(pipe);
  return out;
}

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "invariant failed: %s\n", what);
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::string path =
      std::string(VOLT_SOURCE_DIR) + "/tests/conformance/tokenizer/mistral-v1.tokenizer.json.xz";
  auto t = Tokenizer::fromJson(readXz(path), path);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.message().c_str());
    std::abort();
  }
  gTokenizer = std::move(*t);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Tokenizer &t = *gTokenizer;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  for (bool special : {false, true}) {
    std::vector<int32_t> ids = t.encode(text, special);
    auto decoded = t.decode(ids, !special);
    check(decoded.ok(), "encoded ids decode");
    check(volt::tok::isValidUtf8(*decoded), "decode gives valid UTF-8");
    IncrementalDecoder stream(t, !special);
    std::string streamed;
    for (int32_t id : ids) {
      auto piece = stream.step(id);
      check(piece.ok(), "stream step");
      check(volt::tok::isValidUtf8(*piece), "stream step gives valid UTF-8");
      streamed += *piece;
    }
    auto rest = stream.finish();
    check(rest.ok(), "stream finish");
    check(streamed + *rest == *decoded, "streaming adds up to decode");
  }
  // The bytes as ids: decode never crashes, and unknown ids are errors.
  std::vector<int32_t> raw(size / 2);
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<int16_t>(data[2 * i] | data[2 * i + 1] << 8);
  auto d = t.decode(raw, size % 2 == 1);
  if (d.ok())
    check(volt::tok::isValidUtf8(*d), "decode of raw ids gives valid UTF-8");
  return 0;
}
