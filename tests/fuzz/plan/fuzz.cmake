# The plan loader: the FlatBuffers verifier and the consistency checks
# behind LoadedPlan::verifyBuffer, on arbitrary bytes.
find_package(FlatBuffers REQUIRED)
find_program(FLATC flatc REQUIRED)
set(planHeader ${CMAKE_BINARY_DIR}/runtime/schema/plan_generated.h)
add_custom_command(
  OUTPUT ${planHeader}
  COMMAND ${FLATC} --cpp --scoped-enums -o ${CMAKE_BINARY_DIR}/runtime/schema
          ${VOLT_SOURCE_DIR}/runtime/schema/plan.fbs
  DEPENDS ${VOLT_SOURCE_DIR}/runtime/schema/plan.fbs
  VERBATIM)
volt_fuzz_target(plan_loader_fuzzer
  SOURCES tests/fuzz/plan/PlanLoaderFuzzer.cpp
          runtime/plan/PlanFile.cpp
          runtime/support/MappedFile.cpp
  LIBS PkgConfig::XXHASH flatbuffers::flatbuffers
  CORPUS tests/fuzz/plan/corpus)
target_sources(plan_loader_fuzzer PRIVATE ${planHeader})
target_include_directories(plan_loader_fuzzer PRIVATE ${CMAKE_BINARY_DIR})
