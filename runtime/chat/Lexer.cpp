//===- Lexer.cpp - chat template source to tokens -------------------------===//
#include "runtime/chat/Lexer.h"

#include "runtime/chat/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace volt::chat {

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }

/// Whether `s` is non-empty and entirely whitespace (Python's `\s+`).
bool allWhitespace(std::string_view s) {
  if (s.empty())
    return false;
  for (char32_t c : decodeUtf8(s))
    if (!isPySpace(c))
      return false;
  return true;
}

class Lexer {
public:
  Lexer(std::string source, const std::string &origin) : src_(std::move(source)), origin_(origin) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n')
        lineStarts_.push_back(i + 1);
  }

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      if (Status s = lexRoot(); !s.ok())
        return s.error();
    }
    Token end;
    end.type = Token::Type::End;
    place(end, src_.size());
    tokens_.push_back(std::move(end));
    return std::move(tokens_);
  }

private:
  std::string src_;
  const std::string &origin_;
  std::vector<size_t> lineStarts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool lineStarting_ = true;

  void place(Token &t, size_t at) const {
    auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), at);
    size_t line = static_cast<size_t>(it - lineStarts_.begin());
    t.line = static_cast<int>(line);
    t.column = static_cast<int>(at - lineStarts_[line - 1] + 1);
  }

  Error error(size_t at, const std::string &message) const {
    Token t;
    place(t, at);
    return Error(origin_ + ":" + std::to_string(t.line) + ":" + std::to_string(t.column) + ": " +
                 message);
  }

  void emit(Token::Type type, size_t at, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    place(t, at);
    tokens_.push_back(std::move(t));
  }

  /// Text before a tag, with the tag's whitespace control applied. `sign` is
  /// the '-' or '+' after the opening delimiter, or 0.
  void emitText(size_t start, size_t end, char sign, bool lstripApplies) {
    std::string_view text(src_.data() + start, end - start);
    if (sign == '-') {
      text = std::string_view(src_.data() + start, pyStrip(text, std::nullopt, false, true).size());
    } else if (sign != '+' && lstripApplies) {
      size_t lineStart = text.rfind('\n');
      lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
      if ((lineStart > 0 || lineStarting_) && allWhitespace(text.substr(lineStart)))
        text = text.substr(0, lineStart);
    }
    if (!text.empty())
      emit(Token::Type::Text, start, std::string(text));
  }

  /// Matches `\s*raw\s*(-%}\s*|%})` or the same for endraw at `at` (just
  /// after `{%` and its sign); returns the end of the match or npos.
  size_t matchRawTag(size_t at, std::string_view word, bool trimNewline) const {
    size_t i = at;
    while (i < src_.size() && isSpace(src_[i]))
      ++i;
    if (src_.compare(i, word.size(), word) != 0)
      return std::string::npos;
    i += word.size();
    while (i < src_.size() && isSpace(src_[i]))
      ++i;
    if (trimNewline && src_.compare(i, 3, "+%}") == 0)
      return i + 3;
    if (src_.compare(i, 3, "-%}") == 0) {
      i += 3;
      while (i < src_.size() && isSpace(src_[i]))
        ++i;
      return i;
    }
    if (src_.compare(i, 2, "%}") == 0) {
      i += 2;
      if (trimNewline && i < src_.size() && src_[i] == '\n')
        ++i;
      return i;
    }
    return std::string::npos;
  }

  Status lexRoot() {
    size_t open = pos_;
    while (true) {
      open = src_.find('{', open);
      if (open == std::string::npos || open + 1 >= src_.size()) {
        emitText(pos_, src_.size(), 0, false);
        pos_ = src_.size();
        return Status::success();
      }
      char kind = src_[open + 1];
      if (kind == '{' || kind == '%' || kind == '#')
        break;
      ++open;
    }
    char kind = src_[open + 1];
    size_t after = open + 2;
    char sign = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+'))
      sign = src_[after++];

    if (kind == '%') {
      size_t rawEnd = matchRawTag(after, "raw", false);
      if (rawEnd != std::string::npos) {
        emitText(pos_, open, sign, true);
        return lexRaw(rawEnd);
      }
    }
    emitText(pos_, open, sign, kind != '{');
    lineStarting_ = false;
    if (kind == '#')
      return lexComment(open, after);
    emit(kind == '{' ? Token::Type::VariableBegin : Token::Type::BlockBegin, open);
    pos_ = after;
    return lexTag(kind == '%', open);
  }

  Status lexComment(size_t open, size_t from) {
    size_t close = src_.find("#}", from);
    if (close == std::string::npos)
      return error(open, "missing end of comment tag");
    size_t end = close + 2;
    if (close > from && src_[close - 1] == '-') {
      while (end < src_.size() && isSpace(src_[end]))
        ++end;
    } else if (!(close > from && src_[close - 1] == '+')) {
      if (end < src_.size() && src_[end] == '\n')
        ++end;
    }
    lineStarting_ = src_[end - 1] == '\n';
    pos_ = end;
    return Status::success();
  }

  Status lexRaw(size_t bodyStart) {
    size_t search = bodyStart;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos)
        return error(bodyStart, "missing end of raw directive");
      size_t after = open + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+'))
        sign = src_[after++];
      size_t end = matchRawTag(after, "endraw", true);
      if (end == std::string::npos) {
        search = open + 1;
        continue;
      }
      lineStarting_ = src_[bodyStart - 1] == '\n';
      pos_ = bodyStart;
      emitText(bodyStart, open, sign, true);
      lineStarting_ = src_[end - 1] == '\n';
      pos_ = end;
      return Status::success();
    }
  }

  Status lexTag(bool block, size_t open) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size())
        return Status::success(); // the parser reports the unclosed tag
      if (balance.empty()) {
        if (size_t end = matchTagEnd(block); end != std::string::npos) {
          emit(block ? Token::Type::BlockEnd : Token::Type::VariableEnd, pos_);
          lineStarting_ = src_[end - 1] == '\n';
          pos_ = end;
          return Status::success();
        }
      }
      char c = src_[pos_];
      if (isSpace(c)) {
        ++pos_;
        continue;
      }
      if (isDigit(c)) {
        VOLT_RETURN_IF_ERROR(lexNumber());
        continue;
      }
      if (isNameStart(c)) {
        size_t start = pos_;
        while (pos_ < src_.size() && isNameChar(src_[pos_]))
          ++pos_;
        emit(Token::Type::Name, start, src_.substr(start, pos_ - start));
        continue;
      }
      if (c == '\'' || c == '"') {
        VOLT_RETURN_IF_ERROR(lexString());
        continue;
      }
      static const char *twoChar[] = {"//", "**", "==", "!=", ">=", "<="};
      std::string op;
      for (const char *candidate : twoChar)
        if (src_.compare(pos_, 2, candidate) == 0)
          op = candidate;
      if (op.empty()) {
        if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
          std::string shown = static_cast<unsigned char>(c) < 0x80 && c >= 0x20
                                  ? std::string(1, c)
                                  : "\\x" + std::to_string(static_cast<unsigned char>(c));
          return error(pos_, "unexpected character '" + shown + "' in a tag");
        }
        op = std::string(1, c);
      }
      if (op == "(" || op == "[" || op == "{") {
        balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty())
          return error(pos_, "unexpected '" + op + "'");
        if (balance.back() != op[0])
          return error(pos_, "unexpected '" + op + "', expected '" +
                                 std::string(1, balance.back()) + "'");
        balance.pop_back();
      }
      emit(Token::Type::Operator, pos_, op);
      pos_ += op.size();
    }
  }

  /// The end of a `%}`/`}}` at pos_ (with its whitespace control), or npos.
  size_t matchTagEnd(bool block) const {
    const char *close = block ? "%}" : "}}";
    if (src_.compare(pos_, 2, close) == 0) {
      size_t end = pos_ + 2;
      if (block && end < src_.size() && src_[end] == '\n')
        ++end;
      return end;
    }
    if (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0) {
      size_t end = pos_ + 3;
      while (end < src_.size() && isSpace(src_[end]))
        ++end;
      return end;
    }
    if (block && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, close) == 0)
      return pos_ + 3;
    return std::string::npos;
  }

  /// Digits with optional single underscores between them, from `i`.
  size_t digitsAt(size_t i, bool (*digit)(char)) const {
    size_t start = i;
    while (i < src_.size()) {
      bool separator = src_[i] == '_' && i > start && i + 1 < src_.size() && digit(src_[i + 1]);
      if (!digit(src_[i]) && !separator)
        break;
      ++i;
    }
    return i;
  }

  Status lexNumber() {
    size_t start = pos_;
    auto strip = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      return s;
    };
    // Prefixed integers.
    if (src_[pos_] == '0' && pos_ + 1 < src_.size()) {
      char p = static_cast<char>(src_[pos_ + 1] | 0x20);
      int base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (base) {
        auto digitOk =
            base == 16  ? +[](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
            : base == 8 ? +[](char c) { return c >= '0' && c <= '7'; }
                        : +[](char c) { return c == '0' || c == '1'; };
        size_t i = pos_ + 2;
        if (i < src_.size() && src_[i] == '_')
          ++i;
        size_t end = digitsAt(i, digitOk);
        if (end > i) {
          std::string digits = strip(src_.substr(i, end - i));
          errno = 0;
          unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
          if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
            return error(start, "integer literal is too large");
          emit(Token::Type::Integer, start);
          tokens_.back().integer = static_cast<int64_t>(v);
          pos_ = end;
          return Status::success();
        }
      }
    }
    size_t end = digitsAt(pos_, isDigit);
    bool isFloat = false;
    // As in jinja2, a number right after a dot (`x.0.1`) is never a float.
    bool afterDot = pos_ > 0 && src_[pos_ - 1] == '.';
    if (!afterDot && end + 1 < src_.size() && src_[end] == '.' && isDigit(src_[end + 1])) {
      end = digitsAt(end + 1, isDigit);
      isFloat = true;
    }
    if (!afterDot && end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-'))
        ++e;
      if (e < src_.size() && isDigit(src_[e])) {
        end = digitsAt(e, isDigit);
        isFloat = true;
      }
    }
    std::string text = strip(src_.substr(pos_, end - pos_));
    if (isFloat) {
      emit(Token::Type::Float, start);
      tokens_.back().number = std::strtod(text.c_str(), nullptr);
      pos_ = end;
      return Status::success();
    }
    // Decimal integers: [1-9](_?\d)* or 0(_?0)*, as jinja2 reads them.
    if (src_[pos_] == '0') {
      size_t i = pos_ + 1;
      while (i < src_.size() &&
             (src_[i] == '0' || (src_[i] == '_' && i + 1 < src_.size() && src_[i + 1] == '0')))
        ++i;
      end = i;
      text = "0";
    }
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      return error(start, "integer literal is too large");
    emit(Token::Type::Integer, start);
    tokens_.back().integer = static_cast<int64_t>(v);
    pos_ = end;
    return Status::success();
  }

  Status lexString() {
    char quote = src_[pos_];
    size_t start = pos_;
    size_t i = pos_ + 1;
    std::string value;
    while (true) {
      if (i >= src_.size())
        return error(start, "unterminated string literal");
      char c = src_[i];
      if (c == quote)
        break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size())
        return error(start, "unterminated string literal");
      char e = src_[i + 1];
      i += 2;
      auto hexDigits = [&](int count) -> Result<char32_t> {
        if (i + count > src_.size())
          return error(i - 2, "truncated escape sequence in a string literal");
        char32_t v = 0;
        for (int k = 0; k < count; ++k) {
          char h = src_[i + k];
          if (!std::isxdigit(static_cast<unsigned char>(h)))
            return error(i - 2, "truncated escape sequence in a string literal");
          v = v * 16 + static_cast<char32_t>(isDigit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        i += count;
        return v;
      };
      switch (e) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        value += e;
        break;
      case 'a':
        value += '\a';
        break;
      case 'b':
        value += '\b';
        break;
      case 'f':
        value += '\f';
        break;
      case 'n':
        value += '\n';
        break;
      case 'r':
        value += '\r';
        break;
      case 't':
        value += '\t';
        break;
      case 'v':
        value += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        Result<char32_t> cp = hexDigits(e == 'x' ? 2 : e == 'u' ? 4 : 8);
        if (!cp.ok())
          return cp.error();
        if (*cp > 0x10FFFF)
          return error(i, "escape sequence beyond U+10FFFF in a string literal");
        // A lone surrogate cannot be UTF-8; it becomes U+FFFD.
        appendUtf8(value, (*cp >= 0xD800 && *cp <= 0xDFFF) ? 0xFFFD : *cp);
        break;
      }
      case 'N':
        return error(i - 2, "named unicode escapes (\\N{...}) are not supported");
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k)
            v = v * 8 + static_cast<char32_t>(src_[i++] - '0');
          appendUtf8(value, v);
        } else {
          value += '\\';
          value += e;
        }
      }
    }
    emit(Token::Type::String, start, std::move(value));
    pos_ = i + 1;
    return Status::success();
  }
};

/// Newlines as jinja2 reads them: \r\n and \r become \n, and one trailing
/// newline is dropped (`keep_trailing_newline` is off).
std::string normalizeNewlines(const std::string &source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

} // namespace

Result<std::vector<Token>> tokenize(const std::string &source, const std::string &origin) {
  if (!isValidUtf8(source))
    return Error(origin + ": the template is not valid UTF-8");
  Lexer lexer(normalizeNewlines(source), origin);
  return lexer.run();
}

} // namespace volt::chat
