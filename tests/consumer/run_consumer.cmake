# Script of the consumer_find_package test (cmake -P):
#   1. cmake --install <cuwrap build> --prefix <work>/prefix
#   2. configure <consumer project> with CMAKE_PREFIX_PATH=<work>/prefix, build it
#   3. run the consumer, which checks the version and uses both layers
# Every step's output is shown when it fails.
cmake_minimum_required(VERSION 3.22)
foreach(_var CUWRAP_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER EXPECTED_VERSION)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_consumer.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_prefix "${WORK_DIR}/prefix")
set(_build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} failed (${_rc}):\n${_out}")
  endif()
  message(STATUS "consumer: ${name}: ok")
  set(step_output "${_out}" PARENT_SCOPE)
endfunction()

step("install into ${_prefix}" ${CMAKE_COMMAND} --install "${CUWRAP_BUILD_DIR}" --prefix "${_prefix}")
foreach(_installed include/cuwrap/cuwrap.hpp include/cuwrap/driver.hpp include/cuwrap/version.hpp)
  if(NOT EXISTS "${_prefix}/${_installed}")
    message(FATAL_ERROR "consumer: ${_installed} was not installed")
  endif()
endforeach()

set(_configure ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${_build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${_prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCUWRAP_EXPECTED_VERSION=${EXPECTED_VERSION}")
if(BUILD_TYPE)
  list(APPEND _configure "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
if(CXX_FLAGS)
  list(APPEND _configure "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}")
endif()
step("configure" ${_configure})
step("build" ${CMAKE_COMMAND} --build "${_build}")
step("run" "${_build}/cuwrap_consumer")
message("${step_output}")
