// Separate compilation and linking with nvJitLink:
//   1. relocatable device code: a helper compiled to PTX and a kernel compiled to CUBIN,
//      each on its own, linked into one CUBIN;
//   2. link-time optimisation: both compiled to LTO-IR and linked with -lto, which can
//      inline the helper across the two programs (to CUBIN, and to PTX).
//
// Compiling and linking need no GPU (the target is sm_90 then); with a GPU the target
// is the device's architecture and both linked kernels are run and checked.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* kHelperSource = R"(
extern "C" __device__ float square(float x) { return x * x; }
)";

constexpr const char* kKernelSource = R"(
extern "C" __device__ float square(float x);
extern "C" __global__ void square_all(float* data, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] = square(data[i]);
}
)";

// Compile `source` as its own program.
cuwrap::ObjectCode compile(const char* source, const std::string& name, cuwrap::TargetType target,
                           const std::string& arch, bool lto) {
  cuwrap::ProgramOptions options{
      .name = name, .arch = arch, .relocatable_device_code = true, .link_time_optimization = lto};
  return cuwrap::Program(source, cuwrap::CodeType::Cxx, options).compile(target);
}

// Run `kernel` (square_all) over 0, 1, 2, ... and return the number of wrong squares.
std::size_t run_square_all(const cuwrap::Kernel& kernel) {
  cuwrap::Device device;
  cuwrap::Stream stream = device.create_stream();
  const std::size_t n = 4096;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = static_cast<float>(i);
  }
  cuwrap::Buffer data = device.allocate(n * sizeof(float), stream);
  data.copy_from(values, stream);
  cuwrap::launch(stream, {.grid = static_cast<unsigned>(n / 256), .block = 256}, kernel, data, n);
  data.copy_to(values, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (values[i] != static_cast<float>(i) * static_cast<float>(i)) {
      ++wrong;
    }
  }
  return wrong;
}

int linking_example() {
  const std::string gpu_reason = example::gpu_unavailable_reason();
  std::string arch = "sm_90";
  if (gpu_reason.empty()) {
    cuwrap::Device device;
    device.set_current();
    arch = "sm_" + device.arch();
  }
  std::cout << "target: " << arch << '\n';

  // 1. Relocatable device code: PTX + CUBIN → CUBIN.
  const cuwrap::ObjectCode helper_ptx =
      compile(kHelperSource, "helper.cu", cuwrap::TargetType::Ptx, arch, false);
  const cuwrap::ObjectCode kernel_cubin =
      compile(kKernelSource, "kernel.cu", cuwrap::TargetType::Cubin, arch, false);
  cuwrap::Linker rdc_linker({helper_ptx, kernel_cubin}, {.name = "rdc", .arch = arch});
  const cuwrap::ObjectCode rdc_linked = rdc_linker.link(cuwrap::TargetType::Cubin);
  std::cout << "rdc: " << helper_ptx.code().size() << " bytes of PTX + "
            << kernel_cubin.code().size() << " bytes of CUBIN → " << rdc_linked.code().size()
            << " bytes of CUBIN (" << rdc_linker.backend() << ")\n";

  // 2. Link-time optimisation: LTO-IR + LTO-IR → CUBIN, and → PTX. Only nvJitLink (12.3
  // or newer) optimises at link time; without it the Linker uses the driver's linker,
  // which would refuse link_time_optimization by name: that part is left out, saying so.
  if (rdc_linker.backend() != "nvJitLink") {
    std::cout << "lto: skipped: no usable nvJitLink, the driver's linker links without LTO "
                 "(install nvJitLink of this CUDA version or set CUWRAP_LIBNVJITLINK)\n";
    if (!gpu_reason.empty()) {
      std::cout << "linking: compiled and linked; GPU part skipped: " << gpu_reason << '\n';
      return 0;
    }
    return example::verdict("linking (rdc)", 4096,
                            run_square_all(rdc_linked.get_kernel("square_all")));
  }
  const cuwrap::ObjectCode helper_lto =
      compile(kHelperSource, "helper.cu", cuwrap::TargetType::Ltoir, arch, true);
  const cuwrap::ObjectCode kernel_lto =
      compile(kKernelSource, "kernel.cu", cuwrap::TargetType::Ltoir, arch, true);
  const cuwrap::LinkerOptions lto_options{
      .name = "lto", .arch = arch, .link_time_optimization = true};
  cuwrap::Linker lto_linker({helper_lto, kernel_lto}, lto_options);
  const cuwrap::ObjectCode lto_linked = lto_linker.link(cuwrap::TargetType::Cubin);
  cuwrap::Linker lto_ptx_linker({helper_lto, kernel_lto}, lto_options);
  const cuwrap::ObjectCode lto_ptx = lto_ptx_linker.link(cuwrap::TargetType::Ptx);
  std::cout << "lto: " << helper_lto.code().size() << " + " << kernel_lto.code().size()
            << " bytes of LTO-IR → " << lto_linked.code().size() << " bytes of CUBIN, "
            << lto_ptx.code().size() << " bytes of PTX\n";
  if (const std::string info = lto_linker.get_info_log(); !info.empty()) {
    std::cout << "nvJitLink info log:\n" << info << '\n';
  }

  const std::string ptx(lto_ptx.code().begin(), lto_ptx.code().end());
  if (rdc_linked.code().empty() || lto_linked.code().empty() ||
      ptx.find("square_all") == std::string::npos) {
    std::cerr << "linking: FAILED: empty link output, or no square_all in the linked PTX\n";
    return 1;
  }

  if (!gpu_reason.empty()) {
    std::cout << "linking: compiled and linked; GPU part skipped: " << gpu_reason << '\n';
    return 0;
  }
  const std::size_t wrong = run_square_all(rdc_linked.get_kernel("square_all")) +
                            run_square_all(lto_linked.get_kernel("square_all"));
  return example::verdict("linking (rdc and lto)", 2 * 4096, wrong);
}

}  // namespace

int main() { return example::run("linking", linking_example); }
