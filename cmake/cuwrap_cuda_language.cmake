# CUDA (nvcc) support for the parts of cuwrap built from .cu files: the nvcc launch
# tests, the nvcc example and benchmark. Optional: without nvcc they are left out and
# everything else builds as before.
#
#   cuwrap_enable_cuda()          sets CUWRAP_HAVE_NVCC (ON when nvcc works)
#   cuwrap_cuda_target(<target>)  C++20 for CUDA, links cuwrap and the CUDA runtime
macro(cuwrap_enable_cuda)
  if(NOT DEFINED CUWRAP_HAVE_NVCC)
    include(CheckLanguage)
    check_language(CUDA)
    # nvcc compiles against its own toolkit's headers: only an nvcc of the toolkit the
    # bindings come from can build cuwrap's .cu files (a CUDA 13.0 nvcc with 12.4 headers
    # would mix two toolkits' cuda.h).
    set(_cuwrap_nvcc_matches OFF)
    if(CMAKE_CUDA_COMPILER)
      execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --version OUTPUT_VARIABLE _cuwrap_nvcc_text
                      ERROR_QUIET RESULT_VARIABLE _cuwrap_nvcc_rc)
      string(REGEX MATCH "release ([0-9]+)\\.([0-9]+)" _cuwrap_nvcc_release "${_cuwrap_nvcc_text}")
      if(_cuwrap_nvcc_rc EQUAL 0 AND _cuwrap_nvcc_release)
        math(EXPR _cuwrap_nvcc_version "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2} * 10")
        if(NOT DEFINED CUWRAP_CUDA_VERSION OR _cuwrap_nvcc_version EQUAL CUWRAP_CUDA_VERSION)
          set(_cuwrap_nvcc_matches ON)
        else()
          message(STATUS "cuwrap: ${CMAKE_CUDA_COMPILER} is CUDA ${_cuwrap_nvcc_version}, the "
                         "headers are CUDA ${CUWRAP_CUDA_VERSION}: nvcc tests and examples are "
                         "skipped (set CMAKE_CUDA_COMPILER to that toolkit's nvcc)")
        endif()
      endif()
    endif()
    if(CMAKE_CUDA_COMPILER AND _cuwrap_nvcc_matches)
      # sm_90 SASS plus compute_90 PTX, which newer GPUs JIT-compile.
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 90)
      endif()
      enable_language(CUDA)
      cuwrap_teach_cuda20()
      set(CUWRAP_HAVE_NVCC ON)
    else()
      set(CUWRAP_HAVE_NVCC OFF)
      message(STATUS "cuwrap: no CUDA compiler (nvcc) found; nvcc tests and examples are skipped")
    endif()
  elseif(CUWRAP_HAVE_NVCC)
    enable_language(CUDA)
    cuwrap_teach_cuda20()
  endif()
endmacro()

# CMake before 3.27 does not know the C++20 flag of nvcc 12.8+ and then refuses targets
# that need C++20 (cuwrap's cxx_std_20 reaches CUDA targets as CUDA20): tell it.
macro(cuwrap_teach_cuda20)
  if(NOT CMAKE_CUDA20_COMPILE_FEATURES AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
endmacro()

function(cuwrap_cuda_target target)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
  target_link_libraries(${target} PRIVATE cuwrap::cuwrap)
  # Warnings of the host compiler, passed through nvcc.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
endfunction()
