// "(x, y, z)": how the launch checks' messages show a Dim3 (launch.cpp, launch_config.cpp).
#pragma once

#include <cuwrap/dim3.hpp>

#include <string>

namespace cuwrap::detail {

inline std::string dims(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

}  // namespace cuwrap::detail
