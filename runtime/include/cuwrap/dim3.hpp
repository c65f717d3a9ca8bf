// cuwrap::Dim3: grid, block or cluster dimensions, shared by the high-level launch
// (<cuwrap/launch.hpp>) and the typed cuLaunchKernel of the generated layer
// (<cuwrap/kernel_arguments.hpp>, included by <cuwrap/driver.hpp>).
#pragma once

namespace cuwrap {

/// Grid, block or cluster dimensions.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  /// Build from up to three extents; omitted ones are 1.
  Dim3(unsigned nx = 1, unsigned ny = 1, unsigned nz = 1) : x(nx), y(ny), z(nz) {}  // NOLINT
  /// Return x * y * z.
  unsigned long long volume() const noexcept { return static_cast<unsigned long long>(x) * y * z; }
  /// Return true when all three extents are equal.
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

}  // namespace cuwrap
