# Runs one weft command line and checks its exit code and output.
#   cmake -DWEFT=<binary> -DARGS=<;-list> -DCODE=<exit code>
#         -DREGEX=<regex on stdout+stderr> [-DWORKDIR=<dir>] -P expect.cmake
execute_process(COMMAND ${WEFT} ${ARGS}
  WORKING_DIRECTORY ${WORKDIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc STREQUAL CODE)
  message(FATAL_ERROR "weft ${ARGS}: exit code ${rc}, expected ${CODE}\n${all}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "weft ${ARGS}: output does not match '${REGEX}':\n${all}")
endif()
message(STATUS "weft ${ARGS}: exit ${rc}, output matches '${REGEX}'")
