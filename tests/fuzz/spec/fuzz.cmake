# The deployment spec and SKU parsers read outside YAML: any text must give a
# validated struct or an error, never a crash, a hang or a sanitizer report.
# The built-in SKU files are embedded here the same way compiler/spec does it.
set(specBuiltinSkus ${CMAKE_BINARY_DIR}/spec/BuiltinSkus.cpp)
file(GLOB specSkuFiles CONFIGURE_DEPENDS ${VOLT_SOURCE_DIR}/specs/*.yaml)
add_custom_command(
  OUTPUT ${specBuiltinSkus}
  COMMAND ${CMAKE_COMMAND} -DINPUT_DIR=${VOLT_SOURCE_DIR}/specs -DOUTPUT=${specBuiltinSkus}
          -P ${VOLT_SOURCE_DIR}/compiler/spec/EmbedFiles.cmake
  DEPENDS ${specSkuFiles} ${VOLT_SOURCE_DIR}/compiler/spec/EmbedFiles.cmake
  VERBATIM)
set(specSources
  compiler/spec/DeploySpec.cpp
  compiler/spec/Diagnostics.cpp
  compiler/spec/Schema.cpp
  compiler/spec/Sku.cpp
  compiler/spec/SkuTable.cpp
  compiler/spec/YamlDocument.cpp
  runtime/support/Strings.cpp)

volt_fuzz_target(deploy_spec_fuzzer
  SOURCES tests/fuzz/spec/DeploySpecFuzzer.cpp ${specSources}
  LIBS yaml-cpp
  CORPUS tests/fuzz/spec/corpus/deploy)
target_sources(deploy_spec_fuzzer PRIVATE ${specBuiltinSkus})

volt_fuzz_target(sku_fuzzer
  SOURCES tests/fuzz/spec/SkuFuzzer.cpp ${specSources}
  LIBS yaml-cpp
  CORPUS tests/fuzz/spec/corpus/sku)
target_sources(sku_fuzzer PRIVATE ${specBuiltinSkus})
