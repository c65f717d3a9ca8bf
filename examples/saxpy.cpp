// saxpy: out = a * x + y for a million floats, the kernel compiled at run time.
//
// Device → Stream → Program (NVRTC) → Kernel → Buffers → launch → copy back → check.
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <random>
#include <vector>

namespace {

constexpr const char* kSaxpySource = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    out[i] = a * x[i] + y[i];
  }
}
)";

int saxpy_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  std::cout << "device: " << device << ", sm_" << device.arch() << '\n';

  cuwrap::Program program(kSaxpySource, cuwrap::CodeType::Cxx, {.name = "saxpy.cu"});
  cuwrap::Kernel saxpy = program.compile(cuwrap::TargetType::Cubin).get_kernel("saxpy");

  const std::size_t n = std::size_t{1} << 20;
  const float a = 2.5f;
  std::vector<float> x(n);
  std::vector<float> y(n);
  std::mt19937 random(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = uniform(random);
    y[i] = uniform(random);
  }

  const std::size_t bytes = n * sizeof(float);
  cuwrap::Buffer dx = device.allocate(bytes, stream);
  cuwrap::Buffer dy = device.allocate(bytes, stream);
  cuwrap::Buffer dout = device.allocate(bytes, stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);

  const unsigned block = 256;
  const auto grid = static_cast<unsigned>((n + block - 1) / block);
  cuwrap::launch(stream, {.grid = grid, .block = block}, saxpy, a, dx, dy, dout, n);

  std::vector<float> out(n);
  dout.copy_to(out, stream);
  stream.sync();

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // The GPU may fuse the multiply-add; compare with a tolerance.
    if (!example::close(out[i], static_cast<double>(a) * x[i] + y[i])) {
      ++wrong;
    }
  }
  return example::verdict("saxpy", n, wrong);
}

}  // namespace

int main() { return example::run_on_gpu("saxpy", saxpy_example); }
