# Driver of the consumer tests (cmake -P): an outside project uses cuwrap as a user would.
#
#   MODE=install           cmake --install <cuwrap build> into <work>/prefix, then build
#                          project/ with find_package(cuwrap) (CMAKE_PREFIX_PATH) and run it
#   MODE=deb               cpack -G DEB in <cuwrap build>, dpkg-deb -x the .deb into
#                          <work>/root, then build and run project/ with find_package
#                          (CMAKE_PREFIX_PATH=<work>/root/usr) and project/main.cpp with
#                          pkg-config (PKG_CONFIG_PATH); skipped ("consumer skipped: ...")
#                          when dpkg-deb or pkg-config is missing
#   MODE=add_subdirectory  subproject/ (a parent project) takes cuwrap's source tree with
#   MODE=fetchcontent      add_subdirectory or FetchContent and checks that cuwrap left it
#                          alone; add_subdirectory then builds and runs the consumer,
#                          FetchContent compiles it against cuwrap::cuwrap (the library's
#                          build, add_subdirectory's underneath, is tested once)
#   MODE=old_compiler      a parent project whose compiler reports itself as g++ 10 (or
#                          clang 13) must fail to configure cuwrap with a message naming
#                          the compiler, its version and the minimum
#   MODE=no_cuda_headers   without CUDA headers, both a subproject and the installed
#                          package must fail to configure with a message naming
#                          CUWRAP_CUDA_ROOT (and CUWRAP_CUDA_INCLUDE_DIR for the package)
# Every step's output is shown when it fails.
cmake_minimum_required(VERSION 3.22)
foreach(_var MODE CUWRAP_SOURCE_DIR CUWRAP_BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR
             CXX_COMPILER EXPECTED_VERSION)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_consumer.cmake: -D${_var}=... is required")
  endif()
endforeach()

string(REPLACE "|" ";" SUBPROJECT_ARGS "${SUBPROJECT_ARGS}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Run a command; fail the test with its output unless it succeeds.
function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} failed (${_rc}):\n${_out}")
  endif()
  message(STATUS "consumer: ${name}: ok")
  set(step_output "${_out}" PARENT_SCOPE)
endfunction()

# Run a command that must fail with output matching every regular expression of MATCHES
# and holding every text of CONTAINS as it is (a path is text, never a regular
# expression: a build directory may be called build-g++).
function(expect_failure name)
  cmake_parse_arguments(PARSE_ARGV 1 _arg "" "" "COMMAND;MATCHES;CONTAINS")
  execute_process(COMMAND ${_arg_COMMAND} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  if(_rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} succeeded; it must fail:\n${_out}")
  endif()
  # CMake wraps long messages: match against the text with its line breaks joined.
  string(REGEX REPLACE "[ \n]+" " " _flat "${_out}")
  foreach(_regex ${_arg_MATCHES})
    if(NOT _flat MATCHES "${_regex}")
      message(FATAL_ERROR "consumer: ${name} failed without saying '${_regex}':\n${_out}")
    endif()
  endforeach()
  foreach(_text ${_arg_CONTAINS})
    string(REGEX REPLACE "[ \n]+" " " _flat_text "${_text}")
    string(FIND "${_flat}" "${_flat_text}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "consumer: ${name} failed without saying '${_text}':\n${_out}")
    endif()
  endforeach()
  message(STATUS "consumer: ${name}: fails as it should")
endfunction()

# The configure command of a consumer project: the same generator and compiler (and
# compiler launcher) as cuwrap's build.
function(consumer_configure out source build)
  set(_cmd ${CMAKE_COMMAND} -S "${source}" -B "${build}" -G "${GENERATOR}"
      "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCUWRAP_EXPECTED_VERSION=${EXPECTED_VERSION}")
  if(CXX_LAUNCHER)
    list(APPEND _cmd "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}")
  endif()
  set(${out} ${_cmd} ${ARGN} PARENT_SCOPE)
endfunction()

# Build project/ against the cuwrap package under `prefix` with find_package, run it.
function(find_package_consumer prefix build)
  consumer_configure(_configure "${CONSUMER_DIR}/project" "${build}" "-DCMAKE_PREFIX_PATH=${prefix}")
  if(BUILD_TYPE)
    list(APPEND _configure "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
  endif()
  if(CXX_FLAGS)
    # An instrumented library (CUWRAP_SANITIZE) needs the sanitizer runtimes at link.
    list(APPEND _configure "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}")
  endif()
  step("configure (find_package, ${prefix})" ${_configure})
  step("build (find_package)" ${CMAKE_COMMAND} --build "${build}")
  step("run (find_package)" "${build}/cuwrap_consumer")
  message("${step_output}")
endfunction()

# Compile project/main.cpp with the flags `pkg-config --cflags --libs cuwrap` gives, run it.
function(pkg_config_consumer pkg_config pc_dir build)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  step("pkg-config --modversion cuwrap" "${pkg_config}" --modversion cuwrap)
  string(STRIP "${step_output}" _version)
  step("pkg-config --cflags --libs cuwrap" "${pkg_config}" --cflags --libs cuwrap)
  string(STRIP "${step_output}" _flags)
  message(STATUS "consumer: pkg-config cuwrap: ${_flags}")
  separate_arguments(_flags UNIX_COMMAND "${_flags}")
  separate_arguments(_extra UNIX_COMMAND "${CXX_FLAGS}")
  file(MAKE_DIRECTORY "${build}")
  step("build (pkg-config)" "${CXX_COMPILER}" -std=c++20 ${_extra}
       "-DCUWRAP_PACKAGE_VERSION=\"${_version}\"" "-DCUWRAP_EXPECTED_VERSION=\"${EXPECTED_VERSION}\""
       "${CONSUMER_DIR}/project/main.cpp" ${_flags} -o "${build}/cuwrap_consumer")
  step("run (pkg-config)" "${build}/cuwrap_consumer")
  message("${step_output}")
endfunction()

function(expect_files root)
  foreach(_file ${ARGN})
    if(NOT EXISTS "${root}/${_file}")
      message(FATAL_ERROR "consumer: ${_file} is missing under ${root}")
    endif()
  endforeach()
endfunction()

if(MODE STREQUAL "install")
  set(_prefix "${WORK_DIR}/prefix")
  step("install into ${_prefix}" ${CMAKE_COMMAND} --install "${CUWRAP_BUILD_DIR}" --prefix "${_prefix}")
  expect_files("${_prefix}" include/cuwrap/cuwrap.hpp include/cuwrap/driver.hpp
               include/cuwrap/version.hpp)
  find_package_consumer("${_prefix}" "${WORK_DIR}/build")

elseif(MODE STREQUAL "deb")
  find_program(_dpkg_deb dpkg-deb)
  find_program(_pkg_config NAMES pkg-config pkgconf)
  if(NOT _dpkg_deb OR NOT _pkg_config)
    message("consumer skipped: the .deb test needs dpkg-deb (for cpack -G DEB and to unpack "
            "the package) and pkg-config; found dpkg-deb='${_dpkg_deb}', pkg-config='${_pkg_config}'")
    return()
  endif()
  step("cpack -G DEB" ${CMAKE_CPACK_COMMAND} -G DEB --config "${CUWRAP_BUILD_DIR}/CPackConfig.cmake"
       -B "${WORK_DIR}/cpack")
  file(GLOB _debs "${WORK_DIR}/cpack/*.deb")
  list(LENGTH _debs _count)
  if(NOT _count EQUAL 1)
    message(FATAL_ERROR "consumer: cpack wrote ${_count} .deb files, not one: '${_debs}'")
  endif()
  step("dpkg-deb --info" "${_dpkg_deb}" --info "${_debs}")
  string(REPLACE "." "\\." _version_regex "${EXPECTED_VERSION}")
  foreach(_field "Package: cuwrap-dev" "Version: ${_version_regex}" "Maintainer: " "Depends: [^\n]*libssl3")
    if(NOT step_output MATCHES "${_field}")
      message(FATAL_ERROR "consumer: the .deb's control has no '${_field}':\n${step_output}")
    endif()
  endforeach()
  set(_root "${WORK_DIR}/root")
  step("dpkg-deb -x into ${_root}" "${_dpkg_deb}" -x "${_debs}" "${_root}")
  file(GLOB_RECURSE _pc RELATIVE "${_root}/usr" "${_root}/usr/*/pkgconfig/cuwrap.pc")
  file(GLOB_RECURSE _config RELATIVE "${_root}/usr" "${_root}/usr/*/cmake/cuwrap/cuwrapConfig.cmake")
  file(GLOB_RECURSE _library RELATIVE "${_root}/usr" "${_root}/usr/lib*/libcuwrap.*")
  if(NOT _pc OR NOT _config OR NOT _library)
    message(FATAL_ERROR "consumer: the .deb lacks cuwrap.pc ('${_pc}'), cuwrapConfig.cmake "
                        "('${_config}') or libcuwrap ('${_library}')")
  endif()
  expect_files("${_root}/usr" include/cuwrap/cuwrap.hpp include/cuwrap/driver.hpp
               include/cuwrap/version.hpp)
  if(EXPECT_GENERATOR)
    expect_files("${_root}/usr" bin/cuwrap-gen share/cuwrap/templates)
  endif()
  find_package_consumer("${_root}/usr" "${WORK_DIR}/build-find-package")
  get_filename_component(_pc_dir "${_root}/usr/${_pc}" DIRECTORY)
  pkg_config_consumer("${_pkg_config}" "${_pc_dir}" "${WORK_DIR}/build-pkg-config")

elseif(MODE STREQUAL "add_subdirectory" OR MODE STREQUAL "fetchcontent")
  # The parent keeps its own build type (none for add_subdirectory, Debug for
  # FetchContent) and flags; none of the dependencies of cuwrap's generator, tests,
  # examples or benchmarks may even be looked for.
  set(_build "${WORK_DIR}/build")
  consumer_configure(_configure "${CONSUMER_DIR}/subproject" "${_build}"
    "-DCUWRAP_CONSUME=${MODE}" "-DCUWRAP_CHECKOUT=${CUWRAP_SOURCE_DIR}"
    "-DCMAKE_CXX_FLAGS=-DCUWRAP_PARENT_FLAG=1" ${SUBPROJECT_ARGS})
  if(MODE STREQUAL "fetchcontent")
    list(APPEND _configure "-DCMAKE_BUILD_TYPE=Debug")
  endif()
  foreach(_dependency GTest CLI11 nlohmann_json benchmark OpenSSL)
    list(APPEND _configure "-DCMAKE_DISABLE_FIND_PACKAGE_${_dependency}=ON")
  endforeach()
  step("configure (${MODE})" ${_configure})
  message("${step_output}")
  if(MODE STREQUAL "add_subdirectory")
    step("build (${MODE})" ${CMAKE_COMMAND} --build "${_build}" --target cuwrap_consumer)
    step("run (${MODE})" "${_build}/cuwrap_consumer")
    message("${step_output}")
  else()
    # FetchContent_MakeAvailable adds cuwrap with add_subdirectory: the library's build is
    # the one consumer_add_subdirectory builds and runs. What FetchContent changes (where
    # the parent finds the tree, _deps/cuwrap-build as its binary directory) is in the
    # configure and the checks above, and in the consumer's compile against cuwrap::cuwrap
    # here; building the library a second time would test the same compile twice.
    step("compile the consumer (${MODE})" ${CMAKE_COMMAND} --build "${_build}"
         --target cuwrap_consumer_object)
    file(GLOB_RECURSE _objects "${_build}/CMakeFiles/cuwrap_consumer_object.dir/*.o")
    file(GLOB_RECURSE _library_objects "${_build}/_deps/*.o")
    if(NOT _objects OR _library_objects)
      message(FATAL_ERROR "consumer: compiling the consumer gave objects '${_objects}' and "
                          "built library objects '${_library_objects}'")
    endif()
  endif()

elseif(MODE STREQUAL "no_cuda_headers")
  # Neither CUDA_HOME nor CUDA_PATH may point the search at a toolkit.
  unset(ENV{CUDA_HOME})
  unset(ENV{CUDA_PATH})
  set(_empty "${WORK_DIR}/no-cuda")
  file(MAKE_DIRECTORY "${_empty}")
  # A toolkit of another version than the one cuwrap was built for.
  set(_other "${WORK_DIR}/cuda-11.8/include")
  file(MAKE_DIRECTORY "${_other}")
  file(WRITE "${_other}/cuda.h" "#define CUDA_VERSION 11080\n")
  file(WRITE "${_other}/nvrtc.h" "")
  file(WRITE "${_other}/nvJitLink.h" "")

  # As a subproject.
  foreach(_case "CUWRAP_CUDA_ROOT=${_empty}" "CUWRAP_CUDA_INCLUDE_DIR=${_empty}")
    consumer_configure(_configure "${CONSUMER_DIR}/subproject" "${WORK_DIR}/sub-${_case}"
      "-DCUWRAP_CONSUME=add_subdirectory" "-DCUWRAP_CHECKOUT=${CUWRAP_SOURCE_DIR}" "-D${_case}")
    string(REGEX REPLACE "=.*" "" _name "${_case}")
    expect_failure("subproject with ${_name} holding no cuda.h" COMMAND ${_configure}
                   MATCHES "CUWRAP_CUDA_ROOT" CONTAINS "${_empty}")
  endforeach()

  # The installed package.
  if(NOT CAN_INSTALL)
    message(STATUS "consumer: CUWRAP_INSTALL is OFF: the installed package is not tried")
    return()
  endif()
  set(_prefix "${WORK_DIR}/prefix")
  step("install into ${_prefix}" ${CMAKE_COMMAND} --install "${CUWRAP_BUILD_DIR}" --prefix "${_prefix}")
  foreach(_case "CUWRAP_CUDA_ROOT=${_empty}" "CUWRAP_CUDA_INCLUDE_DIR=${_empty}")
    string(REGEX REPLACE "=.*" "" _name "${_case}")
    consumer_configure(_configure "${CONSUMER_DIR}/project" "${WORK_DIR}/package-${_name}"
      "-DCMAKE_PREFIX_PATH=${_prefix}" "-D${_case}")
    expect_failure("find_package with ${_name} holding no CUDA headers" COMMAND ${_configure}
                   MATCHES "CUWRAP_CUDA_ROOT" "CUWRAP_CUDA_INCLUDE_DIR" CONTAINS "looked in: ${_empty}")
  endforeach()
  consumer_configure(_configure "${CONSUMER_DIR}/project" "${WORK_DIR}/package-other"
    "-DCMAKE_PREFIX_PATH=${_prefix}" "-DCUWRAP_CUDA_ROOT=${WORK_DIR}/cuda-11.8")
  expect_failure("find_package with the headers of another CUDA version" COMMAND ${_configure}
                 MATCHES "cuwrap was built for CUDA [0-9.]+ \\([0-9]+\\)" "CUDA_VERSION 11080"
                         "CUWRAP_CUDA_ROOT")
  # An ambient $CUDA_HOME of another toolkit does not hide the headers cuwrap was built
  # with (only a -D names the one place to look).
  set(ENV{CUDA_HOME} "${WORK_DIR}/cuda-11.8")
  consumer_configure(_configure "${CONSUMER_DIR}/project" "${WORK_DIR}/package-ambient"
    "-DCMAKE_PREFIX_PATH=${_prefix}")
  step("find_package with $CUDA_HOME at another toolkit" ${_configure})
  unset(ENV{CUDA_HOME})

elseif(MODE STREQUAL "old_compiler")
  # The compiler, with the version macros CMake identifies it by set one below the minimum.
  if(COMPILER_ID STREQUAL "GNU")
    set(_macros "-U__GNUC__ -D__GNUC__=10 -U__GNUC_MINOR__ -D__GNUC_MINOR__=2")
    set(_reported "GNU 10\\.2")
  elseif(COMPILER_ID STREQUAL "Clang")
    set(_macros "-U__clang_major__ -D__clang_major__=13 -U__clang_minor__ -D__clang_minor__=0")
    set(_reported "Clang 13\\.0")
  else()
    message("consumer skipped: no way to make a ${COMPILER_ID} compiler look old")
    return()
  endif()
  set(_wrapper "${WORK_DIR}/old-c++")
  file(WRITE "${_wrapper}" "#!/bin/sh\nexec '${CXX_COMPILER}' ${_macros} \"$@\"\n")
  file(CHMOD "${_wrapper}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(CXX_COMPILER "${_wrapper}")
  set(CXX_LAUNCHER "")
  consumer_configure(_configure "${CONSUMER_DIR}/subproject" "${WORK_DIR}/build"
    "-DCUWRAP_CONSUME=add_subdirectory" "-DCUWRAP_CHECKOUT=${CUWRAP_SOURCE_DIR}" ${SUBPROJECT_ARGS})
  expect_failure("a parent project with an old compiler" COMMAND ${_configure}
                 MATCHES "the C\\+\\+ compiler is ${_reported}" "g\\+\\+ 11 or clang 14")

else()
  message(FATAL_ERROR "run_consumer.cmake: MODE=${MODE} is not one of install, deb, "
                      "add_subdirectory, fetchcontent, old_compiler, no_cuda_headers")
endif()
