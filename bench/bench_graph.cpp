// Replaying a captured graph of 1000 small kernels: Graph::launch against raw
// cuGraphLaunch of the same executable graph (target ratio <= 1.03), and both against
// 1000 individual launches (what graphs buy). Every iteration launches and waits, so
// the "per_kernel" counter is wall time per kernel including execution.
#include <cuwrap/cuwrap.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <memory>
#include <optional>
#include <string>

namespace {

constexpr int kKernels = 1000;

constexpr const char* kSource = R"(
extern "C" __global__ void tiny(unsigned* data) {
  if (threadIdx.x == 0) data[blockIdx.x] += 1u;
}
)";

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Kernel> kernel;
  std::optional<cuwrap::Buffer> data;
  cuwrap::Graph graph;
};

Setup& setup() {
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    cuwrap::ProgramOptions options;
    options.arch = "sm_" + r.device->arch();
    cuwrap::Program program(kSource, cuwrap::CodeType::Cxx, options);
    r.kernel.emplace(program.compile(cuwrap::TargetType::Cubin).get_kernel("tiny"));
    r.data.emplace(r.device->allocate(sizeof(unsigned), *r.stream));
    r.data->fill(std::uint8_t{0}, *r.stream);

    cuwrap::GraphBuilder builder = r.stream->create_graph_builder();
    builder.begin_building();
    cuwrap::LaunchConfig config;
    for (int i = 0; i < kKernels; ++i) {
      cuwrap::launch(builder, config, *r.kernel, *r.data);
    }
    r.graph = builder.end_building().complete();
    r.graph.upload(*r.stream);
    r.stream->sync();
  });
  return s;
}

void set_per_kernel(benchmark::State& state) {
  state.counters["per_kernel"] = benchmark::Counter(
      kKernels, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_GraphLaunch_cuwrap(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  for (auto _ : state) {
    s.graph.launch(*s.stream);
    s.stream->sync();
  }
  set_per_kernel(state);
}
BENCHMARK(BM_GraphLaunch_cuwrap)->UseRealTime();

void BM_GraphLaunch_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUgraphExec exec = s.graph.handle();
  const CUstream stream = s.stream->handle();
  for (auto _ : state) {
    if (cuwrap::driver::raw::cuGraphLaunch(exec, stream) != CUDA_SUCCESS ||
        cuwrap::driver::raw::cuStreamSynchronize(stream) != CUDA_SUCCESS) {
      state.SkipWithError("cuGraphLaunch failed");
      return;
    }
  }
  set_per_kernel(state);
}
BENCHMARK(BM_GraphLaunch_raw)->UseRealTime();

void BM_IndividualLaunches_cuwrap(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const cuwrap::LaunchConfig config;
  for (auto _ : state) {
    for (int i = 0; i < kKernels; ++i) {
      cuwrap::launch(*s.stream, config, *s.kernel, *s.data);
    }
    s.stream->sync();
  }
  set_per_kernel(state);
}
BENCHMARK(BM_IndividualLaunches_cuwrap)->UseRealTime();

void BM_IndividualLaunches_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUstream stream = s.stream->handle();
  const CUfunction function =
      cuwrap::driver::cuKernelGetFunction(s.kernel->handle());  // in the current context
  CUdeviceptr pointer = s.data->handle();
  void* args[] = {&pointer};
  for (auto _ : state) {
    for (int i = 0; i < kKernels; ++i) {
      if (cuwrap::driver::raw::cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, args,
                                              nullptr) != CUDA_SUCCESS) {
        state.SkipWithError("cuLaunchKernel failed");
        return;
      }
    }
    cuwrap::driver::raw::cuStreamSynchronize(stream);
  }
  set_per_kernel(state);
}
BENCHMARK(BM_IndividualLaunches_raw)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
