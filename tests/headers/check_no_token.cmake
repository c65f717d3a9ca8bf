# Fail when a header under DIR (recursively) contains TOKEN: the ownership model keeps
# ownership in the type, so no public header may offer a run-time `is_owning()`
# (docs/ownership.md). Usage: cmake -DDIR=<dir> -DTOKEN=<text> -P check_no_token.cmake
if(NOT DIR OR NOT TOKEN)
  message(FATAL_ERROR "check_no_token.cmake: pass -DDIR=<dir> -DTOKEN=<text>")
endif()
file(GLOB_RECURSE _headers "${DIR}/*.hpp" "${DIR}/*.h")
if(NOT _headers)
  message(FATAL_ERROR "check_no_token.cmake: no headers under ${DIR}")
endif()
set(_found)
foreach(_header ${_headers})
  file(STRINGS "${_header}" _lines REGEX "${TOKEN}")
  if(_lines)
    list(APPEND _found "${_header}")
  endif()
endforeach()
if(_found)
  list(JOIN _found "\n  " _list)
  message(FATAL_ERROR "'${TOKEN}' in public headers (ownership is in the type: return the Ref "
                      "type from from_handle instead):\n  ${_list}")
endif()
message(STATUS "no '${TOKEN}' in ${DIR}")
