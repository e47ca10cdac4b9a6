//===- TokenizerJsonFuzz.cpp - tokenizer.json parsing --------------------===//
//
// Arbitrary bytes as tokenizer.json: loading returns a tokenizer or an
// error, never crashes; a tokenizer that loads can encode and decode.
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizer/Tokenizer.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view json(reinterpret_cast<const char *>(data), size);
  auto t = volt::tok::Tokenizer::fromJson(json, "fuzz.json");
  if (!t.ok())
    return 0;
  std::vector<int32_t> ids =
      (*t)->encode("Hello, world! 123 \xE4\xB8\xAD <s> \xF0\x9F\x98\x80", true);
  auto text = (*t)->decode(ids, false);
  (void)text;
  return 0;
}
