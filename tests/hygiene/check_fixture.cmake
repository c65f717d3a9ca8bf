# The self-test of every_test_asserts: run it on fixtures/one_good_one_bad.cpp, which
# holds three tests that check something and three that do not. The checker must exit 1
# and list exactly the three that do not (so that the check itself can fail).
#
#   cmake -DCHECKER=<every_test_asserts> -DFIXTURE=<one_good_one_bad.cpp> -P check_fixture.cmake
execute_process(COMMAND ${CHECKER} ${FIXTURE}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message(STATUS "every_test_asserts said:\n${_out}${_err}")
if(NOT _rc EQUAL 1)
  message(FATAL_ERROR "every_test_asserts exited ${_rc} on the fixture, expected 1")
endif()
foreach(_bad "one_good_one_bad.cpp:19: Fixture.ChecksNothing: the body has no"
             "one_good_one_bad.cpp:24: Fixture.AssertsOnlyInComments: the body has no"
             "one_good_one_bad.cpp:39: Fixture.ReliesOnAHelperNotDefinedHere: its only check is expect_regenerates()")
  string(FIND "${_out}" "${_bad}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "every_test_asserts did not flag ${_bad}")
  endif()
endforeach()
foreach(_good Fixture.ChecksSomething Fixture.SkipsWithAReason
              Fixture.ChecksThroughAHelperDefinedHere Not.ATest)
  string(FIND "${_out}" "${_good}" _at)
  if(NOT _at EQUAL -1)
    message(FATAL_ERROR "every_test_asserts flagged ${_good}, which checks something or is no test")
  endif()
endforeach()
string(FIND "${_out}" "6 tests in 1 files, 3 without an assertion" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "every_test_asserts did not count 6 tests, 3 without an assertion")
endif()
