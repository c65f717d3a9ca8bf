// Test support: launch configurations the graph and launch tests share.
#pragma once

#include <cuwrap/launch.hpp>

namespace cuwrap::testing {

/// Return a launch configuration of one block of one thread.
inline LaunchConfig single_thread() {
  LaunchConfig config;
  config.grid = Dim3(1);
  config.block = Dim3(1);
  return config;
}

}  // namespace cuwrap::testing
