# The wrapped libraries this toolkit has, from cuwrap-gen's table of libraries
# (generated/libraries.cmake, written by cuwrap-gen from generator/src/libraries.cpp):
# adding a library to the table adds it here, with no edit of this file.
#
# For each library <ns> of CUWRAP_LIBRARY_NAMES sets CUWRAP_HAVE_<NS> (ON where its
# header is found, its system headers too and its CMake option, if any, is ON) and
# CUWRAP_<NS>_INCLUDE_DIR (the directory holding the header when it is not
# CUWRAP_CUDA_INCLUDE_DIR itself; "" otherwise). A missing header of a library the table
# does not mark optional is a configure error. Run after CUWRAP_CUDA_INCLUDE_DIR is known.
include("${PROJECT_SOURCE_DIR}/generated/libraries.cmake")

# The libraries bound on request (the table's extra_headers_only rows: NVML, nvFatbin) are
# looked for here first, then beside the toolkit's headers (docs/nvml.md). generated/ holds
# their bindings, which compile only their symbol tables where the header is not found; a
# build generating its bindings passes the directory found to cuwrap-gen (--extra-headers).
set(CUWRAP_EXTRA_HEADERS_DIR "$ENV{CUWRAP_EXTRA_HEADERS_DIR}" CACHE PATH
    "Directory holding nvml.h / nvFatbin.h to bind (the table's extra_headers_only libraries); empty: none")

foreach(_lib ${CUWRAP_LIBRARY_NAMES})
  string(TOUPPER "${_lib}" _LIB)
  set(_header "${CUWRAP_LIBRARY_${_lib}_HEADER}")
  set(CUWRAP_${_LIB}_INCLUDE_DIR "")
  set(CUWRAP_HAVE_${_LIB} OFF)
  set(_why "")
  set(_option "${CUWRAP_LIBRARY_${_lib}_OPTION}")
  if(_option)
    option(${_option} "Link ${CUWRAP_LIBRARY_${_lib}_DISPLAY} (${_header}) into cuwrap" OFF)
  endif()
  if(_option AND NOT ${_option})
    set(_why "-D${_option}=ON builds it")
  else()
    # Each table directory is tried beside the include directory (taken lexically: it is
    # often a link, include -> targets/x86_64-linux/include) and below the toolkit root.
    set(_dirs ${CUWRAP_LIBRARY_${_lib}_INCLUDE_DIRS})
    if(CUWRAP_LIBRARY_${_lib}_EXTRA_ONLY AND CUWRAP_EXTRA_HEADERS_DIR AND
       EXISTS "${CUWRAP_EXTRA_HEADERS_DIR}/${_header}")
      set(_dirs "")
      set(CUWRAP_HAVE_${_LIB} ON)
      get_filename_component(CUWRAP_${_LIB}_INCLUDE_DIR "${CUWRAP_EXTRA_HEADERS_DIR}" ABSOLUTE)
    endif()
    foreach(_dir ${_dirs})
      get_filename_component(_beside "${CUWRAP_CUDA_INCLUDE_DIR}/${_dir}" ABSOLUTE)
      set(_in_root "")
      if(CUWRAP_CUDA_ROOT AND NOT _dir STREQUAL ".")
        string(REGEX REPLACE "^\\.\\./" "" _below "${_dir}")
        get_filename_component(_in_root "${CUWRAP_CUDA_ROOT}/${_below}" ABSOLUTE)
      endif()
      foreach(_candidate "${_in_root}" "${_beside}")
        if(_candidate AND EXISTS "${_candidate}/${_header}")
          set(CUWRAP_HAVE_${_LIB} ON)
          # A library bound on request names its directory even beside the toolkit's
          # headers: a build generating its bindings hands it to cuwrap-gen.
          if(NOT _dir STREQUAL "." OR CUWRAP_LIBRARY_${_lib}_EXTRA_ONLY)
            set(CUWRAP_${_LIB}_INCLUDE_DIR "${_candidate}")
          endif()
          break()
        endif()
      endforeach()
      if(CUWRAP_HAVE_${_LIB})
        break()
      endif()
    endforeach()
    if(NOT CUWRAP_HAVE_${_LIB} AND CUWRAP_LIBRARY_${_lib}_EXTRA_ONLY)
      set(_why "no ${_header} in ${CUWRAP_CUDA_INCLUDE_DIR}; bound where found: -DCUWRAP_EXTRA_HEADERS_DIR=<directory with ${_header}>")
    elseif(NOT CUWRAP_HAVE_${_LIB})
      set(_why "no ${_header} in ${CUWRAP_CUDA_INCLUDE_DIR}")
    endif()
    foreach(_system ${CUWRAP_LIBRARY_${_lib}_SYSTEM_HEADERS})
      string(MAKE_C_IDENTIFIER "CUWRAP_SYSTEM_${_system}" _var)
      find_path(${_var} "${_system}")
      if(CUWRAP_HAVE_${_LIB} AND NOT ${_var})
        set(CUWRAP_HAVE_${_LIB} OFF)
        set(_why "the system lacks ${_system}")
      endif()
    endforeach()
  endif()
  if(NOT CUWRAP_HAVE_${_LIB})
    if(_option AND "${${_option}}")
      message(FATAL_ERROR "cuwrap: -D${_option}=ON but ${_why}; pass "
                          "-DCUWRAP_EXTRA_HEADERS_DIR=<directory with ${_header}> or a toolkit "
                          "that has it (CUWRAP_CUDA_ROOT), or -D${_option}=OFF")
    endif()
    if(NOT CUWRAP_LIBRARY_${_lib}_OPTIONAL)
      message(FATAL_ERROR "cuwrap: ${_header} not found in ${CUWRAP_CUDA_INCLUDE_DIR}")
    endif()
    message(STATUS "cuwrap: no ${CUWRAP_LIBRARY_${_lib}_DISPLAY} bindings (${_why})")
  endif()
endforeach()

# The headers of the libraries bound on request that the checked-in generated/ was
# generated from (docs/regenerating.md says which versions): cuwrap-regenerate and the
# tests about generated/ read them. NVIDIA's headers are never in this repository; empty:
# CUWRAP_EXTRA_HEADERS_DIR, else ../ext-headers/cuda-<major.minor>/include beside the
# source tree. CUWRAP_CHECKED_IN_EXTRA_HEADERS_MISSING lists the headers not found there.
file(STRINGS "${PROJECT_SOURCE_DIR}/generated/include/cuwrap/detail/symbols.hpp" _line
     REGEX "kGeneratedCudaVersion = [0-9]+" LIMIT_COUNT 1)
string(REGEX MATCH "[0-9]+" _version "${_line}")
math(EXPR _major "${_version} / 1000")
math(EXPR _minor "${_version} % 1000 / 10")
set(_default "$ENV{CUWRAP_CHECKED_IN_EXTRA_HEADERS}")
foreach(_dir "${CUWRAP_EXTRA_HEADERS_DIR}"
             "${PROJECT_SOURCE_DIR}/../ext-headers/cuda-${_major}.${_minor}/include")
  if(NOT _default AND _dir AND IS_DIRECTORY "${_dir}")
    get_filename_component(_default "${_dir}" ABSOLUTE)
  endif()
endforeach()
set(CUWRAP_CHECKED_IN_EXTRA_HEADERS "${_default}" CACHE PATH
    "Headers of the libraries bound on request (nvml.h, nvFatbin.h) generated/ was generated from")
set(CUWRAP_CHECKED_IN_EXTRA_HEADERS_MISSING "")
foreach(_lib ${CUWRAP_LIBRARY_NAMES})
  if(CUWRAP_LIBRARY_${_lib}_EXTRA_ONLY AND
     NOT EXISTS "${CUWRAP_CHECKED_IN_EXTRA_HEADERS}/${CUWRAP_LIBRARY_${_lib}_HEADER}")
    list(APPEND CUWRAP_CHECKED_IN_EXTRA_HEADERS_MISSING "${CUWRAP_LIBRARY_${_lib}_HEADER}")
  endif()
endforeach()
