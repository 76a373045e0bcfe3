# Installs the weft build in WEFT_BUILD_DIR into SCRATCH_DIR/prefix, then builds
# and runs the consumer project against it with find_package(weft); checks
# on the way that no installed header names an internal type and that each
# compiles alone (the consumer's weft_headers_alone target).
file(REMOVE_RECURSE ${SCRATCH_DIR})

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run_step(${CMAKE_COMMAND} --install ${WEFT_BUILD_DIR} --prefix ${SCRATCH_DIR}/prefix)

# The installed headers are the API: none may name the library's internals
# (those are reached through friend helpers under src/).
file(GLOB_RECURSE installed_headers ${SCRATCH_DIR}/prefix/include/weft/*.h)
foreach(header ${installed_headers})
  file(STRINGS ${header} lines REGEX "internal::|namespace internal")
  if(lines)
    message(FATAL_ERROR "${header} names internals:\n${lines}")
  endif()
endforeach()
if(NOT installed_headers)
  message(FATAL_ERROR "nothing installed under ${SCRATCH_DIR}/prefix/include/weft")
endif()
run_step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${SCRATCH_DIR}/build
  -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${SCRATCH_DIR}/prefix
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run_step(${CMAKE_COMMAND} --build ${SCRATCH_DIR}/build)
run_step(${SCRATCH_DIR}/build/weft_consumer)
