// constant_table: evaluate a polynomial whose coefficients live in a __constant__ table,
// over typed device memory, in chunks.
//
// ObjectCode::get_global finds the __constant__ table and the __device__ counter as
// memory; DeviceSpan<T> counts in elements (subspans, copies from std::span, a kernel
// argument as T*); LaunchConfig::for_elements sizes the launch from the occupancy API and
// check(device, kernel) refuses an impossible one before anything runs;
// pointer_attributes tells where each piece of memory lives; ContextRef sets the primary
// context's limits (a printf FIFO for the kernel's report) and a regular Context of our own
// keeps its own limits, current only inside a ScopedCurrentContext. Needs a GPU; without
// one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr const char* kSource = R"(
__constant__ float coefficients[8];  // c0 + c1 x + ... + c7 x^7
__device__ unsigned long long evaluated;

extern "C" __global__ void polynomial(const float* x, float* y, unsigned long long n) {
  const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) {
    float value = coefficients[7];
    for (int k = 6; k >= 0; --k) value = value * x[i] + coefficients[k];  // Horner
    y[i] = value;
    atomicAdd(&evaluated, 1ull);
  }
  if (i == 0) printf("polynomial: p(%f) = %f\n", x[0], y[0]);
}
)";

constexpr std::array<float, 8> kCoefficients{1.0f, -0.5f, 0.25f, 2.0f, 0.0f, -1.0f, 0.125f, 0.5f};

float polynomial(float x) {
  float value = kCoefficients[7];
  for (int k = 6; k >= 0; --k) {
    value = value * x + kCoefficients[static_cast<std::size_t>(k)];
  }
  return value;
}

// Describe where the memory at `address` lives, as the driver sees it.
std::string where(const void* address) {
  const cuwrap::PointerAttributes a = cuwrap::pointer_attributes(address);
  if (!a.is_cuda_memory()) {
    return "host memory the driver does not know";
  }
  std::string text = a.memory_type == CU_MEMORYTYPE_DEVICE ? "device memory" : "host memory";
  if (a.device) {
    text += " of device " + std::to_string(a.device->device_id());
  }
  if (a.pool != nullptr) {
    text += ", from a memory pool";
  }
  if (a.is_managed) {
    text += ", managed";
  }
  return text + " (" + std::to_string(a.range_size) + " bytes from its allocation's start)";
}

std::string where(CUdeviceptr address) { return where(reinterpret_cast<const void*>(address)); }

int constant_table_example() {
  cuwrap::Device device;
  device.set_current();  // device 0's primary context
  cuwrap::Stream stream = device.create_stream();

  // Limits of the primary context, where get_global's memory and the launches below live:
  // a printf FIFO of 4 MiB for the kernel's one-line report.
  const cuwrap::ContextRef primary = device.primary_context();
  primary.set_limit(CU_LIMIT_PRINTF_FIFO_SIZE, std::size_t{4} << 20);
  // A regular context of our own, with its own limits; current only inside the guard.
  cuwrap::Context own =
      device.create_context({.resources = {}, .flags = CU_CTX_SCHED_BLOCKING_SYNC});
  own.set_limit(CU_LIMIT_STACK_SIZE, 8192);
  {
    const cuwrap::ScopedCurrentContext current = own.make_current();
    if (cuwrap::ContextRef::current() != std::optional<cuwrap::ContextRef>(own)) {
      std::cerr << "constant_table: FAILED: make_current did not make the context current\n";
      return 1;
    }
  }
  if (cuwrap::ContextRef::current() != std::optional<cuwrap::ContextRef>(primary) ||
      primary.limit(CU_LIMIT_PRINTF_FIFO_SIZE) < (std::size_t{4} << 20) ||
      own.limit(CU_LIMIT_STACK_SIZE) < 8192) {
    std::cerr << "constant_table: FAILED: contexts or limits are not as set\n";
    return 1;
  }
  std::cout << "primary context: printf FIFO " << primary.limit(CU_LIMIT_PRINTF_FIFO_SIZE)
            << " bytes; own context: stack " << own.limit(CU_LIMIT_STACK_SIZE)
            << " bytes, blocking sync "
            << ((own.flags() & CU_CTX_SCHED_MASK) == CU_CTX_SCHED_BLOCKING_SYNC) << '\n';

  const cuwrap::ObjectCode code =
      cuwrap::Program(kSource, cuwrap::CodeType::Cxx, {.name = "constant_table.cu"})
          .compile(cuwrap::TargetType::Cubin);
  const cuwrap::Kernel kernel = code.get_kernel("polynomial");
  std::cout << "kernels:";
  for (const std::string& name : code.kernel_names()) {
    std::cout << ' ' << name;
  }
  std::cout << '\n';

  // The __constant__ table and the __device__ counter, as typed device memory.
  const cuwrap::DeviceSpan<float> table = code.get_global("coefficients", device).as<float>();
  const cuwrap::DeviceSpan<unsigned long long> counter =
      code.get_global("evaluated", device).as<unsigned long long>();
  table.copy_from(kCoefficients, stream);
  const std::array<unsigned long long, 1> zero{0};
  counter.copy_from(zero, stream);
  std::cout << "coefficients: " << table.size() << " floats in " << where(table.handle()) << '\n';

  const std::size_t n = 1'000'003;  // not a multiple of any chunk or block size
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(n);
  }
  cuwrap::Buffer x_buffer = device.allocate(n * sizeof(float), stream);
  cuwrap::Buffer y_buffer = device.allocate(n * sizeof(float), stream);
  const cuwrap::DeviceSpan<float> xs = x_buffer.as<float>();
  const cuwrap::DeviceSpan<float> ys = y_buffer.as<float>();
  std::cout << "input: " << where(xs.handle()) << '\n';
  std::cout << "host vector: " << where(x.data()) << '\n';

  // In chunks: element offsets and counts only, no byte arithmetic.
  const std::size_t chunk = 300'000;
  std::vector<float> y(n);
  for (std::size_t offset = 0; offset < n; offset += chunk) {
    const std::size_t count = std::min(chunk, n - offset);
    xs.subspan(offset, count).copy_from(std::span<const float>(x).subspan(offset, count), stream);
    const cuwrap::LaunchConfig config = cuwrap::LaunchConfig::for_elements(kernel, count);
    config.check(device, kernel);
    cuwrap::launch(stream, config, kernel,
                   cuwrap::DeviceSpan<const float>(xs.subspan(offset, count)),
                   ys.subspan(offset, count), static_cast<unsigned long long>(count));
    ys.subspan(offset, count).copy_to(std::span<float>(y).subspan(offset, count), stream);
  }
  std::array<unsigned long long, 1> evaluated{};
  counter.copy_to(evaluated, stream);
  stream.sync();

  // A block no device has: refused before the launch, naming the value and the limit.
  try {
    cuwrap::LaunchConfig{.grid = 1, .block = 15000}.check(device, kernel);
    std::cerr << "constant_table: FAILED: a 15000-thread block was accepted\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cout << "refused before launching: " << e.what() << '\n';
  }

  if (evaluated[0] != n) {
    std::cerr << "constant_table: FAILED: the kernel counted " << evaluated[0] << " of " << n
              << " evaluations\n";
    return 1;
  }
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!example::close(y[i], polynomial(x[i]), 1e-4)) {
      ++wrong;
    }
  }
  return example::verdict("constant_table", n, wrong);
}

}  // namespace

int main() { return example::run_on_gpu("constant_table", constant_table_example); }
