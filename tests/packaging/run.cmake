# Driver for the packaging tests (cmake -P). One MODE per ctest case:
#   install           configure rope alone (as a user would), `cmake --install` into PREFIX,
#                     and check the installed files
#   find_package      build and run the find_package consumer against PREFIX
#   add_subdirectory  build and run the consumer that vendors rope's source tree
#   fetchcontent      archive rope's source tree, build and run the FetchContent consumer
#   pkg_config        build the plain-Makefile consumer with `pkg-config --cflags rope`, run it
# Inputs (-D): MODE ROPE_SOURCE_DIR WORK_DIR PREFIX CXX BUILD_TYPE GENERATOR MAKE_PROGRAM
#              ROPE_VERSION ROPE_MAJOR
cmake_minimum_required(VERSION 3.14)

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGV}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

function(expect_file path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "missing after install: ${path}")
  endif()
endfunction()

# Includes the installed rope-config-version.cmake as find_package(rope <find> CONFIG) would
# in a project with sizeof(void*) = sizeof_ptr, and checks that it answers compatible.
function(rope_version_check find sizeof_ptr compatible)
  set(PACKAGE_FIND_NAME rope)
  set(PACKAGE_FIND_VERSION "${find}")
  string(REPLACE "." ";" _parts "${find}.0.0")
  list(GET _parts 0 PACKAGE_FIND_VERSION_MAJOR)
  list(GET _parts 1 PACKAGE_FIND_VERSION_MINOR)
  list(GET _parts 2 PACKAGE_FIND_VERSION_PATCH)
  set(CMAKE_SIZEOF_VOID_P ${sizeof_ptr})
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
  set(PACKAGE_VERSION_UNSUITABLE FALSE)
  include("${PREFIX}/share/cmake/rope/rope-config-version.cmake")
  if(PACKAGE_VERSION_UNSUITABLE)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(NOT PACKAGE_VERSION_COMPATIBLE STREQUAL compatible)
    message(FATAL_ERROR "rope ${PACKAGE_VERSION} for find_package(rope ${find}) with "
                        "sizeof(void*) = ${sizeof_ptr}: compatible = ${PACKAGE_VERSION_COMPATIBLE}, "
                        "expected ${compatible}")
  endif()
endfunction()

set(_generator -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND _generator "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
set(_common ${_generator} "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")

# Configures, builds and runs one CMake consumer project in WORK_DIR/<name>.
function(build_and_run_consumer name)
  set(bin "${WORK_DIR}/${name}")
  file(REMOVE_RECURSE "${bin}")
  run(${CMAKE_COMMAND} -S "${CMAKE_CURRENT_LIST_DIR}/${name}" -B "${bin}" ${_common} ${ARGN})
  run(${CMAKE_COMMAND} --build "${bin}")
  run("${bin}/consumer")
endfunction()

if(MODE STREQUAL "install")
  file(REMOVE_RECURSE "${WORK_DIR}/rope-build" "${PREFIX}")
  # Configured for one prefix, installed into another (`cmake --install --prefix`): the
  # consumers below then prove the CMake package and rope.pc locate themselves.
  run(${CMAKE_COMMAND} -S "${ROPE_SOURCE_DIR}" -B "${WORK_DIR}/rope-build" ${_common}
      "-DCMAKE_INSTALL_PREFIX=${WORK_DIR}/configured-prefix-unused" -DROPE_BUILD_TESTS=OFF
      -DROPE_BUILD_EXAMPLES=OFF -DROPE_BUILD_BENCHMARKS=OFF -DROPE_INSTALL=ON)
  run(${CMAKE_COMMAND} --install "${WORK_DIR}/rope-build" --prefix "${PREFIX}")
  if(EXISTS "${WORK_DIR}/configured-prefix-unused")
    message(FATAL_ERROR "cmake --install --prefix wrote into the configured prefix")
  endif()
  # Every public header is installed, and nothing else under include/.
  file(GLOB_RECURSE _src RELATIVE "${ROPE_SOURCE_DIR}/include" "${ROPE_SOURCE_DIR}/include/*")
  file(GLOB_RECURSE _dst RELATIVE "${PREFIX}/include" "${PREFIX}/include/*")
  list(SORT _src)
  list(SORT _dst)
  if(NOT _src STREQUAL _dst)
    message(FATAL_ERROR "installed headers differ from include/:\n  ${_dst}\n  vs ${_src}")
  endif()
  set(_cm "${PREFIX}/share/cmake/rope")
  foreach(f rope-config.cmake rope-config-version.cmake rope-targets.cmake)
    expect_file("${_cm}/${f}")
  endforeach()
  expect_file("${PREFIX}/share/pkgconfig/rope.pc")
  # The version file, evaluated the way find_package does: same major version accepted,
  # another major refused, and (arch-independent: headers only) a consumer with another
  # pointer size accepted.
  rope_version_check("${ROPE_VERSION}" 8 TRUE)
  rope_version_check("${ROPE_MAJOR}.0" 4 TRUE)
  math(EXPR _next "${ROPE_MAJOR} + 1")
  rope_version_check("${_next}.0" 8 FALSE)
  rope_version_check("99.0" 8 FALSE)
  message(STATUS "installed rope ${ROPE_VERSION} into ${PREFIX}")

elseif(MODE STREQUAL "find_package")
  build_and_run_consumer(find_package "-DCMAKE_PREFIX_PATH=${PREFIX}"
                         "-DROPE_EXPECTED_VERSION=${ROPE_VERSION}" "-DROPE_EXPECTED_MAJOR=${ROPE_MAJOR}")

elseif(MODE STREQUAL "add_subdirectory")
  build_and_run_consumer(add_subdirectory "-DROPE_SOURCE_DIR=${ROPE_SOURCE_DIR}")

elseif(MODE STREQUAL "fetchcontent")
  # What a release tarball holds: the library and its build files, no tests.
  set(_archive "${WORK_DIR}/rope-src.tar.gz")
  file(REMOVE "${_archive}")
  set(_paths)
  foreach(p CMakeLists.txt cmake include docs LICENSE README.md)
    if(EXISTS "${ROPE_SOURCE_DIR}/${p}")
      list(APPEND _paths ${p})
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -E tar czf "${_archive}" -- ${_paths}
                  WORKING_DIRECTORY "${ROPE_SOURCE_DIR}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not archive ${ROPE_SOURCE_DIR}")
  endif()
  file(SHA256 "${_archive}" _sha)
  build_and_run_consumer(fetchcontent "-DROPE_ARCHIVE=${_archive}" "-DROPE_ARCHIVE_SHA256=${_sha}")

elseif(MODE STREQUAL "pkg_config")
  find_program(PKG_CONFIG_EXECUTABLE pkg-config)
  find_program(MAKE_EXECUTABLE NAMES make gmake)
  if(NOT PKG_CONFIG_EXECUTABLE OR NOT MAKE_EXECUTABLE)
    message(FATAL_ERROR "pkg-config and make are required (Debian: scripts/deps.sh pkg-config make)")
  endif()
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")
  execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --modversion rope
                  OUTPUT_VARIABLE _pcver OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT _pcver STREQUAL ROPE_VERSION)
    message(FATAL_ERROR "pkg-config --modversion rope gave '${_pcver}', expected ${ROPE_VERSION}")
  endif()
  execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --cflags rope OUTPUT_VARIABLE _cflags
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  message(STATUS "pkg-config --cflags rope: ${_cflags}")
  set(bin "${WORK_DIR}/pkg_config")
  file(REMOVE_RECURSE "${bin}")
  file(MAKE_DIRECTORY "${bin}")
  execute_process(COMMAND ${MAKE_EXECUTABLE} -f "${CMAKE_CURRENT_LIST_DIR}/pkg_config/Makefile"
                          "CXX=${CXX}" "CXXFLAGS=-O2 -Wall -Wextra -Wpedantic -Werror"
                  WORKING_DIRECTORY "${bin}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "make with pkg-config failed (${rc})")
  endif()
  run("${bin}/consumer")

else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
