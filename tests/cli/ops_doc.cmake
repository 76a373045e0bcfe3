# docs/ops.md is `weft ops --markdown`, generated from the op registry.
#   cmake -DWEFT=<binary> -DDOC=<docs/ops.md> -DMODE=write|check -P ops_doc.cmake
# write: regenerates the file (the `ops_doc` build target);
# check: fails when the file differs from what the registry gives (CI).
execute_process(COMMAND ${WEFT} ops --markdown
  RESULT_VARIABLE rc OUTPUT_VARIABLE generated ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft ops --markdown failed (${rc}): ${err}")
endif()
if(MODE STREQUAL "write")
  file(WRITE ${DOC} "${generated}")
  message(STATUS "wrote ${DOC}")
  return()
endif()
file(READ ${DOC} checked_in)
if(NOT checked_in STREQUAL generated)
  message(FATAL_ERROR "${DOC} is not current: rebuild it with "
    "`cmake --build --preset release --target ops_doc` and commit it")
endif()
message(STATUS "${DOC} matches the op registry")
