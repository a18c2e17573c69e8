# tests/install/install_test.cmake: ctest's "install.find_package" test (cmake -P). Installs the
# build into a fresh prefix, configures examples/ against it with find_package(amk), builds
# decode_loop and runs it on the bundled tiny Llama. Inputs: BUILD_DIR SOURCE_DIR WORK_DIR
# CXX_COMPILER BUILD_TYPE EXTRA_FLAGS (compile + link flags the libraries were built with).
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(STEP_OUT "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f lib/cmake/amk/amkConfig.cmake lib/cmake/amk/amkConfigVersion.cmake include/amk/vm/session.h
          include/amk/ir/opcodes.def bin/amk-run)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install test: ${prefix}/${f} was not installed")
  endif()
endforeach()

step("configure examples/ against the installed package"
     ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
     "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
step("build decode_loop" ${CMAKE_COMMAND} --build ${WORK_DIR}/build -j1)
step("run decode_loop" ${WORK_DIR}/build/decode_loop ${SOURCE_DIR}/examples/tiny_llama/program.json
     ${SOURCE_DIR}/tests/fixtures/tiny_llama/model.safetensors 4)
if(NOT STEP_OUT MATCHES "backend cpu" OR NOT STEP_OUT MATCHES "token")
  message(FATAL_ERROR "install test: unexpected decode_loop output:\n${STEP_OUT}")
endif()
message(STATUS "install test: decode_loop built against ${prefix} ran:\n${STEP_OUT}")
