// Private to compile/: how NVRTC's and nvJitLink's options spell a boolean value.
#pragma once

namespace cuwrap::detail {

/// "true" or "false", as `-ftz=`, `-prec-div=` and the like take them.
inline const char* flag(bool value) { return value ? "true" : "false"; }

}  // namespace cuwrap::detail
