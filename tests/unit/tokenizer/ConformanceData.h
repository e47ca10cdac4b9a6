//===- ConformanceData.h - reading the committed expectations --*- C++ -*-===//
//
// The files under tests/conformance/tokenizer/ (written by generate.py
// there) are xz-compressed; `xz -dc` unpacks them. Layouts:
//   corpus.bin:        per string, u32 little-endian length + bytes.
//   <name>.expect.bin: per string, varints (LEB128):
//     ids without special tokens: count, ids
//     flag 0: special ids are those ids with `before` and `after` added
//             (count, ids each); flag 1: count, ids in full
//     three decodes, each flag 0 (equal to a reference) or 1 + length +
//     bytes: decode(plain, keep specials) [reference: the input text,
//     repaired], decode(special, keep) and decode(special, skip)
//     [reference: the first decode].
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace volt::tok::testing {

/// The decompressed bytes of an .xz file, or nothing when xz fails.
inline std::optional<std::string> readXz(const std::string &path) {
  std::string cmd = "xz -dc '" + path + "'";
  FILE *pipe = popen(cmd.c_str(), "r");
  if (!pipe)
    return std::nullopt;
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
    out.append(buf, n);
  if (pclose(pipe) != 0)
    return std::nullopt;
  return out;
}

inline std::string conformanceDir() {
  return std::string(VOLT_SOURCE_DIR) + "/tests/conformance/tokenizer/";
}

inline std::vector<std::string> parseCorpus(const std::string &blob) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos + 4 <= blob.size()) {
    uint32_t len = static_cast<uint8_t>(blob[pos]) | static_cast<uint8_t>(blob[pos + 1]) << 8 |
                   static_cast<uint8_t>(blob[pos + 2]) << 16 |
                   static_cast<uint32_t>(static_cast<uint8_t>(blob[pos + 3])) << 24;
    pos += 4;
    items.push_back(blob.substr(pos, len));
    pos += len;
  }
  return items;
}

struct Expectation {
  std::vector<int32_t> plain, special;
  std::string decodePlain, decodeSpecial, decodeSpecialSkipped;
};

class ExpectationReader {
public:
  explicit ExpectationReader(const std::string &blob) : blob_(blob) {}
  bool done() const { return pos_ >= blob_.size(); }

  /// The next record; `text` is the input after UTF-8 repair.
  Expectation next(const std::string &text) {
    Expectation e;
    e.plain = ids();
    if (byte() == 0) {
      std::vector<int32_t> before = ids(), after = ids();
      e.special = before;
      e.special.insert(e.special.end(), e.plain.begin(), e.plain.end());
      e.special.insert(e.special.end(), after.begin(), after.end());
    } else {
      e.special = ids();
    }
    e.decodePlain = textOr(text);
    e.decodeSpecial = textOr(e.decodePlain);
    e.decodeSpecialSkipped = textOr(e.decodePlain);
    return e;
  }

private:
  uint8_t byte() { return pos_ < blob_.size() ? static_cast<uint8_t>(blob_[pos_++]) : 0; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80) || shift > 56)
        return v;
    }
  }
  std::vector<int32_t> ids() {
    std::vector<int32_t> out(varint());
    for (int32_t &id : out)
      id = static_cast<int32_t>(varint());
    return out;
  }
  std::string textOr(const std::string &reference) {
    if (byte() == 0)
      return reference;
    size_t n = varint();
    std::string s = blob_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  const std::string &blob_;
  size_t pos_ = 0;
};

} // namespace volt::tok::testing
