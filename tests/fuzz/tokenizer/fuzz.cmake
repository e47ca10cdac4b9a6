# Tokenizer fuzz targets: encode/decode/streaming of arbitrary bytes with a
# real tokenizer (mistral-v1, byte fallback), and tokenizer.json parsing.
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
set(tokenizerSources
  runtime/support/MappedFile.cpp
  runtime/support/Strings.cpp
  runtime/tokenizer/AddedVocabulary.cpp
  runtime/tokenizer/Bpe.cpp
  runtime/tokenizer/Decoding.cpp
  runtime/tokenizer/Pipeline.cpp
  runtime/tokenizer/Regex.cpp
  runtime/tokenizer/Tokenizer.cpp
  runtime/tokenizer/TokenizerJson.cpp
  runtime/tokenizer/Unicode.cpp)
set(tokenizerLibs PkgConfig::PCRE2 PkgConfig::ICU nlohmann_json::nlohmann_json)

volt_fuzz_target(tokenizer_encode_fuzz
  SOURCES tests/fuzz/tokenizer/TokenizerEncodeFuzz.cpp ${tokenizerSources}
  LIBS ${tokenizerLibs}
  CORPUS tests/fuzz/tokenizer/corpus)
target_compile_definitions(tokenizer_encode_fuzz PRIVATE VOLT_SOURCE_DIR="${VOLT_SOURCE_DIR}")

volt_fuzz_target(tokenizer_json_fuzz
  SOURCES tests/fuzz/tokenizer/TokenizerJsonFuzz.cpp ${tokenizerSources}
  LIBS ${tokenizerLibs}
  CORPUS tests/fuzz/tokenizer/json_corpus)
