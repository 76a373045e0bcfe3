# Installs the weft build in WEFT_BUILD_DIR into SCRATCH_DIR/prefix, then builds
# and runs the consumer project against it with find_package(weft).
file(REMOVE_RECURSE ${SCRATCH_DIR})

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run_step(${CMAKE_COMMAND} --install ${WEFT_BUILD_DIR} --prefix ${SCRATCH_DIR}/prefix)
run_step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${SCRATCH_DIR}/build
  -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${SCRATCH_DIR}/prefix
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run_step(${CMAKE_COMMAND} --build ${SCRATCH_DIR}/build)
run_step(${SCRATCH_DIR}/build/weft_consumer)
