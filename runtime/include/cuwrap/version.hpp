// The cuwrap version, and the CUDA version its bindings were generated from.
#pragma once

#include <cuwrap/detail/symbols.hpp>

namespace cuwrap {

/// cuwrap's own version, "major.minor.patch".
inline constexpr const char* kVersion = "0.1.0";
inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;

/// The CUDA_VERSION of the headers the generated bindings come from (e.g. 13000).
inline constexpr int kBindingsCudaVersion = detail::kGeneratedCudaVersion;

}  // namespace cuwrap
