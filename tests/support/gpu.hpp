// Test support: skip a GPU test with a reason on a machine without a usable GPU.
#pragma once

#include <gtest/gtest.h>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>

#include <string>

namespace cuwrap::testing {

/// Return "" when a CUDA device can be used, else the reason it cannot.
inline std::string gpu_unavailable_reason() {
  static const std::string reason = [] {
    try {
      cuwrap::driver::cuInit(0);
      if (cuwrap::driver::cuDeviceGetCount() == 0) {
        return std::string("no CUDA device present");
      }
      return std::string();
    } catch (const cuwrap::Error& e) {
      return std::string("no usable CUDA driver: ") + e.what();
    }
  }();
  return reason;
}

}  // namespace cuwrap::testing

/// Skip the current test (with the reason) unless a CUDA device is usable.
#define CUWRAP_REQUIRE_GPU()                                                           \
  do {                                                                                 \
    const std::string cuwrap_gpu_reason = ::cuwrap::testing::gpu_unavailable_reason(); \
    if (!cuwrap_gpu_reason.empty()) {                                                  \
      GTEST_SKIP() << "needs a GPU: " << cuwrap_gpu_reason;                            \
    }                                                                                  \
  } while (false)

/// Skip the calling test (with the reason) unless a GPU is usable and at least `n` CUDA
/// devices are present.
#define CUWRAP_REQUIRE_GPUS(n)                                                                  \
  do {                                                                                          \
    CUWRAP_REQUIRE_GPU();                                                                       \
    if (const int cuwrap_gpus = ::cuwrap::Device::count(); cuwrap_gpus < (n)) {                 \
      GTEST_SKIP() << "needs " << (n) << " GPUs: " << cuwrap_gpus << " CUDA device(s) present"; \
    }                                                                                           \
  } while (false)
