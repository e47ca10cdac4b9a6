# Request bodies come from any client: parsing and validating them must
# give a request or an error naming the field, never a crash.
volt_fuzz_target(server_request_fuzzer
  SOURCES tests/fuzz/server/RequestFuzzer.cpp
          runtime/server/RequestParser.cpp
          runtime/server/JsonFields.cpp
          runtime/server/ApiError.cpp
          runtime/engine/GenerationDefaults.cpp
          runtime/engine/SamplingParams.cpp
          runtime/support/Strings.cpp
  LIBS nlohmann_json::nlohmann_json
  CORPUS tests/fuzz/server/corpus)
