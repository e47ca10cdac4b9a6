# Chat templates come with downloaded models: any template text must parse
# and render to text or an error, never a crash, a hang or a sanitizer report.
volt_fuzz_target(chat_template_fuzzer
  SOURCES tests/fuzz/chat/ChatTemplateFuzzer.cpp
          runtime/chat/Text.cpp
          runtime/chat/Value.cpp
          runtime/chat/Lexer.cpp
          runtime/chat/Parser.cpp
          runtime/chat/Interpreter.cpp
          runtime/chat/Operators.cpp
          runtime/chat/Filters.cpp
          runtime/chat/Methods.cpp
          runtime/chat/Json.cpp
          runtime/chat/Format.cpp
          runtime/chat/ChatTemplate.cpp
          runtime/support/Strings.cpp
  LIBS nlohmann_json::nlohmann_json
  CORPUS tests/fuzz/chat/corpus)
