//===- ChatTemplate.cpp - parse, render, and load from a model directory --===//
#include "runtime/chat/ChatTemplate.h"

#include "runtime/chat/Lexer.h"
#include "runtime/chat/Parser.h"
#include "runtime/support/Strings.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace volt::chat {

namespace {

Result<Value> convert(const nlohmann::ordered_json &j, const std::string &what, uint32_t depth,
                      uint32_t maxDepth) {
  if (depth > maxDepth)
    return Error(what + " nests deeper than " + std::to_string(maxDepth) + " levels");
  switch (j.type()) {
  case nlohmann::json::value_t::null:
  case nlohmann::json::value_t::discarded:
    return Value::none();
  case nlohmann::json::value_t::boolean:
    return Value::boolean(j.get<bool>());
  case nlohmann::json::value_t::number_integer:
    return Value::integer(j.get<int64_t>());
  case nlohmann::json::value_t::number_unsigned: {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return Error(what + " holds an integer beyond 64 bits (" + std::to_string(u) + ")");
    return Value::integer(static_cast<int64_t>(u));
  }
  case nlohmann::json::value_t::number_float:
    return Value::number(j.get<double>());
  case nlohmann::json::value_t::string:
    return Value::string(j.get<std::string>());
  case nlohmann::json::value_t::array: {
    ValueList items;
    items.reserve(j.size());
    for (const auto &item : j) {
      VOLT_ASSIGN_OR_RETURN(Value v, convert(item, what, depth + 1, maxDepth));
      items.push_back(std::move(v));
    }
    return Value::list(std::move(items));
  }
  case nlohmann::json::value_t::object: {
    auto d = std::make_shared<Dict>();
    for (const auto &[key, item] : j.items()) {
      VOLT_ASSIGN_OR_RETURN(Value v, convert(item, what, depth + 1, maxDepth));
      d->set(Value::string(key), std::move(v));
    }
    return Value::dict(std::move(d));
  }
  case nlohmann::json::value_t::binary:
    return Error(what + " holds binary data, which a template cannot use");
  }
  return Error(what + " holds an unknown JSON type");
}

Result<std::string> readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(path.string() + ": cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error(path.string() + ": reading the file failed");
  return text.str();
}

Result<nlohmann::ordered_json> readJson(const std::filesystem::path &path) {
  VOLT_ASSIGN_OR_RETURN(std::string text, readFile(path));
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    return Error(path.string() + ": not valid JSON: " + e.what());
  }
}

} // namespace

Result<Value> valueFromJson(const nlohmann::ordered_json &json, const std::string &what,
                            uint32_t maxDepth) {
  return convert(json, what, 0, maxDepth);
}

Result<ChatTemplate> ChatTemplate::parse(std::string source, std::string origin) {
  VOLT_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, origin));
  VOLT_ASSIGN_OR_RETURN(StmtList body, parseTemplate(tokens, origin));
  ChatTemplate t;
  t.source_ = std::make_shared<const std::string>(std::move(source));
  t.origin_ = std::move(origin);
  t.body_ = std::make_shared<const StmtList>(std::move(body));
  return t;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json &context) const {
  if (!context.is_object())
    return Error(origin_ + ": the render context must be an object, found " +
                 std::string(context.type_name()));
  auto scope = std::make_shared<Scope>();
  for (const auto &[key, value] : context.items()) {
    VOLT_ASSIGN_OR_RETURN(Value v, valueFromJson(value, "the template variable '" + key + "'",
                                                 limits_.maxValueDepth));
    scope->vars[key] = std::move(v);
  }
  Interpreter interpreter(origin_, limits_, now_);
  return interpreter.render(*body_, scope);
}

Result<std::string> ChatTemplate::apply(const nlohmann::ordered_json &messages,
                                        bool addGenerationPrompt,
                                        const nlohmann::ordered_json *tools,
                                        const nlohmann::ordered_json &extraContext) const {
  if (!messages.is_array())
    return Error("chat messages must be a list, found " + std::string(messages.type_name()));
  if (!extraContext.is_null() && !extraContext.is_object())
    return Error("the extra template variables must be an object, found " +
                 std::string(extraContext.type_name()));
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = tools ? *tools : nlohmann::ordered_json(nullptr);
  context["documents"] = nullptr;
  context["add_generation_prompt"] = addGenerationPrompt;
  if (extraContext.is_object()) {
    for (const auto &[key, value] : extraContext.items()) {
      if (key == "messages" || key == "tools" || key == "add_generation_prompt")
        return Error("the extra template variables must not set '" + key +
                     "', which apply() passes itself");
      context[key] = value;
    }
  }
  return render(context);
}

Result<ChatTemplate> loadFromModelDir(const std::string &dir, const std::string &name) {
  namespace fs = std::filesystem;
  fs::path root(dir);
  fs::path jinja = root / "chat_template.jinja";
  std::error_code ec;
  if (fs::is_regular_file(jinja, ec)) {
    VOLT_ASSIGN_OR_RETURN(std::string source, readFile(jinja));
    return ChatTemplate::parse(std::move(source), jinja.string());
  }
  fs::path configPath = root / "tokenizer_config.json";
  if (!fs::is_regular_file(configPath, ec))
    return Error(dir + ": no chat template found (expected chat_template.jinja or "
                       "tokenizer_config.json with a 'chat_template' field)");
  VOLT_ASSIGN_OR_RETURN(nlohmann::ordered_json config, readJson(configPath));
  std::string where = configPath.string();
  if (!config.is_object() || !config.contains("chat_template"))
    return Error(where + ": no 'chat_template' field, and no chat_template.jinja beside it");
  const nlohmann::ordered_json &field = config["chat_template"];
  if (field.is_string())
    return ChatTemplate::parse(field.get<std::string>(), where + " chat_template");
  if (!field.is_array())
    return Error(where +
                 ": field 'chat_template': expected a string or a list of {name, "
                 "template}, found " +
                 std::string(field.type_name()));
  std::vector<std::string> names;
  for (size_t i = 0; i < field.size(); ++i) {
    const auto &entry = field[i];
    std::string at = where + ": field 'chat_template[" + std::to_string(i) + "]'";
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string())
      return Error(at + ": expected an object with string fields 'name' and 'template'");
    std::string entryName = entry["name"].get<std::string>();
    if (entryName == name) {
      std::string origin = where;
      origin += " chat_template '" + name + "'";
      return ChatTemplate::parse(entry["template"].get<std::string>(), origin);
    }
    names.push_back("'" + entryName);
    names.back() += "'";
  }
  return Error(where + ": field 'chat_template' has no template named '" + name + "' (it has " +
               (names.empty() ? std::string("none") : joinList(names)) + ")");
}

Result<nlohmann::ordered_json> loadSpecialTokens(const std::string &dir) {
  std::filesystem::path configPath = std::filesystem::path(dir) / "tokenizer_config.json";
  VOLT_ASSIGN_OR_RETURN(nlohmann::ordered_json config, readJson(configPath));
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!config.is_object())
    return Error(configPath.string() + ": expected a JSON object");
  for (const char *key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token"}) {
    if (!config.contains(key) || config[key].is_null())
      continue;
    const auto &token = config[key];
    if (token.is_string())
      out[key] = token;
    else if (token.is_object() && token.contains("content") && token["content"].is_string())
      out[key] = token["content"];
    else
      return Error(configPath.string() + ": field '" + key +
                   "': expected a string or an object with a string 'content'");
  }
  return out;
}

} // namespace volt::chat
