// What the documentation's snippets may use without including it, and the list of
// extracted pages (defined in the generated doc_snippets.cpp).
#pragma once

#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

// `<!-- if CUWRAP_DOCS_CUDA_13 -->`: a snippet that shows the CUDA 13.0 forms.
#if CUDA_VERSION >= 13000
#define CUWRAP_DOCS_CUDA_13 1
#endif

// `<!-- if CUWRAP_DOCS_NVML -->`: a snippet that reads NVML (the build binds it: docs/nvml.md).
#if CUWRAP_HAS_NVML
#define CUWRAP_DOCS_NVML 1
#endif

namespace cuwrap_docs {

/// One Markdown page whose snippets were extracted into one function.
struct Page {
  const char* name;  ///< "high-level.md"
  void (*run)();     ///< the page's snippets, in order
};

/// Return every extracted page.
const std::vector<Page>& pages();

}  // namespace cuwrap_docs
