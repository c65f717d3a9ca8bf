// CPU cost of cuwrap::launch for an empty kernel with four arguments, against the raw
// driver call with prebuilt argument arrays, measured in the same run.
//
// Baselines: cuLaunchKernel called through the pointer cuGetProcAddress returns (what a
// C program does), once with a context-bound CUfunction and once with the CUkernel that
// cuwrap::launch passes. The stream is synchronised every kSyncEvery launches in every
// variant alike, so the queue never fills. After the run the ratios are printed; the
// target is cuwrap / raw <= 1.03.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace {

constexpr const char* kSource = R"(
extern "C" __global__ void empty(float a, const float* x, float* y, size_t n) {}
)";
constexpr int kSyncEvery = 1024;

using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Kernel> kernel;
  std::optional<cuwrap::Buffer> x, y;
  CUfunction function = nullptr;
  LaunchKernelFn launch_kernel = nullptr;
};

Setup& setup() {
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    cuwrap::Program program(kSource, cuwrap::CodeType::Cxx);
    r.kernel.emplace(program.compile(cuwrap::TargetType::Cubin).get_kernel("empty"));
    r.x.emplace(r.device->allocate(1024, *r.stream));
    r.y.emplace(r.device->allocate(1024, *r.stream));
    r.function = cuwrap::driver::cuKernelGetFunction(r.kernel->handle());
    r.launch_kernel = cuwrap::bench::driver_entry<LaunchKernelFn>("cuLaunchKernel");
  });
  return s;
}

template <class Body>
void measure(benchmark::State& state, const char* name, Body&& body) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUstream stream = s.stream->handle();
  int pending = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    body(s);
    if (++pending == kSyncEvery) {
      pending = 0;
      static_cast<void>(cuwrap::driver::raw::cuStreamSynchronize(stream));
    }
  }
  static_cast<void>(cuwrap::driver::raw::cuStreamSynchronize(stream));
  cuwrap::bench::record(state, name, start);
}

void raw_launch(benchmark::State& state, const char* name, bool use_kernel_handle) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  float a = 2.0f;
  CUdeviceptr x = s.x->handle();
  CUdeviceptr y = s.y->handle();
  std::size_t n = 256;
  void* args[] = {&a, &x, &y, &n};
  const CUfunction fn =
      use_kernel_handle ? reinterpret_cast<CUfunction>(s.kernel->handle()) : s.function;
  const CUstream stream = s.stream->handle();
  measure(state, name, [&](Setup& setup) {
    const CUresult status = setup.launch_kernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr);
    if (status != CUDA_SUCCESS) [[unlikely]] {
      state.SkipWithError("cuLaunchKernel failed");
    }
  });
}

void BM_RawCuLaunchKernel_CUfunction(benchmark::State& state) {
  raw_launch(state, "raw_cufunction", false);
}
BENCHMARK(BM_RawCuLaunchKernel_CUfunction);

void BM_RawCuLaunchKernel_CUkernel(benchmark::State& state) {
  raw_launch(state, "raw_cukernel", true);
}
BENCHMARK(BM_RawCuLaunchKernel_CUkernel);

void BM_CuwrapLaunch(benchmark::State& state) {
  const cuwrap::LaunchConfig config{.grid = 1, .block = 32};
  const float a = 2.0f;
  const std::size_t n = 256;
  measure(state, "cuwrap",
          [&](Setup& s) { cuwrap::launch(*s.stream, config, *s.kernel, a, *s.x, *s.y, n); });
}
BENCHMARK(BM_CuwrapLaunch);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    for (const char* baseline : {"raw_cufunction", "raw_cukernel"}) {
      if (const auto c = cuwrap::bench::compare("cuwrap", baseline)) {
        std::printf(
            "launch ratio cuwrap/%s = %.3f (%.1f ns vs %.1f ns per launch; target <= 1.03)\n",
            baseline, c->ratio(), c->ours_ns, c->raw_ns);
      }
    }
  });
}
