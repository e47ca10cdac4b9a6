volt_fuzz_target(safetensors_header_fuzzer
  SOURCES tests/fuzz/safetensors/SafetensorsHeaderFuzzer.cpp
          compiler/model/Safetensors.cpp
          runtime/support/MappedFile.cpp
          runtime/support/Strings.cpp
  LIBS nlohmann_json::nlohmann_json
  CORPUS tests/fuzz/safetensors/corpus)
