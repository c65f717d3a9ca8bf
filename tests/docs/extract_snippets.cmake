# Extract every C++ snippet of Markdown pages into C++ sources.
#
#   cmake -DPAGES="a.md|b.md" -DOUTPUT_DIR=<dir> -P extract_snippets.cmake
#
# Every fenced block opened by a line "```cpp" is a snippet; none is exempt. Other C++
# fences ("```c++", "```cxx", ...) are an error, so that no C++ block escapes as another
# language. The snippets of one page are one program: in order, they become the body of
# `cuwrap_docs::page_<page>::run()` in <dir>/doc_snippets.cpp, each preceded by a `#line`
# directive naming the page and line, so that compile errors point at the Markdown.
# `#include` lines are moved to the top of the file (an empty line stays in their place).
#
# HTML comments on the lines right above a fence (invisible when the page is rendered)
# change where the snippet goes:
#
#   <!-- file-scope -->            namespace-scope code (a class, a function, a kernel's
#                                  source string), placed at global scope before the
#                                  pages' functions instead of inside run();
#   <!-- translation-unit -->      a whole .cpp file as written (its own #include and
#                                  #define lines, in place): <dir>/unit_<page>_<line>.cpp,
#                                  compiled into docs_snippets but not run;
#   <!-- nvcc -->                  a whole .cu file for nvcc: <dir>/unit_<page>_<line>.cu,
#                                  compiled where nvcc is found, not run;
#   <!-- if MACRO -->              compiled where MACRO is defined (code of an optional
#                                  part, e.g. CUWRAP_HAS_DLPACK).
#
# Any other comment there is an error (a mistyped marker would otherwise be ignored).
# <dir>/units.cmake sets DOC_SNIPPET_CPP_UNITS and DOC_SNIPPET_CUDA_UNITS to the unit
# files. A file is rewritten only when its content changes, so that an edit of one page
# recompiles only what it changed; unit files no snippet produces any more are removed.
cmake_minimum_required(VERSION 3.22)
if(NOT DEFINED PAGES OR NOT DEFINED OUTPUT_DIR)
  message(FATAL_ERROR "extract_snippets.cmake: -DPAGES=... and -DOUTPUT_DIR=... are required")
endif()

# Write a file only when its content differs (keeps its timestamp otherwise).
function(write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" _old)
    if(_old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()
string(REPLACE "|" ";" PAGES "${PAGES}")

set(_fence "\n```cpp\n")
string(LENGTH "${_fence}" _fence_length)
set(_includes "")
set(_namespaces "")
set(_registry "")
set(_file_scope_code "")
set(_cpp_units "")
set(_cuda_units "")
set(_total 0)

foreach(_page ${PAGES})
  file(READ "${_page}" _text)
  # A leading newline lets a fence on the first line match "\n```cpp\n" too; the line
  # count starts at 0 to make up for it.
  set(_text "\n${_text}")
  set(_line 0)  # line number of the start of _text in the page
  get_filename_component(_stem "${_page}" NAME_WE)
  get_filename_component(_name "${_page}" NAME)
  string(MAKE_C_IDENTIFIER "page_${_stem}" _namespace)

  string(REGEX MATCH "\n```(c\\+\\+|C\\+\\+|cxx|cc|hpp|c|CPP|Cpp)[ \t]*\n" _other "${_text}")
  if(_other)
    string(STRIP "${_other}" _other)
    message(FATAL_ERROR "${_page}: a C++ block opened with `${_other}`: open it with ```cpp "
                        "so that it is compiled with the others")
  endif()

  set(_body "")
  set(_count 0)
  while(TRUE)
    string(FIND "${_text}" "${_fence}" _at)
    if(_at EQUAL -1)
      break()
    endif()
    # The markers: the HTML comment lines right above the fence.
    math(EXPR _before_fence "${_at} + 1")
    string(SUBSTRING "${_text}" 0 ${_before_fence} _before)
    string(REGEX MATCH "\n(<!--[^\n]*-->[ \t]*\n)+$" _markers "${_before}")
    # The snippet's first line: everything up to the end of the fence line.
    math(EXPR _code_start "${_at} + ${_fence_length}")
    string(SUBSTRING "${_text}" 0 ${_code_start} _before)
    string(REGEX MATCHALL "\n" _newlines "${_before}")
    list(LENGTH _newlines _skipped)
    math(EXPR _line "${_line} + ${_skipped}")

    set(_file_scope FALSE)
    set(_unit "")
    set(_condition "")
    string(REGEX MATCHALL "<!--[^\n]*-->" _markers "${_markers}")
    foreach(_marker ${_markers})
      if(_marker MATCHES "^<!-- *file-scope *-->$")
        set(_file_scope TRUE)
      elseif(_marker MATCHES "^<!-- *translation-unit *-->$")
        set(_unit cpp)
      elseif(_marker MATCHES "^<!-- *nvcc *-->$")
        set(_unit cu)
      elseif(_marker MATCHES "^<!-- *if +([A-Za-z_][A-Za-z_0-9]*) *-->$")
        set(_condition "${CMAKE_MATCH_1}")
      else()
        message(FATAL_ERROR "${_page}:${_line}: unknown snippet marker `${_marker}` above "
                            "```cpp (known: <!-- file-scope -->, <!-- translation-unit -->, <!-- nvcc -->, "
                            "<!-- if MACRO -->)")
      endif()
    endforeach()

    # The text after the fence line, with a newline in front so that a closing fence on
    # the snippet's first line is found as "\n```".
    string(SUBSTRING "${_text}" ${_code_start} -1 _text)
    set(_text "\n${_text}")
    string(FIND "${_text}" "\n```" _end)
    if(_end EQUAL -1)
      message(FATAL_ERROR "${_page}:${_line}: unterminated ```cpp block")
    endif()
    math(EXPR _code_end "${_end} + 1")
    string(SUBSTRING "${_text}" 1 ${_end} _code)  # without the added newline, with the last
    string(SUBSTRING "${_text}" ${_code_end} -1 _text)
    set(_text "\n${_text}")
    string(STRIP "${_code}" _stripped)
    if(_stripped STREQUAL "")
      message(FATAL_ERROR "${_page}:${_line}: empty ```cpp block")
    endif()

    if(_unit)
      # A whole translation unit, as written.
      set(_unit_file "${OUTPUT_DIR}/unit_${_namespace}_${_line}.${_unit}")
      set(_snippet "// Generated by tests/docs/extract_snippets.cmake from ${_page}; do not edit.\n")
      if(_condition)
        string(APPEND _snippet "#if defined(${_condition})\n")
      endif()
      string(APPEND _snippet "#line ${_line} \"${_page}\"\n${_code}")
      if(_condition)
        string(APPEND _snippet "#endif  // ${_condition}\n")
      endif()
      write_if_changed("${_unit_file}" "${_snippet}")
      if(_unit STREQUAL "cpp")
        list(APPEND _cpp_units "${_unit_file}")
      else()
        list(APPEND _cuda_units "${_unit_file}")
      endif()
    else()
      # Hoist #include lines, keeping an empty line in their place so #line stays right.
      string(REGEX MATCHALL "#include[^\n]*" _found "${_code}")
      list(APPEND _includes ${_found})
      string(REGEX REPLACE "#include[^\n]*" "" _code "${_code}")
      set(_snippet "#line ${_line} \"${_page}\"\n${_code}")
      if(_condition)
        set(_snippet "#if defined(${_condition})\n${_snippet}#endif  // ${_condition}\n")
      endif()
      if(_file_scope)
        string(APPEND _file_scope_code "${_snippet}")
      else()
        string(APPEND _body "${_snippet}")
      endif()
    endif()
    string(REGEX MATCHALL "\n" _newlines "${_code}")
    list(LENGTH _newlines _code_lines)
    # The newline added in front of _text is not a line of the page: minus 1.
    math(EXPR _line "${_line} + ${_code_lines} - 1")
    math(EXPR _count "${_count} + 1")
  endwhile()
  if(_count EQUAL 0)
    message(STATUS "${_page}: no C++ snippets")
    continue()
  endif()
  message(STATUS "${_page}: ${_count} C++ snippets")
  math(EXPR _total "${_total} + ${_count}")
  string(APPEND _namespaces "
// ${_count} snippets of ${_page}
namespace ${_namespace} {

void run() {
${_body}}

}  // namespace ${_namespace}
")
  string(APPEND _registry "    {\"${_name}\", &${_namespace}::run},\n")
endforeach()
if(_total EQUAL 0)
  message(FATAL_ERROR "extract_snippets.cmake: no ```cpp block in any of ${PAGES}")
endif()

list(REMOVE_DUPLICATES _includes)
list(JOIN _includes "\n" _includes)
set(_content "// Generated by tests/docs/extract_snippets.cmake from the Markdown pages; do not edit.
${_includes}
#include \"doc_snippets.hpp\"

// The snippets marked <!-- file-scope -->, at global scope as a user would write them.
${_file_scope_code}
namespace cuwrap_docs {
${_namespaces}
const std::vector<Page>& pages() {
  static const std::vector<Page> kPages = {
${_registry}  };
  return kPages;
}

}  // namespace cuwrap_docs
")
write_if_changed("${OUTPUT_DIR}/doc_snippets.cpp" "${_content}")
write_if_changed("${OUTPUT_DIR}/units.cmake"
                 "set(DOC_SNIPPET_CPP_UNITS \"${_cpp_units}\")\nset(DOC_SNIPPET_CUDA_UNITS \"${_cuda_units}\")\n")
file(GLOB _old_units "${OUTPUT_DIR}/unit_*")
foreach(_old ${_old_units})
  if(NOT _old IN_LIST _cpp_units AND NOT _old IN_LIST _cuda_units)
    file(REMOVE "${_old}")
  endif()
endforeach()
