# Helpers for targets that use MLIR (dialects/ and compiler/ only).

# volt_mlir_target(<target>): MLIR headers and libraries for one target.
function(volt_mlir_target target)
  target_include_directories(${target} SYSTEM PUBLIC ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  target_include_directories(${target} PUBLIC ${CMAKE_BINARY_DIR})
  target_link_libraries(${target} PUBLIC MLIR LLVM)
  separate_arguments(llvmDefinitions UNIX_COMMAND "${LLVM_DEFINITIONS}")
  target_compile_definitions(${target} PUBLIC ${llvmDefinitions})
  # LLVM headers are warning-heavy under -Wextra.
  target_compile_options(${target} PRIVATE -Wno-unused-parameter -Wno-comment)
endfunction()
