# The installed `weft tune --plot` works with the build tree out of reach:
# install into a scratch prefix, move the prefix elsewhere (so no path
# compiled in at build or install time is valid), and draw a PNG with the
# moved command; it must have used the moved prefix's script.
#   cmake -DBUILD_DIR=... -DSCRATCH=... -DGRAPH=... -P tune_plot_installed.cmake
file(REMOVE_RECURSE ${SCRATCH})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${SCRATCH}/prefix
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
file(RENAME ${SCRATCH}/prefix ${SCRATCH}/moved)
set(png ${SCRATCH}/tune.png)
execute_process(COMMAND ${SCRATCH}/moved/bin/weft tune ${GRAPH} --plot ${png}
  WORKING_DIRECTORY ${SCRATCH}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the moved weft tune --plot failed (${rc}):\n${out}${err}")
endif()
if(NOT err MATCHES "drew ${png} \\(with ${SCRATCH}/moved/share/weft/tune_plot.py\\)")
  message(FATAL_ERROR "it did not draw with the installed script:\n${err}")
endif()
file(READ ${png} magic LIMIT 4 HEX)
if(NOT magic STREQUAL "89504e47")
  message(FATAL_ERROR "${png} is not a PNG (starts ${magic})")
endif()
message(STATUS "the moved install drew ${png}")
