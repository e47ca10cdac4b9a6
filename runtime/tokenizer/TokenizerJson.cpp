//===- TokenizerJson.cpp - reading tokenizer.json ------------------------===//
//
// Builds a Tokenizer from the JSON that HF `tokenizers` writes. Every field
// is checked; an unsupported component or a value of the wrong kind is an
// error naming its JSON path.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/MappedFile.h"
#include "runtime/support/Strings.h"
#include "runtime/tokenizer/AddedVocabulary.h"
#include "runtime/tokenizer/Bpe.h"
#include "runtime/tokenizer/Decoding.h"
#include "runtime/tokenizer/Pipeline.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

namespace volt::tok {

using Json = nlohmann::json;

namespace {

const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string kindOf(const Json &j) {
  switch (j.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "an integer";
  case Json::value_t::number_float:
    return "a number";
  default:
    return "a value";
  }
}

Error wrongKind(const std::string &path, const char *expected, const Json &j) {
  return Error(path + ": expected " + expected + ", found " + kindOf(j));
}

} // namespace

/// Reads one tokenizer.json; friend of Tokenizer.
class TokenizerLoader {
public:
  explicit TokenizerLoader(std::string origin) : origin_(std::move(origin)) {}
  Result<std::unique_ptr<Tokenizer>> load(std::string_view text);

private:
  Error fail(const std::string &path, const std::string &message) const {
    return Error(origin_ + ": " + path + ": " + message);
  }
  Error fail(Error e) const { return Error(origin_ + ": " + e.message); }

  Result<std::string> str(const Json &obj, const std::string &path, const char *key,
                          std::optional<std::string> fallback = std::nullopt) const;
  Result<bool> boolean(const Json &obj, const std::string &path, const char *key,
                       bool fallback) const;
  Result<int64_t> integer(const Json &obj, const std::string &path, const char *key,
                          std::optional<int64_t> fallback = std::nullopt) const;
  Result<const Json *> member(const Json &obj, const std::string &path, const char *key) const;
  Result<std::string> typeOf(const Json &obj, const std::string &path) const;
  Error unsupported(const std::string &path, const std::string &type,
                    const std::vector<std::string> &supported) const;
  Result<std::shared_ptr<const Regex>> pattern(const Json &obj, const std::string &path,
                                               std::string *literal) const;

  Result<std::unique_ptr<BpeModel>> model(const Json &j, const std::string &path) const;
  Result<std::unique_ptr<Normalizer>> normalizer(const Json &j, const std::string &path) const;
  Result<std::unique_ptr<PreTokenizer>> preTokenizer(const Json &j, const std::string &path) const;
  Result<std::unique_ptr<Decoder>> decoder(const Json &j, const std::string &path) const;
  Status postProcessor(const Json &j, const std::string &path, PostProcessor &out) const;
  Result<std::vector<AddedToken>> addedTokens(const Json &j, const std::string &path) const;

  std::string origin_;
};

Result<const Json *> TokenizerLoader::member(const Json &obj, const std::string &path,
                                             const char *key) const {
  auto it = obj.find(key);
  if (it == obj.end())
    return fail(path, std::string("missing field '") + key + "'");
  return &*it;
}

Result<std::string> TokenizerLoader::str(const Json &obj, const std::string &path, const char *key,
                                         std::optional<std::string> fallback) const {
  auto it = obj.find(key);
  if (it == obj.end() || (it->is_null() && fallback)) {
    if (fallback)
      return *fallback;
    return fail(path, std::string("missing field '") + key + "'");
  }
  if (!it->is_string())
    return fail(wrongKind(path + "." + key, "a string", *it));
  return it->get<std::string>();
}

Result<bool> TokenizerLoader::boolean(const Json &obj, const std::string &path, const char *key,
                                      bool fallback) const {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return fallback;
  if (!it->is_boolean())
    return fail(wrongKind(path + "." + key, "a boolean", *it));
  return it->get<bool>();
}

Result<int64_t> TokenizerLoader::integer(const Json &obj, const std::string &path, const char *key,
                                         std::optional<int64_t> fallback) const {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (fallback)
      return *fallback;
    return fail(path, std::string("missing field '") + key + "'");
  }
  if (!it->is_number_integer())
    return fail(wrongKind(path + "." + key, "an integer", *it));
  return it->get<int64_t>();
}

Result<std::string> TokenizerLoader::typeOf(const Json &obj, const std::string &path) const {
  if (!obj.is_object())
    return fail(wrongKind(path, "an object", obj));
  return str(obj, path, "type");
}

Error TokenizerLoader::unsupported(const std::string &path, const std::string &type,
                                   const std::vector<std::string> &supported) const {
  return fail(path + ".type",
              "unsupported '" + type + "' (supported: " + joinList(supported) + ")");
}

Result<std::shared_ptr<const Regex>>
TokenizerLoader::pattern(const Json &obj, const std::string &path, std::string *literal) const {
  VOLT_ASSIGN_OR_RETURN(const Json *p, member(obj, path, "pattern"));
  std::string where = path + ".pattern";
  if (!p->is_object() || p->size() != 1)
    return fail(where, "expected {\"String\": ...} or {\"Regex\": ...}, found " + p->dump());
  if (p->contains("String")) {
    VOLT_ASSIGN_OR_RETURN(std::string s, str(*p, where, "String"));
    if (literal) {
      *literal = s;
      return std::shared_ptr<const Regex>();
    }
    auto re = Regex::literal(s);
    if (!re.ok())
      return fail(where + ".String", re.message());
    return *re;
  }
  if (p->contains("Regex")) {
    VOLT_ASSIGN_OR_RETURN(std::string s, str(*p, where, "Regex"));
    auto re = Regex::compile(s);
    if (!re.ok())
      return fail(where + ".Regex", re.message());
    return *re;
  }
  return fail(where, "expected {\"String\": ...} or {\"Regex\": ...}, found " + p->dump());
}

Result<std::unique_ptr<BpeModel>> TokenizerLoader::model(const Json &j,
                                                         const std::string &path) const {
  if (!j.is_object())
    return fail(wrongKind(path, "an object", j));
  std::string type = j.contains("type") ? "" : "BPE"; // older files leave out BPE's type
  if (type.empty()) {
    VOLT_ASSIGN_OR_RETURN(type, str(j, path, "type"));
  }
  if (type != "BPE")
    return unsupported(path, type, {"BPE"});
  if (auto it = j.find("dropout");
      it != j.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0))
    return fail(path + ".dropout",
                "unsupported " + it->dump() + " (only null: encoding must be deterministic)");

  VOLT_ASSIGN_OR_RETURN(const Json *vocabJson, member(j, path, "vocab"));
  if (!vocabJson->is_object())
    return fail(wrongKind(path + ".vocab", "an object", *vocabJson));
  Vocab vocab;
  vocab.reserve(vocabJson->size());
  for (auto it = vocabJson->begin(); it != vocabJson->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > INT32_MAX)
      return fail(path + ".vocab[\"" + it.key() + "\"]",
                  "expected a non-negative integer id, found " + it.value().dump());
    vocab.emplace(it.key(), static_cast<int32_t>(it.value().get<int64_t>()));
  }

  std::vector<std::pair<std::string, std::string>> merges;
  if (auto it = j.find("merges"); it != j.end() && !it->is_null()) {
    if (!it->is_array())
      return fail(wrongKind(path + ".merges", "an array", *it));
    merges.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
      const Json &m = (*it)[i];
      std::string where = path + ".merges[" + std::to_string(i) + "]";
      if (m.is_string()) {
        const std::string &s = m.get_ref<const std::string &>();
        size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
          return fail(where, "expected \"left right\" (one space), found \"" + s + "\"");
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return fail(where, "expected \"left right\" or [left, right], found " + m.dump());
      }
    }
  }

  BpeOptions o;
  VOLT_ASSIGN_OR_RETURN(o.unkToken, str(j, path, "unk_token", ""));
  VOLT_ASSIGN_OR_RETURN(o.fuseUnk, boolean(j, path, "fuse_unk", false));
  VOLT_ASSIGN_OR_RETURN(o.byteFallback, boolean(j, path, "byte_fallback", false));
  VOLT_ASSIGN_OR_RETURN(o.ignoreMerges, boolean(j, path, "ignore_merges", false));
  VOLT_ASSIGN_OR_RETURN(o.continuingSubwordPrefix, str(j, path, "continuing_subword_prefix", ""));
  VOLT_ASSIGN_OR_RETURN(o.endOfWordSuffix, str(j, path, "end_of_word_suffix", ""));
  auto m = BpeModel::create(std::move(vocab), merges, std::move(o));
  if (!m.ok())
    return fail(Error(path + "." + m.message().substr(std::string("model.").size())));
  return std::move(*m);
}

Result<std::unique_ptr<Normalizer>> TokenizerLoader::normalizer(const Json &j,
                                                                const std::string &path) const {
  VOLT_ASSIGN_OR_RETURN(std::string type, typeOf(j, path));
  if (type == "NFC")
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(NormalForm::NFC));
  if (type == "NFD")
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(NormalForm::NFD));
  if (type == "NFKC")
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(NormalForm::NFKC));
  if (type == "NFKD")
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(NormalForm::NFKD));
  if (type == "Lowercase")
    return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  if (type == "Strip") {
    VOLT_ASSIGN_OR_RETURN(bool left, boolean(j, path, "strip_left", true));
    VOLT_ASSIGN_OR_RETURN(bool right, boolean(j, path, "strip_right", true));
    return std::unique_ptr<Normalizer>(new StripNormalizer(left, right));
  }
  if (type == "Prepend") {
    VOLT_ASSIGN_OR_RETURN(std::string prefix, str(j, path, "prepend"));
    return std::unique_ptr<Normalizer>(new PrependNormalizer(std::move(prefix)));
  }
  if (type == "Replace") {
    std::string literal;
    VOLT_ASSIGN_OR_RETURN(auto regex, pattern(j, path, &literal));
    VOLT_ASSIGN_OR_RETURN(std::string content, str(j, path, "content"));
    return std::unique_ptr<Normalizer>(
        new ReplaceNormalizer(std::move(literal), std::move(regex), std::move(content)));
  }
  if (type == "Sequence") {
    VOLT_ASSIGN_OR_RETURN(const Json *items, member(j, path, "normalizers"));
    if (!items->is_array())
      return fail(wrongKind(path + ".normalizers", "an array", *items));
    std::vector<std::unique_ptr<Normalizer>> list;
    for (size_t i = 0; i < items->size(); ++i) {
      VOLT_ASSIGN_OR_RETURN(
          auto n, normalizer((*items)[i], path + ".normalizers[" + std::to_string(i) + "]"));
      list.push_back(std::move(n));
    }
    return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(list)));
  }
  return unsupported(
      path, type,
      {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "Prepend", "Replace", "Sequence"});
}

Result<std::unique_ptr<PreTokenizer>> TokenizerLoader::preTokenizer(const Json &j,
                                                                    const std::string &path) const {
  VOLT_ASSIGN_OR_RETURN(std::string type, typeOf(j, path));
  if (type == "Split") {
    VOLT_ASSIGN_OR_RETURN(auto regex, pattern(j, path, nullptr));
    VOLT_ASSIGN_OR_RETURN(std::string b, str(j, path, "behavior"));
    static const std::vector<std::pair<std::string, SplitBehavior>> kBehaviors = {
        {"Removed", SplitBehavior::Removed},
        {"Isolated", SplitBehavior::Isolated},
        {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
        {"MergedWithNext", SplitBehavior::MergedWithNext},
        {"Contiguous", SplitBehavior::Contiguous}};
    std::optional<SplitBehavior> behavior;
    std::vector<std::string> names;
    for (const auto &[name, value] : kBehaviors) {
      names.push_back(name);
      if (name == b)
        behavior = value;
    }
    if (!behavior)
      return fail(path + ".behavior",
                  "unsupported '" + b + "' (supported: " + joinList(names) + ")");
    VOLT_ASSIGN_OR_RETURN(bool invert, boolean(j, path, "invert", false));
    return std::unique_ptr<PreTokenizer>(
        new SplitPreTokenizer(std::move(regex), *behavior, invert));
  }
  if (type == "ByteLevel") {
    VOLT_ASSIGN_OR_RETURN(bool prefix, boolean(j, path, "add_prefix_space", true));
    VOLT_ASSIGN_OR_RETURN(bool useRegex, boolean(j, path, "use_regex", true));
    std::shared_ptr<const Regex> regex;
    if (useRegex) {
      auto re = Regex::compile(kGpt2Pattern);
      if (!re.ok())
        return fail(path, re.message());
      regex = *re;
    }
    return std::unique_ptr<PreTokenizer>(new ByteLevelPreTokenizer(prefix, std::move(regex)));
  }
  if (type == "Metaspace") {
    VOLT_ASSIGN_OR_RETURN(std::string replacement, str(j, path, "replacement", "\u2581"));
    if (replacement.empty() ||
        utf8Length(static_cast<uint8_t>(replacement[0])) != replacement.size())
      return fail(path + ".replacement", "expected one character, found '" + replacement + "'");
    PrependScheme scheme = PrependScheme::Always;
    if (j.contains("prepend_scheme")) {
      VOLT_ASSIGN_OR_RETURN(std::string s, str(j, path, "prepend_scheme"));
      if (s == "always")
        scheme = PrependScheme::Always;
      else if (s == "first")
        scheme = PrependScheme::First;
      else if (s == "never")
        scheme = PrependScheme::Never;
      else
        return fail(path + ".prepend_scheme",
                    "unsupported '" + s + "' (supported: always, first, never)");
    } else {
      VOLT_ASSIGN_OR_RETURN(bool prefix, boolean(j, path, "add_prefix_space", true));
      scheme = prefix ? PrependScheme::Always : PrependScheme::Never;
    }
    VOLT_ASSIGN_OR_RETURN(bool split, boolean(j, path, "split", true));
    return std::unique_ptr<PreTokenizer>(
        new MetaspacePreTokenizer(std::move(replacement), scheme, split));
  }
  if (type == "Digits") {
    VOLT_ASSIGN_OR_RETURN(bool individual, boolean(j, path, "individual_digits", false));
    auto re = Regex::compile(individual ? "\\p{N}" : "\\p{N}+");
    if (!re.ok())
      return fail(path, re.message());
    return std::unique_ptr<PreTokenizer>(
        new SplitPreTokenizer(*re, SplitBehavior::Isolated, false));
  }
  if (type == "Sequence") {
    VOLT_ASSIGN_OR_RETURN(const Json *items, member(j, path, "pretokenizers"));
    if (!items->is_array())
      return fail(wrongKind(path + ".pretokenizers", "an array", *items));
    std::vector<std::unique_ptr<PreTokenizer>> list;
    for (size_t i = 0; i < items->size(); ++i) {
      VOLT_ASSIGN_OR_RETURN(
          auto p, preTokenizer((*items)[i], path + ".pretokenizers[" + std::to_string(i) + "]"));
      list.push_back(std::move(p));
    }
    return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(list)));
  }
  return unsupported(path, type, {"ByteLevel", "Digits", "Metaspace", "Sequence", "Split"});
}

Result<std::unique_ptr<Decoder>> TokenizerLoader::decoder(const Json &j,
                                                          const std::string &path) const {
  VOLT_ASSIGN_OR_RETURN(std::string type, typeOf(j, path));
  if (type == "ByteLevel")
    return std::unique_ptr<Decoder>(new ByteLevelDecoder());
  if (type == "ByteFallback")
    return std::unique_ptr<Decoder>(new ByteFallbackDecoder());
  if (type == "Fuse")
    return std::unique_ptr<Decoder>(new FuseDecoder());
  if (type == "Strip") {
    VOLT_ASSIGN_OR_RETURN(std::string content, str(j, path, "content"));
    if (content.empty() || utf8Length(static_cast<uint8_t>(content[0])) != content.size() ||
        !isValidUtf8(content))
      return fail(path + ".content", "expected one character, found '" + content + "'");
    VOLT_ASSIGN_OR_RETURN(int64_t start, integer(j, path, "start", 0));
    VOLT_ASSIGN_OR_RETURN(int64_t stop, integer(j, path, "stop", 0));
    if (start < 0 || stop < 0)
      return fail(path, "expected non-negative start and stop");
    return std::unique_ptr<Decoder>(new StripDecoder(
        decodeUtf8(content, 0).cp, static_cast<size_t>(start), static_cast<size_t>(stop)));
  }
  if (type == "Replace") {
    std::string literal;
    VOLT_ASSIGN_OR_RETURN(auto regex, pattern(j, path, &literal));
    VOLT_ASSIGN_OR_RETURN(std::string content, str(j, path, "content"));
    return std::unique_ptr<Decoder>(
        new ReplaceDecoder(std::move(literal), std::move(regex), std::move(content)));
  }
  if (type == "Metaspace") {
    VOLT_ASSIGN_OR_RETURN(std::string replacement, str(j, path, "replacement", "\u2581"));
    bool dropInFirst = true;
    if (j.contains("prepend_scheme")) {
      VOLT_ASSIGN_OR_RETURN(std::string s, str(j, path, "prepend_scheme"));
      if (s != "always" && s != "first" && s != "never")
        return fail(path + ".prepend_scheme",
                    "unsupported '" + s + "' (supported: always, first, never)");
      dropInFirst = s != "never";
    } else {
      VOLT_ASSIGN_OR_RETURN(dropInFirst, boolean(j, path, "add_prefix_space", true));
    }
    return std::unique_ptr<Decoder>(new MetaspaceDecoder(std::move(replacement), dropInFirst));
  }
  if (type == "Sequence") {
    VOLT_ASSIGN_OR_RETURN(const Json *items, member(j, path, "decoders"));
    if (!items->is_array())
      return fail(wrongKind(path + ".decoders", "an array", *items));
    std::vector<std::unique_ptr<Decoder>> list;
    for (size_t i = 0; i < items->size(); ++i) {
      VOLT_ASSIGN_OR_RETURN(auto d,
                            decoder((*items)[i], path + ".decoders[" + std::to_string(i) + "]"));
      list.push_back(std::move(d));
    }
    return std::unique_ptr<Decoder>(new SequenceDecoder(std::move(list)));
  }
  return unsupported(
      path, type,
      {"ByteFallback", "ByteLevel", "Fuse", "Metaspace", "Replace", "Sequence", "Strip"});
}

Status TokenizerLoader::postProcessor(const Json &j, const std::string &path,
                                      PostProcessor &out) const {
  VOLT_ASSIGN_OR_RETURN(std::string type, typeOf(j, path));
  if (type == "ByteLevel")
    return Status::success(); // offsets only
  if (type == "Sequence") {
    VOLT_ASSIGN_OR_RETURN(const Json *items, member(j, path, "processors"));
    if (!items->is_array())
      return fail(wrongKind(path + ".processors", "an array", *items));
    for (size_t i = 0; i < items->size(); ++i)
      VOLT_RETURN_IF_ERROR(
          postProcessor((*items)[i], path + ".processors[" + std::to_string(i) + "]", out));
    return Status::success();
  }
  // Each template wraps what earlier processors produced.
  std::vector<int32_t> before, after;
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    for (const char *key : {"cls", "sep"}) {
      VOLT_ASSIGN_OR_RETURN(const Json *pair, member(j, path, key));
      if (!pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer())
        return fail(path + "." + key, "expected [token, id], found " + pair->dump());
      (std::string(key) == "cls" ? before : after).push_back((*pair)[1].get<int32_t>());
    }
  } else if (type == "TemplateProcessing") {
    VOLT_ASSIGN_OR_RETURN(const Json *single, member(j, path, "single"));
    VOLT_ASSIGN_OR_RETURN(const Json *specials, member(j, path, "special_tokens"));
    if (!single->is_array())
      return fail(wrongKind(path + ".single", "an array", *single));
    if (!specials->is_object())
      return fail(wrongKind(path + ".special_tokens", "an object", *specials));
    bool seenA = false;
    for (size_t i = 0; i < single->size(); ++i) {
      const Json &piece = (*single)[i];
      std::string where = path + ".single[" + std::to_string(i) + "]";
      if (piece.is_object() && piece.contains("Sequence")) {
        if (seenA)
          return fail(where, "unsupported: the sequence appears twice in the template");
        seenA = true;
        continue;
      }
      if (!piece.is_object() || !piece.contains("SpecialToken") ||
          !piece["SpecialToken"].is_object())
        return fail(where, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}, found " +
                               piece.dump());
      VOLT_ASSIGN_OR_RETURN(std::string name,
                            str(piece["SpecialToken"], where + ".SpecialToken", "id"));
      auto st = specials->find(name);
      if (st == specials->end())
        return fail(where, "special token '" + name + "' is not in " + path + ".special_tokens");
      std::string stPath = path + ".special_tokens[\"" + name + "\"]";
      VOLT_ASSIGN_OR_RETURN(const Json *ids, member(*st, stPath, "ids"));
      if (!ids->is_array())
        return fail(wrongKind(stPath + ".ids", "an array", *ids));
      for (const Json &id : *ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          return fail(stPath + ".ids", "expected non-negative integer ids, found " + id.dump());
        (seenA ? after : before).push_back(id.get<int32_t>());
      }
    }
    if (!seenA)
      return fail(path + ".single", "expected the sequence ($A) in the template");
  } else {
    return unsupported(
        path, type,
        {"BertProcessing", "ByteLevel", "RobertaProcessing", "Sequence", "TemplateProcessing"});
  }
  out.before.insert(out.before.begin(), before.begin(), before.end());
  out.after.insert(out.after.end(), after.begin(), after.end());
  return Status::success();
}

Result<std::vector<AddedToken>> TokenizerLoader::addedTokens(const Json &j,
                                                             const std::string &path) const {
  std::vector<AddedToken> out;
  if (j.is_null())
    return out;
  if (!j.is_array())
    return fail(wrongKind(path, "an array", j));
  for (size_t i = 0; i < j.size(); ++i) {
    const Json &t = j[i];
    std::string where = path + "[" + std::to_string(i) + "]";
    if (!t.is_object())
      return fail(wrongKind(where, "an object", t));
    AddedToken a;
    VOLT_ASSIGN_OR_RETURN(int64_t id, integer(t, where, "id"));
    if (id < 0 || id > INT32_MAX)
      return fail(where + ".id", "expected a non-negative id, found " + std::to_string(id));
    // Ids index tables (as model.vocab's do): an absurd one is refused.
    if (id > kMaxTokenId)
      return fail(where + ".id", std::to_string(id) + " is above the largest supported id " +
                                     std::to_string(kMaxTokenId));
    a.id = static_cast<int32_t>(id);
    VOLT_ASSIGN_OR_RETURN(a.content, str(t, where, "content"));
    if (a.content.empty())
      return fail(where + ".content", "expected a non-empty token");
    if (!isValidUtf8(a.content))
      return fail(where + ".content", "expected valid UTF-8");
    VOLT_ASSIGN_OR_RETURN(a.special, boolean(t, where, "special", false));
    VOLT_ASSIGN_OR_RETURN(a.singleWord, boolean(t, where, "single_word", false));
    VOLT_ASSIGN_OR_RETURN(a.lstrip, boolean(t, where, "lstrip", false));
    VOLT_ASSIGN_OR_RETURN(a.rstrip, boolean(t, where, "rstrip", false));
    VOLT_ASSIGN_OR_RETURN(a.normalized, boolean(t, where, "normalized", !a.special));
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::unique_ptr<Tokenizer>> TokenizerLoader::load(std::string_view text) {
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::exception &e) {
    return Error(origin_ + ": invalid JSON: " + e.what());
  }
  if (!root.is_object())
    return fail(wrongKind("(root)", "an object", root));
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  VOLT_ASSIGN_OR_RETURN(const Json *modelJson, member(root, "(root)", "model"));
  VOLT_ASSIGN_OR_RETURN(t->model_, model(*modelJson, "model"));
  auto present = [&](const char *key) { return root.contains(key) && !root[key].is_null(); };
  if (present("normalizer")) {
    VOLT_ASSIGN_OR_RETURN(t->normalizer_, normalizer(root["normalizer"], "normalizer"));
  }
  if (present("pre_tokenizer")) {
    VOLT_ASSIGN_OR_RETURN(t->preTokenizer_, preTokenizer(root["pre_tokenizer"], "pre_tokenizer"));
  }
  if (present("decoder")) {
    VOLT_ASSIGN_OR_RETURN(t->decoder_, decoder(root["decoder"], "decoder"));
  }
  if (present("post_processor")) {
    t->postProcessor_ = std::make_unique<PostProcessor>();
    VOLT_RETURN_IF_ERROR(
        postProcessor(root["post_processor"], "post_processor", *t->postProcessor_));
  }
  if (root.contains("added_tokens")) {
    VOLT_ASSIGN_OR_RETURN(t->addedTokens_, addedTokens(root["added_tokens"], "added_tokens"));
  }

  size_t limit = t->model_->idLimit();
  for (const AddedToken &a : t->addedTokens_)
    limit = std::max(limit, static_cast<size_t>(a.id) + 1);
  t->vocabSize_ = limit;
  t->addedById_.assign(limit, -1);
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> rawPatterns, normalizedPatterns;
  for (size_t i = 0; i < t->addedTokens_.size(); ++i) {
    const AddedToken &a = t->addedTokens_[i];
    if (t->addedById_[a.id] < 0)
      t->addedById_[a.id] = static_cast<int32_t>(i);
    if (a.normalized) {
      std::string p = a.content;
      if (t->normalizer_)
        t->normalizer_->normalize(p);
      normalized.push_back(a);
      normalizedPatterns.push_back(std::move(p));
    } else {
      raw.push_back(a);
      rawPatterns.push_back(a.content);
    }
  }
  if (t->postProcessor_) {
    for (const auto *ids : {&t->postProcessor_->before, &t->postProcessor_->after})
      for (int32_t id : *ids)
        if (static_cast<size_t>(id) >= limit ||
            (!t->model_->idToToken(id) && t->addedById_[id] < 0))
          return fail("post_processor",
                      "special token id " + std::to_string(id) + " is not in the vocabulary");
  }
  t->rawMatcher_ = std::make_unique<AddedTokenMatcher>(std::move(raw), rawPatterns);
  t->normalizedMatcher_ =
      std::make_unique<AddedTokenMatcher>(std::move(normalized), normalizedPatterns);
  return t;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::fromJson(std::string_view json,
                                                       std::string_view origin) {
  return TokenizerLoader(std::string(origin)).load(json);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::fromFile(const std::string &path) {
  VOLT_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  auto bytes = file->bytes();
  return fromJson(std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()),
                  path);
}

} // namespace volt::tok
