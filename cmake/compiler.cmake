# The C++ compiler must implement C++20 as cuwrap uses it: g++ 11 and clang 14 (with
# libstdc++) are the oldest compilers cuwrap is built and tested with. Others are tried
# with a small C++20 program. Either way a configure error names the compiler found and
# the minimum, instead of a wall of errors from inside cuwrap's headers.
set(_cuwrap_min_GNU 11)
set(_cuwrap_min_Clang 14)
set(_cuwrap_found "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} (${CMAKE_CXX_COMPILER})")
set(_cuwrap_minimum "C++20: g++ 11 or clang 14 or newer")
if(DEFINED _cuwrap_min_${CMAKE_CXX_COMPILER_ID})
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS _cuwrap_min_${CMAKE_CXX_COMPILER_ID})
    message(FATAL_ERROR "cuwrap: the C++ compiler is ${_cuwrap_found}; cuwrap needs "
                        "${_cuwrap_minimum}. Pass -DCMAKE_CXX_COMPILER=<a newer compiler> "
                        "(e.g. g++-12 or clang++-16).")
  endif()
else()
  include(CheckCXXSourceCompiles)
  include(CMakePushCheckState)
  cmake_push_check_state(RESET)
  set(CMAKE_REQUIRED_FLAGS "${CMAKE_CXX20_STANDARD_COMPILE_OPTION}")
  check_cxx_source_compiles([=[
    #include <concepts>
    #include <span>
    template <std::integral T> constexpr T twice(T x) { return 2 * x; }
    int main() { int a[2] = {1, 2}; return std::span(a).size() == 2 ? twice(0) : 1; }
  ]=] CUWRAP_COMPILER_HAS_CXX20)
  cmake_pop_check_state()
  if(NOT CUWRAP_COMPILER_HAS_CXX20)
    message(FATAL_ERROR "cuwrap: the C++ compiler ${_cuwrap_found} does not compile C++20 "
                        "(concepts, <span>) with '${CMAKE_CXX20_STANDARD_COMPILE_OPTION}'; "
                        "cuwrap needs ${_cuwrap_minimum}. Pass -DCMAKE_CXX_COMPILER=<a "
                        "newer compiler>.")
  endif()
endif()
unset(_cuwrap_found)
unset(_cuwrap_minimum)
