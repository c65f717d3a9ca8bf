// The calls test_inline_bindings.cpp makes twice: through the inline typed forms (that
// file defines CUWRAP_INLINE_BINDINGS) and through the library's compiled-once forms
// (inline_bindings_library_side.cpp does not). Internal linkage: each file compiles its
// own copy, in its own mode.
#pragma once

#include <cuwrap/nvrtc.hpp>

#include <string>

namespace {

/// Return the PTX of `source` (one kernel), compiled with NVRTC through the typed forms.
[[maybe_unused]] std::string compile_ptx(const char* source) {
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(source, "k.cu", 0, nullptr, nullptr);
  struct Guard {
    nvrtcProgram prog;
    ~Guard() { cuwrap::nvrtc::raw::nvrtcDestroyProgram(&prog); }
  } guard{prog};
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 0, nullptr);
  return cuwrap::nvrtc::nvrtcGetPTX(prog);  // the one-call form
}

}  // namespace
