// The cuwrap version, the CUDA version its bindings were generated from, and the
// installed driver's version; the checks that turn "too old" into UnsupportedError.
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

/// The oldest toolkit the high-level layer builds against (CUDA 12.4).
inline constexpr int kMinimumToolkitVersion = 12040;

/// The oldest driver cuwrap runs on: CUDA 12.4, or the bindings' own version when
/// they come from an older toolkit (a build of the generated layer alone).
/// Older drivers make the first use of libcuda throw LoadError.
inline constexpr int kMinimumDriverVersion =
    kBindingsCudaVersion < 12040 ? kBindingsCudaVersion : 12040;

/// Return the CUDA_VERSION the bindings were generated from (e.g. 12040 for CUDA 12.4).
constexpr int bindings_version() noexcept { return kBindingsCudaVersion; }

/// Return where the bindings' driver ABI versions came from: "cudaTypedefs.h" (each
/// prototype matched to its versioned function-pointer typedef), or "versioned names"
/// (generated with `cuwrap-gen --abi-from-defines`, from cuda.h's versioned names; the
/// generator's report lists any entry point it requests as bindings_version()).
constexpr const char* bindings_abi_source() noexcept { return detail::kAbiVersionsFrom; }

/// Return the installed driver's CUDA version, as cuDriverGetVersion() reports it
/// (e.g. 13000). Read once per process, when libcuda is opened.
///
/// Throws LoadError when libcuda cannot be loaded, does not report its version, or is
/// older than kMinimumDriverVersion.
int driver_version();

namespace detail {

/// Throw UnsupportedError naming `feature` unless the installed driver is at least
/// CUDA `required` (e.g. 12080). After the first call it costs one load and a compare.
void require_driver(int required, const char* feature);

/// Throw UnsupportedError: `feature` needs a toolkit of at least CUDA `required`, and
/// cuwrap was built against an older one (bindings_version()). For code compiled out
/// behind a CUDA_VERSION check.
[[noreturn]] void throw_toolkit_too_old(int required, const char* feature);

}  // namespace detail
}  // namespace cuwrap
