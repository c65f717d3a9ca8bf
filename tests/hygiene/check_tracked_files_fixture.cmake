# The self-test of check_tracked_files.cmake: in a scratch git repository whose index
# holds a source file and five kinds of build output, the check must fail and name each
# output (by name or by first bytes) and not the source; in a folder that is no
# checkout's root it must skip.
#
#   cmake -DCHECK=<check_tracked_files.cmake> -DWORK=<scratch dir> -P check_tracked_files_fixture.cmake
cmake_minimum_required(VERSION 3.22)
find_program(_git git)
if(NOT _git)
  message("hygiene skipped: git is not installed")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
set(_repo "${WORK}/repo")
file(MAKE_DIRECTORY "${_repo}/src" "${_repo}/bin" "${_repo}/build/CMakeFiles")
string(ASCII 127 _del)
file(WRITE "${_repo}/src/kernel.cpp" "int main() { return 0; }\n")
file(WRITE "${_repo}/buffer_view.o" "not really an object file\n")
file(WRITE "${_repo}/libcuwrap.so.1.2" "\n")
file(WRITE "${_repo}/bin/tool" "${_del}ELF and then some\n")
file(WRITE "${_repo}/vendor.txt" "!<arch>\nmember\n")
file(WRITE "${_repo}/build/CMakeFiles/rules.txt" "\n")
execute_process(COMMAND "${_git}" init -q "${_repo}" RESULT_VARIABLE _rc)
execute_process(COMMAND "${_git}" -C "${_repo}" add -f . RESULT_VARIABLE _rc_add)
if(NOT _rc EQUAL 0 OR NOT _rc_add EQUAL 0)
  message(FATAL_ERROR "could not make the scratch repository in ${_repo}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -DREPO=${_repo} -P ${CHECK}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message(STATUS "check_tracked_files said:\n${_out}")
if(_rc EQUAL 0)
  message(FATAL_ERROR "check_tracked_files passed a repository that tracks build output")
endif()
foreach(_bad "buffer_view.o: its name" "libcuwrap.so.1.2: its name" "bin/tool: its first bytes"
             "vendor.txt: its first bytes" "build/CMakeFiles/rules.txt: its name")
  string(FIND "${_out}" "${_bad}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "check_tracked_files did not flag '${_bad}'")
  endif()
endforeach()
string(FIND "${_out}" "kernel.cpp" _at)
if(NOT _at EQUAL -1)
  message(FATAL_ERROR "check_tracked_files flagged src/kernel.cpp, a source file")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -DREPO=${_repo}/src -P ${CHECK}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
string(FIND "${_out}" "hygiene skipped:" _at)
if(NOT _rc EQUAL 0 OR _at EQUAL -1)
  message(FATAL_ERROR "check_tracked_files did not skip a folder that is no checkout's root "
                      "(${_rc}):\n${_out}")
endif()
message(STATUS "check_tracked_files flags the five outputs and skips outside a checkout")
