// The library's compiled-once typed forms, for test_inline_bindings.cpp (which defines
// CUWRAP_INLINE_BINDINGS; this file does not).
#include <cuwrap/nvrtc.hpp>

#include "inline_bindings_calls.hpp"

#include <string>

cuwrap::nvrtc::nvrtcVersion_result library_nvrtc_version() { return cuwrap::nvrtc::nvrtcVersion(); }

void* library_nvrtc_version_address() {
  return reinterpret_cast<void*>(&cuwrap::nvrtc::nvrtcVersion);
}

std::string library_ptx(const char* source) { return compile_ptx(source); }
