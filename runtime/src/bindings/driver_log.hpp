// The driver's own log lines of a failed call (CUDA 12.9+ drivers: cuLogsDumpToMemory),
// read only on the failure path.
#pragma once

#include <string>

namespace cuwrap::detail {

/// Return the driver's log lines written since the previous failure that asked (the last
/// kDriverLogLines of them, newline-separated), or "" where the driver keeps no logs
/// (older than CUDA 12.9, or bindings from headers older than 12.9) or none was written.
///
/// For the throw path of a failed driver call: it calls the driver only there, so a call
/// that succeeds costs nothing. Never throws; thread-safe.
std::string driver_log_since_last_failure() noexcept;

/// The most log lines one error carries.
inline constexpr int kDriverLogLines = 16;

}  // namespace cuwrap::detail
