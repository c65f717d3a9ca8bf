// CPU cost of launching an nvcc-compiled kernel through cuwrap::launch
// (<cuwrap/launch_cuda.hpp>) against the same kernel launched with <<<>>>, on the same
// stream, in the same run. Both end in cudaLaunchKernel; cuwrap adds the compile-time
// argument conversion and the configuration checks. Target: cuwrap / <<<>>> <= 1.03.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/launch_cuda.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>

namespace {

__global__ void empty(float a, const float* x, float* y, std::size_t n) {}

constexpr int kSyncEvery = 1024;

struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Buffer> x, y;
};

Setup& setup() {
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    r.x.emplace(r.device->allocate(1024, *r.stream));
    r.y.emplace(r.device->allocate(1024, *r.stream));
    // Load the module and warm the runtime up outside the timed loops.
    empty<<<1, 32, 0, r.stream->handle()>>>(1.0f, nullptr, nullptr, 0);
    cuwrap::detail::check_runtime(cudaStreamSynchronize(r.stream->handle()),
                                  "cudaStreamSynchronize");
  });
  return s;
}

template <class Body>
void measure(benchmark::State& state, const char* name, Body&& body) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  cuwrap::bench::measure_launches(state, name, s.stream->handle(), kSyncEvery, [&] { body(s); });
}

void BM_TripleChevron(benchmark::State& state) {
  const std::size_t n = 256;
  measure(state, "triple_chevron", [&](Setup& s) {
    empty<<<1, 32, 0, s.stream->handle()>>>(2.0f, reinterpret_cast<const float*>(s.x->handle()),
                                            reinterpret_cast<float*>(s.y->handle()), n);
  });
}
BENCHMARK(BM_TripleChevron);

void BM_CuwrapLaunchNvcc(benchmark::State& state) {
  const cuwrap::LaunchConfig config{.grid = 1, .block = 32};
  const std::size_t n = 256;
  measure(state, "cuwrap_nvcc",
          [&](Setup& s) { cuwrap::launch(*s.stream, config, empty, 2.0f, *s.x, *s.y, n); });
}
BENCHMARK(BM_CuwrapLaunchNvcc);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    if (const auto c = cuwrap::bench::compare("cuwrap_nvcc", "triple_chevron")) {
      std::printf(
          "nvcc launch ratio cuwrap/<<<>>> = %.3f (%.1f ns vs %.1f ns per launch; target <= "
          "1.03)\n",
          c->ratio(), c->ours_ns, c->raw_ns);
    }
  });
}
