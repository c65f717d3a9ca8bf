// What every example shares: finding out whether a GPU can be used, the skip message
// CI looks for (also when NVRTC or nvJitLink of the bindings' CUDA version is not
// installed), and turning exceptions into a readable failure and exit status 1.
#pragma once

#include <cuwrap/cuwrap.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

namespace example {

/// Return "" when a CUDA device can be used, else the reason it cannot.
inline std::string gpu_unavailable_reason() {
  try {
    if (cuwrap::Device::count() == 0) {
      return "no CUDA device present";
    }
    return "";
  } catch (const cuwrap::Error& e) {  // LoadError without a driver, DriverError from cuInit
    return e.what();
  }
}

/// Print why `name` is skipped and return true when `e` says a toolkit library the
/// bindings load (NVRTC or nvJitLink of their CUDA version) is not installed; return false
/// for any other load failure.
inline bool skipped_for_missing_library(std::string_view name, const cuwrap::LoadError& e) {
  if (!e.symbol().empty() || e.library().rfind("libcuda", 0) == 0) {
    return false;
  }
  std::cout << "cuwrap example skipped: " << name << " needs " << e.library()
            << ", which cannot be loaded (" << e.what() << ")\n";
  return true;
}

/// Run `body` (returning the exit status) and report any exception as a failure, except a
/// missing NVRTC or nvJitLink library, which skips the example (skipped_for_missing_library).
template <class Body>
int run(std::string_view name, Body&& body) {
  try {
    return body();
  } catch (const cuwrap::LoadError& e) {
    if (skipped_for_missing_library(name, e)) {
      return 0;
    }
    std::cerr << name << ": FAILED: " << e.what() << '\n';
  } catch (const cuwrap::Error& e) {
    std::cerr << name << ": FAILED: " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cerr << name << ": FAILED: " << e.what() << '\n';
  }
  return 1;
}

/// Run `body` when a GPU is usable; otherwise print why it is skipped and return 0.
///
/// The message starts with "cuwrap example skipped:", which the examples_run_* tests
/// report as skipped.
template <class Body>
int run_on_gpu(std::string_view name, Body&& body) {
  if (const std::string reason = gpu_unavailable_reason(); !reason.empty()) {
    std::cout << "cuwrap example skipped: " << name << " needs a GPU (" << reason << ")\n";
    return 0;
  }
  return run(name, static_cast<Body&&>(body));
}

/// Return whether `actual` equals `expected` up to a relative tolerance.
inline bool close(double actual, double expected, double tolerance = 1e-5) {
  return std::abs(actual - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

/// Print the verdict of a check over `count` values with `mismatches` wrong; return the
/// exit status (0 when none is wrong).
inline int verdict(std::string_view what, std::size_t count, std::size_t mismatches) {
  if (mismatches != 0) {
    std::cerr << what << ": FAILED: " << mismatches << " of " << count << " values wrong\n";
    return 1;
  }
  std::cout << what << ": OK (" << count << " values checked)\n";
  return 0;
}

}  // namespace example
