# The plan schema's generated code, for the main build (runtime/schema) and
# for the fuzzers' project (tests/fuzz), which build it the same way.
#
# volt_plan_schema(<prefix> SOURCE_DIR <runtime/schema> OUTPUT_DIR <dir>)
# makes:
#   <prefix>_ops       the op table of Ops.def (a library; no generated code)
#   volt-opschema      the generator: Ops.def -> ops.fbs and plan-ops.md
#   <prefix>_gen       a target for OUTPUT_DIR/{plan,types,ops}_generated.h
#                      (flatc; the op params tables with flatc's object API
#                      and reflection tables, which tests read)
#                      and OUTPUT_DIR/plan-ops.md
function(volt_plan_schema prefix)
  cmake_parse_arguments(ARG "" "SOURCE_DIR;OUTPUT_DIR" "" ${ARGN})
  find_program(FLATC flatc REQUIRED)
  set(src ${ARG_SOURCE_DIR})
  set(gen ${ARG_OUTPUT_DIR})
  add_library(${prefix}_ops ${src}/Ops.cpp)
  add_executable(volt-opschema ${src}/OpSchemaGen.cpp)
  target_link_libraries(volt-opschema PRIVATE ${prefix}_ops)
  add_custom_command(
    OUTPUT ${gen}/ops.fbs
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}
    COMMAND volt-opschema fbs ${gen}/ops.fbs
    DEPENDS volt-opschema ${src}/Ops.def
    COMMENT "Generating the op kinds' schema (ops.fbs) from Ops.def"
    VERBATIM)
  add_custom_command(
    OUTPUT ${gen}/plan-ops.md
    COMMAND volt-opschema md ${gen}/plan-ops.md
    DEPENDS volt-opschema ${src}/Ops.def
    COMMENT "Generating the op reference (plan-ops.md) from Ops.def"
    VERBATIM)
  add_custom_command(
    OUTPUT ${gen}/plan_generated.h ${gen}/types_generated.h ${gen}/ops_generated.h
    COMMAND ${FLATC} --cpp --scoped-enums -I ${gen} -I ${src} -o ${gen} ${src}/plan.fbs
    COMMAND ${FLATC} --cpp --scoped-enums --gen-object-api --reflect-names -I ${src} -o ${gen}
            ${src}/types.fbs ${gen}/ops.fbs
    DEPENDS ${src}/plan.fbs ${src}/types.fbs ${gen}/ops.fbs
    COMMENT "Generating the plan schema's C++ (flatc)"
    VERBATIM)
  add_custom_target(${prefix}_gen DEPENDS ${gen}/plan_generated.h ${gen}/plan-ops.md)
endfunction()
