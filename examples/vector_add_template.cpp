// A templated kernel, vector_add<T>, instantiated for three types through NVRTC name
// expressions, and each instantiation looked up by its C++ name.
//
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kVectorAddSource = R"(
template <typename T>
__global__ void vector_add(const T* a, const T* b, T* c, size_t n) {
  const size_t tid = threadIdx.x + blockIdx.x * size_t(blockDim.x);
  for (size_t i = tid; i < n; i += size_t(gridDim.x) * blockDim.x) {
    c[i] = a[i] + b[i];
  }
}
)";

// Add two vectors of T on the GPU with the instantiation `expression`; return the
// number of wrong results.
template <class T>
std::size_t add_vectors(const cuwrap::ObjectCode& code, const std::string& expression,
                        const cuwrap::Device& device, const cuwrap::Stream& stream) {
  const cuwrap::Kernel kernel = code.get_kernel(expression);
  std::cout << expression << " → " << code.lowered_name(expression) << ", "
            << kernel.attributes().num_regs() << " registers\n";

  const std::size_t n = 100'000;
  std::vector<T> a(n);
  std::vector<T> b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<T>(i % 1000);
    b[i] = static_cast<T>(3 * (i % 7)) / static_cast<T>(2);
  }
  cuwrap::Buffer da = device.allocate(n * sizeof(T), stream);
  cuwrap::Buffer db = device.allocate(n * sizeof(T), stream);
  cuwrap::Buffer dc = device.allocate(n * sizeof(T), stream);
  da.copy_from(a, stream);
  db.copy_from(b, stream);

  // A grid-stride loop: fewer blocks than elements, as many as keep every SM busy.
  const int blocks_per_sm = kernel.occupancy().max_active_blocks_per_multiprocessor(256, 0);
  const auto grid =
      static_cast<unsigned>(blocks_per_sm * device.properties().multiprocessor_count());
  cuwrap::launch(stream, {.grid = grid, .block = 256}, kernel, da, db, dc, n);

  std::vector<T> c(n);
  dc.copy_to(c, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (c[i] != static_cast<T>(a[i] + b[i])) {  // one addition: exact for every type
      ++wrong;
    }
  }
  return wrong;
}

int vector_add_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();

  cuwrap::Program program(kVectorAddSource, cuwrap::CodeType::Cxx,
                          {.name = "vector_add.cu", .std = "c++17"});
  const std::vector<std::string> expressions{"vector_add<float>", "vector_add<double>",
                                             "vector_add<int>"};
  std::string log;
  const cuwrap::ObjectCode code =
      program.compile(cuwrap::TargetType::Cubin, expressions, {.log = &log});
  if (!log.empty()) {
    std::cout << "NVRTC log:\n" << log << '\n';
  }

  const std::size_t wrong = add_vectors<float>(code, expressions[0], device, stream) +
                            add_vectors<double>(code, expressions[1], device, stream) +
                            add_vectors<int>(code, expressions[2], device, stream);
  return example::verdict("vector_add<float, double, int>", 3 * 100'000, wrong);
}

}  // namespace

int main() { return example::run_on_gpu("vector_add_template", vector_add_example); }
