# The self-test of every_test_asserts: run it on fixtures/good_and_bad_tests.cpp, which
# holds three tests that check something and four that do not. The checker must exit 1
# and list exactly the four that do not (so that the check itself can fail).
#
#   cmake -DCHECKER=<every_test_asserts> -DFIXTURE=<good_and_bad_tests.cpp> -P check_fixture.cmake
execute_process(COMMAND ${CHECKER} ${FIXTURE}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message(STATUS "every_test_asserts said:\n${_out}${_err}")
if(NOT _rc EQUAL 1)
  message(FATAL_ERROR "every_test_asserts exited ${_rc} on the fixture, expected 1")
endif()
foreach(_bad "good_and_bad_tests.cpp:19: Fixture.ChecksNothing: the body has no EXPECT_/ASSERT_, FAIL, unconditional GTEST_SKIP"
             "good_and_bad_tests.cpp:24: Fixture.AssertsOnlyInComments: the body has no EXPECT_/ASSERT_, FAIL, unconditional GTEST_SKIP"
             "good_and_bad_tests.cpp:39: Fixture.ReliesOnAHelperNotDefinedHere: its only check is expect_regenerates()"
             "good_and_bad_tests.cpp:43: Fixture.OnlyGuardsWithASkip: the body has no")
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
string(FIND "${_out}" "7 tests in 1 files, 4 without an assertion" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "every_test_asserts did not count 7 tests, 4 without an assertion")
endif()
