# Which bindings the library compiles, so that any toolkit from CUDA 12.4 to 13.x builds
# with no source edit:
#
#   - the toolkit's CUDA_VERSION equals generated/'s: the checked-in generated/;
#   - -DCUWRAP_BINDINGS_DIR=<dir>: bindings generated elsewhere (cuwrap-gen --output <dir>
#     from the same headers), checked to match the toolkit's CUDA_VERSION;
#   - otherwise cuwrap-gen generates them into <build>/bindings at build time (the
#     generator built here, or -DCUWRAP_GEN_EXECUTABLE=<cuwrap-gen> built elsewhere);
#     generated/ stays untouched. Without either: a configure error saying what to do.
#
# Sets CUWRAP_CUDA_VERSION (the toolkit's), CUWRAP_BINDINGS_ROOT (the directory holding
# include/ and src/), CUWRAP_GENERATED_SOURCES (its .cpp files, for the library) and,
# when generating, the target cuwrap_bindings (a target compiling other generated files
# adds a dependency on it when it exists). Run after add_subdirectory(generator).

# The CUDA_VERSION a header or a generated symbols.hpp declares, or "" when none.
function(cuwrap_read_version file regex out)
  set(_version "")
  if(EXISTS "${file}")
    file(STRINGS "${file}" _line REGEX "${regex}" LIMIT_COUNT 1)
    string(REGEX MATCH "[0-9]+" _version "${_line}")
  endif()
  set(${out} "${_version}" PARENT_SCOPE)
endfunction()

# "12.4 (12040)": how messages name a version.
function(cuwrap_version_text version out)
  math(EXPR _major "${version} / 1000")
  math(EXPR _minor "${version} % 1000 / 10")
  set(${out} "${_major}.${_minor} (${version})" PARENT_SCOPE)
endfunction()

set(_cuwrap_symbols_regex "kGeneratedCudaVersion = [0-9]+")
cuwrap_read_version("${CUWRAP_CUDA_INCLUDE_DIR}/cuda.h" "^#define CUDA_VERSION [0-9]+" CUWRAP_CUDA_VERSION)
if(NOT CUWRAP_CUDA_VERSION)
  message(FATAL_ERROR "cuwrap: ${CUWRAP_CUDA_INCLUDE_DIR}/cuda.h defines no CUDA_VERSION")
endif()
cuwrap_version_text(${CUWRAP_CUDA_VERSION} _cuwrap_toolkit_text)

# The oldest toolkit: 12.4 for the whole library, 11.8 for the generated layer alone.
if(CUWRAP_BUILD_RUNTIME)
  set(_cuwrap_minimum 12040)
else()
  set(_cuwrap_minimum 11080)
endif()
if(CUWRAP_CUDA_VERSION LESS _cuwrap_minimum)
  cuwrap_version_text(${_cuwrap_minimum} _cuwrap_minimum_text)
  set(_cuwrap_hint "")
  if(CUWRAP_BUILD_RUNTIME AND CUWRAP_CUDA_VERSION GREATER_EQUAL 11080)
    set(_cuwrap_hint " -DCUWRAP_BUILD_RUNTIME=OFF builds the generated layer alone, which "
                     "accepts CUDA 11.8 and newer.")
  endif()
  message(FATAL_ERROR "cuwrap: the CUDA toolkit in ${CUWRAP_CUDA_INCLUDE_DIR} is CUDA "
                      "${_cuwrap_toolkit_text}; cuwrap needs CUDA ${_cuwrap_minimum_text} or "
                      "newer. Point CUWRAP_CUDA_ROOT (or CUDA_HOME) at a newer toolkit."
                      ${_cuwrap_hint})
endif()

# What cuwrap-gen writes into src/: the sources the library compiles, and the others
# (a generated interposer, compiled into its own library from
# ${CUWRAP_BINDINGS_ROOT}/src/<name>.cpp, adds its name to the second list); and the headers.
# Each library has three headers (docs/regenerating.md): <ns>_enums.hpp (to_string,
# operator<<), <ns>_raw.hpp (the raw:: forms) and <ns>.hpp (the typed forms, including both).
# The libraries and their files come from cuwrap-gen's table (cmake/libraries.cmake):
# here those this toolkit has; bindings made before this configure are settled below.
set(CUWRAP_GENERATED_SOURCE_NAMES ${CUWRAP_LIBRARY_SHARED_SOURCE_NAMES})
set(CUWRAP_GENERATED_OTHER_SOURCE_NAMES "")
set(CUWRAP_GENERATED_HEADER_FILES ${CUWRAP_LIBRARY_SHARED_HEADER_FILES})
set(_cuwrap_header_inputs "")
foreach(_lib ${CUWRAP_LIBRARY_NAMES})
  string(TOUPPER "${_lib}" _LIB)
  if(CUWRAP_HAVE_${_LIB})
    list(APPEND CUWRAP_GENERATED_SOURCE_NAMES ${_lib})
    list(APPEND CUWRAP_GENERATED_HEADER_FILES ${CUWRAP_LIBRARY_${_lib}_HEADER_FILES})
    if(CUWRAP_${_LIB}_INCLUDE_DIR)
      list(APPEND _cuwrap_header_inputs "${CUWRAP_${_LIB}_INCLUDE_DIR}/${CUWRAP_LIBRARY_${_lib}_HEADER}")
    else()
      list(APPEND _cuwrap_header_inputs "${CUWRAP_CUDA_INCLUDE_DIR}/${CUWRAP_LIBRARY_${_lib}_HEADER}")
    endif()
  endif()
endforeach()

# The system's GL and EGL headers (Debian: libgl-dev, libegl-dev), which <cuwrap/driver_gl.hpp>
# and <cuwrap/driver_egl.hpp> need; the header tests look at them.
find_path(CUWRAP_GL_INCLUDE_DIR GL/gl.h)
find_path(CUWRAP_EGL_INCLUDE_DIR EGL/egl.h)

set(CUWRAP_BINDINGS_DIR "" CACHE PATH
    "Bindings generated elsewhere for this toolkit (cuwrap-gen --output <dir>); empty: generated/ or generate at build time")
set(CUWRAP_GEN_EXECUTABLE "" CACHE FILEPATH
    "A cuwrap-gen built elsewhere, used when the bindings must be generated and the generator is not built here")

cuwrap_read_version("${PROJECT_SOURCE_DIR}/generated/include/cuwrap/detail/symbols.hpp"
                    "${_cuwrap_symbols_regex}" CUWRAP_CHECKED_IN_VERSION)
cuwrap_version_text(${CUWRAP_CHECKED_IN_VERSION} _cuwrap_checked_in_text)

if(CUWRAP_BINDINGS_DIR)
  get_filename_component(CUWRAP_BINDINGS_ROOT "${CUWRAP_BINDINGS_DIR}" ABSOLUTE)
  cuwrap_read_version("${CUWRAP_BINDINGS_ROOT}/include/cuwrap/detail/symbols.hpp"
                      "${_cuwrap_symbols_regex}" _cuwrap_given_version)
  if(NOT _cuwrap_given_version)
    message(FATAL_ERROR "cuwrap: CUWRAP_BINDINGS_DIR=${CUWRAP_BINDINGS_DIR} holds no "
                        "include/cuwrap/detail/symbols.hpp; pass the --output directory of cuwrap-gen.")
  endif()
  if(NOT _cuwrap_given_version EQUAL CUWRAP_CUDA_VERSION)
    cuwrap_version_text(${_cuwrap_given_version} _cuwrap_given_text)
    message(FATAL_ERROR "cuwrap: the bindings in CUWRAP_BINDINGS_DIR=${CUWRAP_BINDINGS_DIR} "
                        "come from CUDA ${_cuwrap_given_text} but the toolkit in "
                        "${CUWRAP_CUDA_INCLUDE_DIR} is CUDA ${_cuwrap_toolkit_text}. Generate "
                        "them from the same headers: cuwrap-gen --cuda-include "
                        "${CUWRAP_CUDA_INCLUDE_DIR} --output <dir>.")
  endif()
  message(STATUS "cuwrap: bindings for CUDA ${_cuwrap_toolkit_text} from ${CUWRAP_BINDINGS_ROOT}")
elseif(CUWRAP_CUDA_VERSION EQUAL CUWRAP_CHECKED_IN_VERSION)
  set(CUWRAP_BINDINGS_ROOT "${PROJECT_SOURCE_DIR}/generated")
else()
  if(TARGET cuwrap-gen)
    set(_cuwrap_gen cuwrap-gen)
  elseif(CUWRAP_GEN_EXECUTABLE)
    set(_cuwrap_gen "${CUWRAP_GEN_EXECUTABLE}")
  else()
    message(FATAL_ERROR "cuwrap: the toolkit in ${CUWRAP_CUDA_INCLUDE_DIR} is CUDA "
                        "${_cuwrap_toolkit_text} but the checked-in generated/ is for CUDA "
                        "${_cuwrap_checked_in_text}, and no generator is built to make "
                        "bindings for it. Either configure with -DCUWRAP_BUILD_GENERATOR=ON "
                        "(needs libclang, e.g. apt install libclang-19-dev), or generate them "
                        "on another machine from the same headers (cuwrap-gen --cuda-include "
                        "<toolkit>/include --output <dir>) and pass -DCUWRAP_BINDINGS_DIR=<dir> "
                        "(or -DCUWRAP_GEN_EXECUTABLE=<cuwrap-gen>).")
  endif()
  set(CUWRAP_BINDINGS_ROOT "${PROJECT_BINARY_DIR}/bindings")
  # The libraries bound on request (cmake/libraries.cmake): where their headers were found.
  set(_cuwrap_extra_dirs "")
  foreach(_lib ${CUWRAP_LIBRARY_NAMES})
    string(TOUPPER "${_lib}" _LIB)
    if(CUWRAP_HAVE_${_LIB} AND CUWRAP_LIBRARY_${_lib}_EXTRA_ONLY)
      list(APPEND _cuwrap_extra_dirs "${CUWRAP_${_LIB}_INCLUDE_DIR}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _cuwrap_extra_dirs)
  set(_cuwrap_extra_headers "")
  foreach(_dir ${_cuwrap_extra_dirs})
    list(APPEND _cuwrap_extra_headers --extra-headers "${_dir}")
  endforeach()
  set(_cuwrap_outputs "")
  foreach(_file ${CUWRAP_GENERATED_HEADER_FILES})
    list(APPEND _cuwrap_outputs "${CUWRAP_BINDINGS_ROOT}/${_file}")
  endforeach()
  foreach(_name ${CUWRAP_GENERATED_SOURCE_NAMES} ${CUWRAP_GENERATED_OTHER_SOURCE_NAMES})
    list(APPEND _cuwrap_outputs "${CUWRAP_BINDINGS_ROOT}/src/${_name}.cpp")
  endforeach()
  list(APPEND _cuwrap_outputs "${CUWRAP_BINDINGS_ROOT}/interposer/interposer.cpp")
  file(GLOB _cuwrap_templates CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/templates/*")
  # A stamp is the output and the files are byproducts: cuwrap-gen leaves files whose
  # content did not change untouched, which must not make them look out of date forever.
  set(_cuwrap_stamp "${CUWRAP_BINDINGS_ROOT}/bindings.stamp")
  # The run also compares these bindings with the checked-in ones (generated/coverage.json):
  # it prints the counts of what changed, and writes the whole comparison as compare.md
  # and compare.json beside coverage.json.
  set(_cuwrap_checked_in_report "${PROJECT_SOURCE_DIR}/generated/coverage.json")
  add_custom_command(
    OUTPUT "${_cuwrap_stamp}"
    BYPRODUCTS ${_cuwrap_outputs}
    COMMAND "${_cuwrap_gen}" --cuda-include "${CUWRAP_CUDA_INCLUDE_DIR}" ${_cuwrap_extra_headers}
            --output "${CUWRAP_BINDINGS_ROOT}" --report "${CUWRAP_BINDINGS_ROOT}/coverage.json"
            --compare "${_cuwrap_checked_in_report}"
            --compare-markdown "${CUWRAP_BINDINGS_ROOT}/compare.md"
            --compare-json "${CUWRAP_BINDINGS_ROOT}/compare.json"
    COMMAND "${CMAKE_COMMAND}" -E touch "${_cuwrap_stamp}"
    DEPENDS ${_cuwrap_gen} ${_cuwrap_header_inputs} ${_cuwrap_templates} "${_cuwrap_checked_in_report}"
    COMMENT "Generating bindings for CUDA ${_cuwrap_toolkit_text} into ${CUWRAP_BINDINGS_ROOT}"
    VERBATIM)
  add_custom_target(cuwrap_bindings DEPENDS "${_cuwrap_stamp}")
  # The headers must exist at configure time for include directories to be valid.
  file(MAKE_DIRECTORY "${CUWRAP_BINDINGS_ROOT}/include")
  message(STATUS "cuwrap: CUDA ${_cuwrap_toolkit_text} differs from generated/ (CUDA "
                 "${_cuwrap_checked_in_text}): bindings are generated into ${CUWRAP_BINDINGS_ROOT}")
endif()

# Bindings made before this configure (generated/ or CUWRAP_BINDINGS_DIR) decide for
# themselves which libraries they wrap (the sources they have); they must agree with the
# toolkit's headers. A library whose header needs system headers (cudaGL.h: GL/gl.h) or
# is bound where found (nvml.h: the table's extra_headers_only rows) compiles without it
# (its symbol table only, the source guards the rest); any other must have its header.
if(NOT _cuwrap_stamp AND EXISTS "${CUWRAP_BINDINGS_ROOT}/include/cuwrap/detail/symbols.hpp")
  set(_cuwrap_left_out "")
  foreach(_lib ${CUWRAP_LIBRARY_NAMES})
    string(TOUPPER "${_lib}" _LIB)
    set(_has_source FALSE)
    if(EXISTS "${CUWRAP_BINDINGS_ROOT}/src/${_lib}.cpp")
      set(_has_source TRUE)
    endif()
    if(_has_source AND CUWRAP_LIBRARY_${_lib}_EXTRA_ONLY AND NOT CUWRAP_HAVE_${_LIB})
      list(APPEND CUWRAP_GENERATED_SOURCE_NAMES ${_lib})
      list(APPEND _cuwrap_left_out ${_lib})
    elseif(_has_source AND CUWRAP_LIBRARY_${_lib}_SYSTEM_HEADERS AND NOT CUWRAP_HAVE_${_LIB})
      list(APPEND CUWRAP_GENERATED_SOURCE_NAMES ${_lib})
      list(APPEND CUWRAP_GENERATED_HEADER_FILES ${CUWRAP_LIBRARY_${_lib}_HEADER_FILES})
      list(APPEND _cuwrap_left_out ${_lib})
    elseif(_has_source AND NOT CUWRAP_HAVE_${_LIB})
      message(FATAL_ERROR "cuwrap: the bindings in ${CUWRAP_BINDINGS_ROOT} wrap "
                          "${CUWRAP_LIBRARY_${_lib}_DISPLAY} (${CUWRAP_LIBRARY_${_lib}_HEADER}), "
                          "but this toolkit has no ${CUWRAP_LIBRARY_${_lib}_HEADER} in "
                          "${CUWRAP_CUDA_INCLUDE_DIR} (or the table's other directories: "
                          "${CUWRAP_LIBRARY_${_lib}_INCLUDE_DIRS}). Install it, or generate bindings "
                          "for these headers (-DCUWRAP_BUILD_GENERATOR=ON, or cuwrap-gen and "
                          "-DCUWRAP_BINDINGS_DIR).")
    elseif(NOT _has_source AND CUWRAP_HAVE_${_LIB})
      message(STATUS "cuwrap: the bindings in ${CUWRAP_BINDINGS_ROOT} have no "
                     "${CUWRAP_LIBRARY_${_lib}_DISPLAY} (${CUWRAP_LIBRARY_${_lib}_HEADER}): it is "
                     "left out (${CUWRAP_LIBRARY_${_lib}_MACRO} is 0)")
      list(REMOVE_ITEM CUWRAP_GENERATED_SOURCE_NAMES ${_lib})
      list(REMOVE_ITEM CUWRAP_GENERATED_HEADER_FILES ${CUWRAP_LIBRARY_${_lib}_HEADER_FILES})
    endif()
  endforeach()
  if(_cuwrap_left_out)
    list(JOIN _cuwrap_left_out ", " _cuwrap_left_out)
    message(STATUS "cuwrap: generated bindings of ${_cuwrap_left_out} compile their symbol "
                   "tables only: their header (nvml.h, nvFatbin.h: CUWRAP_EXTRA_HEADERS_DIR) or "
                   "the system's headers (GL/EGL: libgl-dev / libegl-dev) are missing")
  endif()
endif()

set(CUWRAP_GENERATED_SOURCES "")
foreach(_name ${CUWRAP_GENERATED_SOURCE_NAMES})
  list(APPEND CUWRAP_GENERATED_SOURCES "${CUWRAP_BINDINGS_ROOT}/src/${_name}.cpp")
endforeach()
