//===- ConformanceTest.cpp - volt's renders against Python jinja2's -------===//
//
// Renders every case of tests/conformance/chat/expectations.json (real chat
// templates of Qwen2.5, Qwen3, Llama 3.1/3.2, Mistral v0.3, Mixtral, Hermes 3
// and functionary over 46 conversations, written by generate_expectations.py with jinja2 set up
// as Hugging Face sets it up) and compares byte for byte. Where jinja2
// failed, volt must fail too; where the template itself raised, with the
// same message.
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/ChatTemplate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace volt::chat {
namespace {

const std::string kDir = std::string(VOLT_SOURCE_DIR) + "/tests/conformance/chat/";

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The time generate_expectations.py fixes strftime_now to.
std::tm fixedNow() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 14;
  tm.tm_hour = 9;
  tm.tm_min = 26;
  tm.tm_sec = 53;
  tm.tm_wday = 5;
  tm.tm_yday = 72;
  return tm;
}

TEST(ChatConformance, MatchesPythonJinja2) {
  auto expectations = nlohmann::ordered_json::parse(readText(kDir + "expectations.json"));
  auto conversations = nlohmann::ordered_json::parse(readText(kDir + "conversations.json"));
  ASSERT_GE(conversations.size(), 40u);
  std::map<std::string, ChatTemplate> templates;
  size_t cases = 0, failures = 0;
  for (const auto &c : expectations["cases"]) {
    std::string name = c["template"].get<std::string>();
    auto it = templates.find(name);
    if (it == templates.end()) {
      std::string path = kDir;
      path += "templates/";
      path += name;
      auto parsed = ChatTemplate::parse(readText(path), name);
      ASSERT_TRUE(parsed.ok()) << parsed.message();
      parsed->setFixedTime(fixedNow());
      it = templates.emplace(name, std::move(*parsed)).first;
    }
    const auto &conversation = conversations.at(c["conversation"].get<std::string>());
    const nlohmann::ordered_json *tools =
        conversation.contains("tools") ? &conversation["tools"] : nullptr;
    Result<std::string> got = it->second.apply(
        conversation["messages"], c["add_generation_prompt"].get<bool>(), tools, c["extra"]);
    ++cases;
    std::string label = name + " / " + c["conversation"].get<std::string>() +
                        " / add_generation_prompt=" + c["add_generation_prompt"].dump() +
                        " / extra=" + c["extra"].dump();
    bool ok;
    if (c.contains("output")) {
      ok = got.ok() && *got == c["output"].get<std::string>();
      EXPECT_TRUE(ok) << label << "\n  expected: " << c["output"].dump() << "\n  got:      "
                      << (got.ok() ? nlohmann::json(*got).dump() : "error: " + got.message());
    } else {
      std::string expected = c["error"].get<std::string>();
      bool raised = c["raised"].get<bool>();
      std::string suffix = "the template raised an error: " + expected;
      ok = !got.ok() && (!raised || (got.message().size() >= suffix.size() &&
                                     got.message().compare(got.message().size() - suffix.size(),
                                                           suffix.size(), suffix) == 0));
      EXPECT_TRUE(ok) << label << "\n  expected error: " << expected << "\n  got: "
                      << (got.ok() ? "output " + nlohmann::json(*got).dump()
                                   : "error: " + got.message());
    }
    failures += ok ? 0 : 1;
  }
  EXPECT_GE(cases, 1000u);
  EXPECT_EQ(failures, 0u) << failures << " of " << cases << " cases differ from jinja2";
}

} // namespace
} // namespace volt::chat
