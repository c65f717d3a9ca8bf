// A consumer of the installed cuwrap package: the headers, the library and the CUDA
// include directory all come from find_package(cuwrap). Needs no GPU: it checks the
// versions, uses the low-level layer (to_string, NVRTC) and compiles a kernel with the
// high-level Program for sm_90 when libnvrtc can be loaded.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvrtc.hpp>

#include <iostream>
#include <string>

int main() {
  int failures = 0;
  const auto expect = [&failures](bool ok, const std::string& what) {
    if (!ok) {
      std::cerr << "consumer: FAILED: " << what << '\n';
      ++failures;
    }
  };

  std::cout << "cuwrap " << cuwrap::kVersion << " (package " << CUWRAP_PACKAGE_VERSION
            << "), bindings from CUDA " << cuwrap::kBindingsCudaVersion << '\n';
  expect(std::string(cuwrap::kVersion) == CUWRAP_PACKAGE_VERSION,
         "kVersion matches the package version");
  expect(std::string(cuwrap::kVersion) == CUWRAP_EXPECTED_VERSION,
         "kVersion matches the project version");
  expect(cuwrap::kBindingsCudaVersion == CUDA_VERSION,
         "the bindings match the CUDA headers the package points to");
  expect(std::string(cuwrap::to_string(CUDA_ERROR_OUT_OF_MEMORY)) == "CUDA_ERROR_OUT_OF_MEMORY",
         "to_string names the enumerator");

  int major = 0;
  int minor = 0;
  if (cuwrap::nvrtc::raw::nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
    cuwrap::Program program(R"(extern "C" __global__ void k(float* x) { x[0] = 1.0f; })",
                            cuwrap::CodeType::Cxx, {.arch = "sm_90"});
    const cuwrap::ObjectCode ptx = program.compile(cuwrap::TargetType::Ptx);
    std::cout << "NVRTC " << major << '.' << minor << " compiled " << ptx.code().size()
              << " bytes of PTX\n";
    expect(!ptx.code().empty(), "NVRTC produced PTX");
  } else {
    std::cout << "NVRTC not loadable here (" << cuwrap::last_load_error() << "); skipped\n";
  }
  return failures == 0 ? 0 : 1;
}
