// The README's demo: what cuwrap does, on any machine.
//
// Without a GPU: print the cuwrap, bindings, NVRTC and nvJitLink versions; compile
// saxpy with Program to PTX, CUBIN and LTO-IR for sm_90; link the PTX with nvJitLink;
// check what came out. With a GPU, also run saxpy on it and check the result. Exits 0
// without a GPU (saying why the GPU part was skipped), non-zero when a check fails.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kSaxpySource = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

// Return whether `code` is an ELF image (CUBINs are).
bool is_elf(std::span<const char> code) {
  return code.size() > 4 && std::string_view(code.data(), 4) == "\177ELF";
}

// Count a failed check (and say which) in `failures`.
void check(bool ok, std::string_view what, int& failures) {
  if (!ok) {
    std::cerr << "demo: FAILED: " << what << '\n';
    ++failures;
  }
}

// Run saxpy on device 0 with the kernel compiled for it; return the wrong results.
std::size_t run_saxpy(const cuwrap::Device& device) {
  cuwrap::Stream stream = device.create_stream();
  cuwrap::Kernel saxpy = cuwrap::Program(kSaxpySource, cuwrap::CodeType::Cxx, {.name = "saxpy.cu"})
                             .compile(cuwrap::TargetType::Cubin)
                             .get_kernel("saxpy");
  const std::size_t n = 1 << 20;
  std::vector<float> x(n);
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 100) * 0.5f;
    y[i] = 1.0f;
  }
  cuwrap::Buffer dx = device.allocate(n * sizeof(float), stream);
  cuwrap::Buffer dy = device.allocate(n * sizeof(float), stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  cuwrap::launch(stream, {.grid = static_cast<unsigned>((n + 255) / 256), .block = 256}, saxpy,
                 2.0f, dx, dy, dy, n);  // y ← 2x + y in place
  dy.copy_to(y, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!example::close(y[i], 2.0 * x[i] + 1.0)) {
      ++wrong;
    }
  }
  return wrong;
}

int demo() {
  int failures = 0;

  // Versions: cuwrap, the headers the bindings come from, the loaded libraries.
  // nvJitLink is optional: without one of the bindings' CUDA major, the Linker below
  // uses the driver's linker, and the raw form says why it is missing.
  const auto [nvrtc_major, nvrtc_minor] = cuwrap::nvrtc::nvrtcVersion();
  unsigned link_major = 0;
  unsigned link_minor = 0;
  const bool have_nvjitlink =
      cuwrap::nvjitlink::raw::nvJitLinkVersion(&link_major, &link_minor) == NVJITLINK_SUCCESS;
  std::cout << "cuwrap " << cuwrap::kVersion << ", bindings generated from CUDA "
            << cuwrap::kBindingsCudaVersion / 1000 << '.'
            << cuwrap::kBindingsCudaVersion % 1000 / 10 << '\n'
            << "NVRTC " << nvrtc_major << '.' << nvrtc_minor << ", nvJitLink ";
  if (have_nvjitlink) {
    std::cout << link_major << '.' << link_minor << '\n';
  } else {
    std::cout << "not available: " << cuwrap::last_load_error() << '\n';
  }

  // Compile saxpy for sm_90 without needing a GPU: PTX, CUBIN and LTO-IR.
  const cuwrap::ProgramOptions options{.name = "saxpy.cu", .arch = "sm_90"};
  cuwrap::Program program(kSaxpySource, cuwrap::CodeType::Cxx, options);
  const cuwrap::ObjectCode ptx = program.compile(cuwrap::TargetType::Ptx);
  const cuwrap::ObjectCode cubin = program.compile(cuwrap::TargetType::Cubin);
  const cuwrap::ObjectCode ltoir = program.compile(cuwrap::TargetType::Ltoir);
  std::cout << "saxpy for sm_90 (" << program.backend() << "): PTX " << ptx.code().size()
            << " bytes, CUBIN " << cubin.code().size() << " bytes, LTO-IR " << ltoir.code().size()
            << " bytes\n";
  const std::string ptx_text(ptx.code().begin(), ptx.code().end());
  check(ptx_text.find(".entry saxpy") != std::string::npos, "the PTX defines saxpy", failures);
  check(is_elf(cubin.code()), "the CUBIN is an ELF image", failures);
  check(!ltoir.code().empty(), "the LTO-IR is not empty", failures);

  // Link the PTX with nvJitLink into a CUBIN.
  cuwrap::Linker linker({ptx}, {.name = "saxpy_linked", .arch = "sm_90"});
  const cuwrap::ObjectCode linked = linker.link(cuwrap::TargetType::Cubin);
  std::cout << "PTX linked by " << linker.backend() << " for sm_90: CUBIN " << linked.code().size()
            << " bytes\n";
  check(is_elf(linked.code()), "the linked CUBIN is an ELF image", failures);

  // The GPU part.
  if (const std::string reason = example::gpu_unavailable_reason(); !reason.empty()) {
    std::cout << "GPU part skipped: " << reason << '\n';
  } else {
    cuwrap::Device device;
    device.set_current();
    std::cout << "running saxpy on " << device << ", sm_" << device.arch() << '\n';
    const std::size_t wrong = run_saxpy(device);
    check(wrong == 0, "saxpy on the GPU computes 2x + y", failures);
    if (wrong == 0) {
      std::cout << "saxpy on the GPU: OK\n";
    }
  }

  if (failures == 0) {
    std::cout << "demo: OK\n";
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main() { return example::run("demo", demo); }
