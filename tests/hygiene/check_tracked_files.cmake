# No build output is ever committed: fail when a file git tracks in REPO is one.
#
#   cmake -DREPO=<checkout> -P check_tracked_files.cmake
#
# Build output is told by its name (object files, archives, shared libraries,
# executables, precompiled headers, CMake's and Ninja's files, Python bytecode) and by
# its first bytes (ELF, ar archives, Mach-O, PE), whatever it is called. Outside a git
# checkout (a source tarball, or REPO inside another project's checkout) there is
# nothing to check: the test prints "hygiene skipped:" (ctest's SKIP_REGULAR_EXPRESSION).
cmake_minimum_required(VERSION 3.22)
if(NOT DEFINED REPO)
  message(FATAL_ERROR "check_tracked_files.cmake: -DREPO=... is required")
endif()

find_program(_git git)
if(NOT _git)
  message("hygiene skipped: git is not installed")
  return()
endif()
execute_process(COMMAND "${_git}" -C "${REPO}" rev-parse --show-toplevel
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _top ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
file(REAL_PATH "${REPO}" _repo)
if(_rc EQUAL 0)
  file(REAL_PATH "${_top}" _top)
endif()
if(NOT _rc EQUAL 0 OR NOT _top STREQUAL _repo)
  message("hygiene skipped: ${REPO} is not the root of a git checkout")
  return()
endif()

# One name a line; core.quotePath=false leaves names as they are, except those with a
# line break, a quote or a backslash, which git quotes (and which no build writes).
execute_process(COMMAND "${_git}" -C "${REPO}" -c core.quotePath=false ls-files
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _listing ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "git ls-files failed (${_rc}): ${_err}")
endif()
# A ';' in a name would split it as a CMake list: keep it as another character.
string(REPLACE ";" "\\x3b" _listing "${_listing}")
string(REPLACE "\n" ";" _files "${_listing}")

# A name that only a build writes.
set(_output_names
  "\\.(o|obj|a|lib|so|dylib|dll|exe|out|pch|gch|pcm|pyc|pyo|ptx|cubin|fatbin|ltoir|ninja_log|ninja_deps)$"
  "\\.so\\.[0-9.]+$"
  "(^|/)(CMakeCache\\.txt|build\\.ninja|cmake_install\\.cmake|CTestTestfile\\.cmake|compile_commands\\.json)$"
  "(^|/)(CMakeFiles|__pycache__|Testing)/")
# First bytes (hex) of binaries a compiler or linker writes.
set(_output_magic
  "^7f454c46"               # ELF: objects, shared libraries, executables, cubins
  "^213c617263683e0a"       # !<arch>\n: static archives
  "^(feedface|feedfacf|cefaedfe|cffaedfe)"  # Mach-O
  "^4d5a")                  # MZ: PE executables and DLLs

set(_found "")
set(_count 0)
foreach(_path IN LISTS _files)
  if(_path STREQUAL "")
    continue()
  endif()
  math(EXPR _count "${_count} + 1")
  set(_why "")
  foreach(_regex IN LISTS _output_names)
    if(_path MATCHES "${_regex}")
      set(_why "its name is a build output's")
      break()
    endif()
  endforeach()
  if(NOT _why AND EXISTS "${REPO}/${_path}" AND NOT IS_DIRECTORY "${REPO}/${_path}")
    file(READ "${REPO}/${_path}" _head LIMIT 8 HEX)
    foreach(_regex IN LISTS _output_magic)
      if(_head MATCHES "${_regex}")
        set(_why "its first bytes are a compiled binary's (${_head})")
        break()
      endif()
    endforeach()
  endif()
  if(_why)
    string(APPEND _found "\n  ${_path}: ${_why}")
  endif()
endforeach()

if(_found)
  message(FATAL_ERROR "build output is tracked by git (remove it with git rm --cached and "
                      "let .gitignore keep it out):${_found}")
endif()
message(STATUS "${_count} tracked files, none of them build output")
