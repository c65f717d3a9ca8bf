// Timing GPU work with events: a host-to-device copy and a kernel, each between two
// events recorded with enable_timing, and the elapsed milliseconds as `end - start`.
//
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <iostream>
#include <vector>

namespace {

// Each element takes `iterations` steps of x ← x / 2 + 1, which converge to 2.
constexpr const char* kIterateSource = R"(
extern "C" __global__ void iterate(float* data, size_t n, int iterations) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    float x = data[i];
    for (int k = 0; k < iterations; ++k) {
      x = x * 0.5f + 1.0f;
    }
    data[i] = x;
  }
}
)";

int event_timing_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  cuwrap::Kernel iterate = cuwrap::Program(kIterateSource, cuwrap::CodeType::Cxx)
                               .compile(cuwrap::TargetType::Cubin)
                               .get_kernel("iterate");

  const std::size_t n = std::size_t{16} << 20;  // 16 Mi floats, 64 MiB
  const std::size_t bytes = n * sizeof(float);
  cuwrap::PinnedMemoryResource pinned;  // page-locked: copies run at full speed
  cuwrap::Buffer host = pinned.allocate(bytes, stream);
  cuwrap::Buffer data = device.allocate(bytes, stream);
  stream.sync();  // pinned pool memory is ready once reached
  auto values = host.host_span();
  std::fill(values.begin(), values.end(), std::byte{0});  // 0.0f in every float

  const cuwrap::EventOptions timing{.enable_timing = true};

  // A host-to-device copy.
  cuwrap::Event copy_start = stream.record(timing);
  data.copy_from(host, stream);
  cuwrap::Event copy_end = stream.record(timing);

  // The kernel, launched five times.
  const int iterations = 64;
  const unsigned block = 256;
  const auto grid = static_cast<unsigned>((n + block - 1) / block);
  cuwrap::Event kernel_start = stream.record(timing);
  for (int launch = 0; launch < 5; ++launch) {
    cuwrap::launch(stream, {.grid = grid, .block = block}, iterate, data, n, iterations);
  }
  cuwrap::Event kernel_end = stream.record(timing);
  kernel_end.sync();  // waits for everything recorded before

  const float copy_ms = copy_end - copy_start;
  const float kernel_ms = kernel_end - kernel_start;
  std::cout << "copy of " << (bytes >> 20) << " MiB: " << copy_ms << " ms ("
            << static_cast<double>(bytes) / (copy_ms * 1e6) << " GB/s)\n"
            << "5 launches of iterate over " << n << " floats: " << kernel_ms << " ms\n";

  int status = 0;
  if (!(copy_ms > 0.0f) || !(kernel_ms > 0.0f) || !copy_end.is_done()) {
    std::cerr << "event_timing: FAILED: elapsed times must be positive and events done\n";
    status = 1;
  }

  std::vector<float> result(n);
  data.copy_to(result, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (const float x : result) {
    if (!example::close(x, 2.0)) {
      ++wrong;
    }
  }
  return example::verdict("event_timing", n, wrong) | status;
}

}  // namespace

int main() { return example::run_on_gpu("event_timing", event_timing_example); }
