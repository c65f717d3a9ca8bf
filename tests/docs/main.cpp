// Run the documentation's snippets, page by page, when a GPU is usable.
//
// Compiling them is the first half of the test (the build fails on a snippet that does
// not compile). Without a GPU, or without NVRTC of the bindings' CUDA version, they are
// not run and the exit status is 77 (skipped).
#include "doc_snippets.hpp"

#include "gpu.hpp"
#include "toolkit_libraries.hpp"

#include <exception>
#include <iostream>

int main() {
  if (const std::string reason = cuwrap::testing::gpu_unavailable_reason(); !reason.empty()) {
    std::cout << "docs snippets compiled; not run: needs a GPU: " << reason << '\n';
    return 77;
  }
  if (const std::string& reason = cuwrap::testing::nvrtc_unusable_reason(); !reason.empty()) {
    std::cout << "docs snippets compiled; not run: " << reason << '\n';
    return 77;
  }
  int failures = 0;
  for (const cuwrap_docs::Page& page : cuwrap_docs::pages()) {
    std::cout << "== " << page.name << '\n';
    try {
      page.run();
      std::cout << "== " << page.name << ": OK\n";
    } catch (const std::exception& e) {
      std::cerr << "== " << page.name << ": FAILED: " << e.what() << '\n';
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
