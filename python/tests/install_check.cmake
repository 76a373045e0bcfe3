# Installs the build into a scratch prefix and imports the package from
# where `cmake --install` put it, with Debian's python3; and checks that
# this place, under /usr/local, is on that python3's own sys.path.
#   cmake -DBUILD_DIR=... -DSCRATCH=... -DPYTHON=... -DSITE=... -P install_check.cmake
file(REMOVE_RECURSE ${SCRATCH})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${SCRATCH}
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${SCRATCH}/${SITE}/..
    ${PYTHON} -c "import weft, sys; print(weft.get_num_threads()); print(weft.__file__)"
  WORKING_DIRECTORY ${SCRATCH}  # Not the build tree, which holds weft/ too.
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^[0-9]+\n${SCRATCH}/${SITE}/__init__.py")
  message(FATAL_ERROR "import weft from the installed tree failed:\n${out}${err}")
endif()
execute_process(
  COMMAND ${PYTHON} -c "import sys; print('\\n'.join(sys.path))"
  OUTPUT_VARIABLE path)
get_filename_component(site_dir /usr/local/${SITE} DIRECTORY)
string(FIND "${path}" "${site_dir}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${site_dir} is not on ${PYTHON}'s sys.path:\n${path}")
endif()
message(STATUS "installed package imports; ${site_dir} is on sys.path")
