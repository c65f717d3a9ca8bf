# The self-test of check_documented_errors.cmake: on fixtures/errors, whose header
# declares an exception class that the page names only outside its hierarchy, the check
# must fail and name that class (so that the check itself can fail).
#
#   cmake -DCHECK=<check_documented_errors.cmake> -DFIXTURE=<fixtures/errors> -P check_documented_errors_fixture.cmake
execute_process(COMMAND ${CMAKE_COMMAND} "-DHEADERS=${FIXTURE}/include" "-DDOC=${FIXTURE}/errors.md"
                        -P ${CHECK}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message(STATUS "check_documented_errors said:\n${_out}")
if(_rc EQUAL 0)
  message(FATAL_ERROR "check_documented_errors passed a page that lacks UndocumentedError")
endif()
string(REGEX REPLACE "[ \n]+" " " _flat "${_out}")
string(FIND "${_flat}" "lacks UndocumentedError (public" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "check_documented_errors did not name UndocumentedError alone")
endif()
