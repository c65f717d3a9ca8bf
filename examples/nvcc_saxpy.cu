// nvcc_saxpy: out = a * x + y with a kernel compiled by nvcc, launched through cuwrap.
//
// <cuwrap/launch_cuda.hpp> checks the arguments against saxpy's parameters at compile
// time (try passing `x` where `n` goes: it does not compile) and launches on cuwrap's
// stream. Built only when CMake finds nvcc; needs a GPU to run (otherwise it says so
// and exits 0).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/launch_cuda.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <random>
#include <vector>

namespace {

__global__ void saxpy(float a, const float* x, const float* y, float* out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    out[i] = a * x[i] + y[i];
  }
}

int nvcc_saxpy_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  std::cout << "device: " << device << ", sm_" << device.arch() << '\n';

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

  // Buffers become the kernel's float pointers; the checks happen at compile time.
  const unsigned block = 256;
  const auto grid = static_cast<unsigned>((n + block - 1) / block);
  cuwrap::launch(stream, {.grid = grid, .block = block}, saxpy, a, dx, dy, dout, n);

  std::vector<float> out(n);
  dout.copy_to(out, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!example::close(out[i], static_cast<double>(a) * x[i] + y[i])) {
      ++wrong;
    }
  }
  return example::verdict("nvcc_saxpy", n, wrong);
}

}  // namespace

int main() { return example::run_on_gpu("nvcc_saxpy", nvcc_saxpy_example); }
