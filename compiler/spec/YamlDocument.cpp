//===- YamlDocument.cpp ---------------------------------------------------===//
#include "compiler/spec/YamlDocument.h"

#include <yaml-cpp/eventhandler.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace volt::spec {

Result<std::string> readTextFile(const std::filesystem::path &path, size_t maxBytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return Error("cannot read '" + path.string() + "': no such file");
  if (std::filesystem::is_directory(status))
    return Error("cannot read '" + path.string() + "': it is a directory, not a file");
  // Devices and pipes could block or never end.
  if (!std::filesystem::is_regular_file(status))
    return Error("cannot read '" + path.string() + "': not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error("cannot read '" + path.string() + "': cannot open it for reading");
  // Read one byte past the cap rather than trusting the size the file system
  // reports (files under /proc report 0).
  std::string text(maxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    return Error("cannot read '" + path.string() + "': read error");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > maxBytes) {
    // Built piecewise: GCC 12 warns falsely (-Wrestrict) on "'" + string&&.
    std::string message = "'";
    message += path.string();
    message += "' is larger than " + std::to_string(maxBytes) +
               " bytes; a spec or SKU file is a few kilobytes";
    return Error(message);
  }
  return text;
}

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

} // namespace

std::optional<SourceLocation> findExcessiveNesting(std::string_view text, int limit) {
  enum class Quote { None, Single, Double } quote = Quote::None;
  int flowDepth = 0;
  std::vector<size_t> indents; // open block levels, by indentation column
  int lineNo = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    ++lineNo;

    size_t i = 0;
    if (quote == Quote::None && flowDepth == 0) {
      while (i < line.size() && line[i] == ' ')
        ++i;
      bool contentLine = i < line.size() && line[i] != '#' && line[i] != '\r';
      if (contentLine) {
        while (!indents.empty() && indents.back() > i)
          indents.pop_back();
        if (indents.empty() || indents.back() < i)
          indents.push_back(i);
      }
    }
    int lineIndicators = 0;
    // The last significant character before a scalar may start; '\0' is the
    // start of the line. Quotes open a scalar only in that position.
    char previous = '\0';
    bool previousWordIsProperty = false; // a tag (!x) or anchor (&x)
    size_t wordStart = i;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote == Quote::Double) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          quote = Quote::None, previous = 'x';
        continue;
      }
      if (quote == Quote::Single) {
        if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'')
          ++i;
        else if (c == '\'')
          quote = Quote::None, previous = 'x';
        continue;
      }
      if (isBlank(c)) {
        if (wordStart < i)
          previousWordIsProperty = line[wordStart] == '!' || line[wordStart] == '&';
        wordStart = i + 1;
        continue;
      }
      bool atScalarStart = previous == '\0' ||
                           std::string_view("[{,:-?").find(previous) != std::string_view::npos ||
                           previousWordIsProperty;
      bool followedByBlank = i + 1 >= line.size() || isBlank(line[i + 1]);
      if (c == '#' && (i == 0 || isBlank(line[i - 1])))
        break; // comment
      if ((c == '"' || c == '\'') && atScalarStart && wordStart == i) {
        quote = c == '"' ? Quote::Double : Quote::Single;
        continue;
      }
      if (c == '[' || c == '{') {
        ++flowDepth;
      } else if (c == ']' || c == '}') {
        if (flowDepth > 0)
          --flowDepth;
      } else if ((c == '-' || c == '?' || c == ':') && followedByBlank) {
        ++lineIndicators;
      }
      previous = c;
      previousWordIsProperty = false;
      if (std::string_view("[]{},").find(c) != std::string_view::npos)
        wordStart = i + 1;
      int depth = static_cast<int>(indents.size()) + lineIndicators + flowDepth;
      if (depth > limit)
        return SourceLocation{lineNo, static_cast<int>(i) + 1};
    }
    pos = end + 1;
  }
  return std::nullopt;
}

namespace {

/// Notes where each document starts and ignores everything else: enough to
/// count documents without building them.
class DocumentStarts : public YAML::EventHandler {
public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark &mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark &, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark &, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark &, const std::string &, YAML::anchor_t,
                const std::string &) override {}
  void OnSequenceStart(const YAML::Mark &, const std::string &, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark &, const std::string &, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

SourceLocation toLocation(const YAML::Mark &mark) {
  if (mark.is_null())
    return {};
  return {mark.line + 1, mark.column + 1};
}

/// Counts the documents of `text` (up to a few). yaml-cpp 0.7 never consumes
/// a stray top-level token such as a ',' after the value, and
/// YAML::LoadAll then produces empty documents forever; a document that
/// starts where the previous one did is that case, reported as an error.
bool checkSingleDocument(std::string_view text, Diagnostics &diags) {
  std::istringstream stream{std::string(text)};
  YAML::Parser parser(stream);
  DocumentStarts starts;
  constexpr size_t kEnough = 3;
  for (size_t round = 0; round < kEnough && parser.HandleNextDocument(starts); ++round) {
    auto &marks = starts.marks;
    if (marks.size() >= 2 && marks[marks.size() - 1].pos == marks[marks.size() - 2].pos) {
      const YAML::Mark &at = marks.back();
      std::string_view rest =
          at.pos >= 0 && static_cast<size_t>(at.pos) < text.size() ? text.substr(at.pos, 1) : "";
      diags.error(toLocation(at), "invalid yaml: unexpected " + quoteForMessage(rest) +
                                      " after the document's value");
      return false;
    }
  }
  if (starts.marks.empty()) {
    diags.error({}, "the file is empty; expected a mapping of keys to values");
    return false;
  }
  if (starts.marks.size() > 1) {
    diags.error(toLocation(starts.marks[1]),
                "expected one yaml document, found another one here (remove the extra '---' "
                "sections)");
    return false;
  }
  return true;
}

} // namespace

std::optional<YAML::Node> parseYamlDocument(std::string_view text, Diagnostics &diags) {
  if (text.size() > kMaxYamlBytes) {
    diags.error({}, "file is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                        std::to_string(kMaxYamlBytes) + "; a spec or SKU file is a few kilobytes");
    return std::nullopt;
  }
  if (auto where = findExcessiveNesting(text, kMaxYamlNesting)) {
    diags.error(*where, "yaml nested deeper than " + std::to_string(kMaxYamlNesting) +
                            " levels; a spec or SKU file nests three levels at most");
    return std::nullopt;
  }
  try {
    if (!checkSingleDocument(text, diags))
      return std::nullopt;
    return YAML::Load(std::string(text));
  } catch (const YAML::ParserException &e) {
    diags.error(toLocation(e.mark), "invalid yaml: " + e.msg);
  } catch (const std::exception &e) {
    diags.error({}, std::string("invalid yaml: ") + e.what());
  }
  return std::nullopt;
}

SourceLocation locationOf(const YAML::Node &node, SourceLocation fallback) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null() || node.IsNull())
    return fallback;
  return {mark.line + 1, mark.column + 1};
}

std::string quoteForMessage(std::string_view text, char quote) {
  constexpr size_t kMaxShown = 60;
  std::string out(1, quote);
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown)
    out += "...";
  out += quote;
  return out;
}

bool isPlainScalar(const YAML::Node &node) {
  if (!node.IsScalar())
    return false;
  const std::string &tag = node.Tag();
  if (tag == "?")
    return true;
  // Explicit core-schema tags (!!int 5) still read as what they say.
  static const std::string kCore = "tag:yaml.org,2002:";
  return tag.rfind(kCore, 0) == 0 && tag != kCore + "str";
}

std::string describeNode(const YAML::Node &node) {
  switch (node.Type()) {
  case YAML::NodeType::Undefined:
  case YAML::NodeType::Null:
    return "an empty value";
  case YAML::NodeType::Sequence:
    return "a sequence";
  case YAML::NodeType::Map:
    return "a mapping";
  case YAML::NodeType::Scalar:
    break;
  }
  if (isPlainScalar(node))
    return quoteForMessage(node.Scalar());
  return "the string " + quoteForMessage(node.Scalar(), '"');
}

} // namespace volt::spec
