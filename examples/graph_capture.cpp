// A CUDA graph made by stream capture: two kernels captured once, replayed many times,
// then updated in place to work on another buffer, and written out as Graphviz DOT.
//
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <cstddef>
#include <filesystem>
#include <iostream>
#include <vector>

namespace {

constexpr const char* kGraphSource = R"(
extern "C" __global__ void add_one(float* data, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
extern "C" __global__ void times_two(float* data, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] *= 2.0f;
}
)";

// Capture add_one then times_two on `data` into a finished (not yet completed) builder.
cuwrap::GraphBuilder capture(const cuwrap::Stream& stream, const cuwrap::Kernel& add_one,
                             const cuwrap::Kernel& times_two, const cuwrap::Buffer& data,
                             std::size_t n) {
  const cuwrap::LaunchConfig config{.grid = static_cast<unsigned>((n + 255) / 256), .block = 256};
  cuwrap::GraphBuilder builder = stream.create_graph_builder();
  builder.begin_building();
  cuwrap::launch(builder, config, add_one, data, n);  // recorded into the graph, not run
  cuwrap::launch(builder, config, times_two, data, n);
  builder.end_building();
  return builder;
}

// Return how many elements of `data` differ from `expected`.
std::size_t count_wrong(const cuwrap::Buffer& data, const cuwrap::Stream& stream, float expected) {
  std::vector<float> values(data.size() / sizeof(float));
  data.copy_to(values, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (const float v : values) {
    if (v != expected) {
      ++wrong;
    }
  }
  return wrong;
}

int graph_capture_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  const cuwrap::ObjectCode code =
      cuwrap::Program(kGraphSource, cuwrap::CodeType::Cxx).compile(cuwrap::TargetType::Cubin);
  const cuwrap::Kernel add_one = code.get_kernel("add_one");
  const cuwrap::Kernel times_two = code.get_kernel("times_two");

  const std::size_t n = 1 << 16;
  cuwrap::Buffer first = device.allocate(n * sizeof(float), stream);
  cuwrap::Buffer second = device.allocate(n * sizeof(float), stream);
  first.fill(std::uint8_t{0}, stream);
  second.fill(std::uint8_t{0}, stream);

  cuwrap::GraphBuilder builder = capture(stream, add_one, times_two, first, n);
  const auto dot = std::filesystem::temp_directory_path() / "cuwrap_graph_capture.dot";
  builder.debug_dot_print(dot);
  cuwrap::Graph graph = builder.complete();
  graph.upload(stream);

  // Each replay computes x ← (x + 1) * 2; from 0, ten replays give 2^11 - 2 = 2046.
  const int replays = 10;
  for (int i = 0; i < replays; ++i) {
    graph.launch(stream);
  }
  const std::size_t wrong_first = count_wrong(first, stream, 2046.0f);

  // Same topology on another buffer: update the executable graph instead of rebuilding it.
  cuwrap::GraphBuilder other = capture(stream, add_one, times_two, second, n);
  graph.update(other);
  graph.launch(stream);
  const std::size_t wrong_second = count_wrong(second, stream, 2.0f);
  const std::size_t wrong_untouched = count_wrong(first, stream, 2046.0f);

  const auto dot_size = std::filesystem::file_size(dot);
  std::cout << replays << " replays of a 2-kernel graph, then 1 after update; graph written to "
            << dot.string() << " (" << dot_size << " bytes)\n";
  if (dot_size == 0) {
    std::cerr << "graph_capture: FAILED: empty DOT file\n";
    return 1;
  }
  return example::verdict("graph_capture", 3 * n, wrong_first + wrong_second + wrong_untouched);
}

}  // namespace

int main() { return example::run_on_gpu("graph_capture", graph_capture_example); }
