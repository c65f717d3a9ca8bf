# The self-test of runtime_layers: run it on fixtures/layers, a two-concept tree (base
# below top) with four includes that break the layering. The checker must exit 1 and list
# exactly those four (so that the check itself can fail).
#
#   cmake -DCHECKER=<runtime_layers> -DFIXTURE=<fixtures/layers> -P check_layers_fixture.cmake
execute_process(COMMAND ${CHECKER} ${FIXTURE}/src ${FIXTURE}/include/cuwrap
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message(STATUS "runtime_layers said:\n${_out}${_err}")
if(NOT _rc EQUAL 1)
  message(FATAL_ERROR "runtime_layers exited ${_rc} on the fixture, expected 1")
endif()
foreach(_bad "low.cpp:1: base includes top/helper.hpp of top, which base may not use"
             "low.cpp:3: includes the umbrella <cuwrap/all.hpp>"
             "low.cpp:4: <cuwrap/unknown.hpp> belongs to no concept"
             "low.hpp:2: base includes cuwrap/high.hpp of top, which base may not use")
  string(FIND "${_out}" "${_bad}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "runtime_layers did not flag: ${_bad}")
  endif()
endforeach()
foreach(_good "helper.hpp:" "high.hpp:" "all.hpp:")
  string(FIND "${_out}" "${_good}" _at)
  if(NOT _at EQUAL -1)
    message(FATAL_ERROR "runtime_layers flagged ${_good}, which keeps to the layering")
  endif()
endforeach()
string(FIND "${_out}" ", 4 problems" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "runtime_layers did not count exactly 4 problems")
endif()
