//===- Regex.cpp - PCRE2 regular expressions for pre-tokenizers ----------===//
#include "runtime/tokenizer/Regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace volt::tok {

namespace {

/// PCRE2's `\s` under UCP is tab, LF, VT, FF, CR and the Z categories;
/// Oniguruma's (what HF tokenizers runs) is the White_Space property, which
/// also has U+0085 (NEXT LINE). Writing `\s` as a class with U+0085 added
/// makes the two agree; `\S` becomes its complement.
std::string adaptWhitespaceClasses(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool inClass = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      if (n == 's') {
        out += inClass ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (n == 'S' && !inClass) {
        out += "[^\\s\\x{85}]";
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (c == '[' && !inClass) {
      inClass = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out += '^';
        ++i;
      }
      if (i + 1 < p.size() && p[i + 1] == ']') {
        out += ']';
        ++i;
      }
      continue;
    }
    if (c == ']' && inClass)
      inClass = false;
    out += c;
  }
  return out;
}

} // namespace

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern) {
  std::string adapted = adaptWhitespaceClasses(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code *code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(adapted.data()), adapted.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    return Error("invalid regular expression '" + std::string(pattern) + "': " +
                 reinterpret_cast<char *>(buf) + " (at offset " + std::to_string(offset) + ")");
  }
  std::shared_ptr<Regex> re(new Regex());
  re->pattern_ = std::string(pattern);
  re->code_ = code;
  re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return std::shared_ptr<const Regex>(std::move(re));
}

Result<std::shared_ptr<const Regex>> Regex::literal(std::string_view literal) {
  std::string quoted = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    // \E inside \Q...\E ends the quote: split it.
    if (literal[i] == '\\' && i + 1 < literal.size() && literal[i + 1] == 'E') {
      quoted += "\\E\\\\\\QE";
      ++i;
      continue;
    }
    quoted += literal[i];
  }
  quoted += "\\E";
  return compile(quoted);
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code *>(code_)); }

void Regex::findAll(std::string_view text, std::vector<Match> &out) const {
  auto *code = static_cast<pcre2_code *>(code_);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, nullptr);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  bool useJit = jit_;
  while (pos <= text.size()) {
    int rc = useJit
                 ? pcre2_jit_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr)
                 : pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && useJit) {
      // The interpreter keeps its backtracking state on the heap.
      useJit = false;
      continue;
    }
    if (rc < 0)
      break;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.push_back({b, e});
      pos = e;
    } else {
      // Empty match: step over one character.
      if (e >= text.size())
        break;
      pos = e + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80)
        ++pos;
    }
  }
  pcre2_match_data_free(md);
}

} // namespace volt::tok
