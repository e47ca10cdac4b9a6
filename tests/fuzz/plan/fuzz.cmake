# The plan loader: the FlatBuffers verifier and the consistency checks
# behind LoadedPlan::verifyBuffer, on arbitrary bytes.
find_package(FlatBuffers REQUIRED)
include(${VOLT_SOURCE_DIR}/cmake/VoltSchema.cmake)
volt_plan_schema(fuzz_schema SOURCE_DIR ${VOLT_SOURCE_DIR}/runtime/schema
                 OUTPUT_DIR ${CMAKE_BINARY_DIR}/runtime/schema)
volt_fuzz_target(plan_loader_fuzzer
  SOURCES tests/fuzz/plan/PlanLoaderFuzzer.cpp
          runtime/plan/Caches.cpp
          runtime/plan/PlanFile.cpp
          runtime/schema/Ops.cpp
          runtime/support/MappedFile.cpp
  LIBS PkgConfig::XXHASH flatbuffers::flatbuffers
  CORPUS tests/fuzz/plan/corpus)
add_dependencies(plan_loader_fuzzer fuzz_schema_gen)
target_include_directories(plan_loader_fuzzer PRIVATE ${CMAKE_BINARY_DIR})
