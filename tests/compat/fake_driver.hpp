// The stand-in libcuda of the compat tests (fake_libcuda.cpp, its path in
// CUWRAP_FAKE_LIBCUDA): installed before anything loads libcuda, and its counters read.
#pragma once

#include <cuwrap/version.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>

namespace cuwrap::testing {

// Before anything loads libcuda: every test of this process talks to the fake.
inline const bool kFakeInstalled = [] {
  setenv("CUWRAP_LIBCUDA", CUWRAP_FAKE_LIBCUDA, 1);
  return true;
}();

/// Return what the fake's function `name` (a `T name()` it exports) answers now.
template <typename T>
T fake_query(const char* name) {
  (void)cuwrap::driver_version();  // the loader opens the fake, if nothing did yet
  void* handle = ::dlopen(CUWRAP_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << "the fake libcuda is not loaded";
  auto* fn = handle != nullptr ? reinterpret_cast<T (*)()>(::dlsym(handle, name)) : nullptr;
  EXPECT_NE(fn, nullptr) << name;
  const T value = fn != nullptr ? fn() : T{};
  if (handle != nullptr) {
    ::dlclose(handle);
  }
  return value;
}

}  // namespace cuwrap::testing
