// Overhead of the generated wrappers against the raw C entry point, on a cheap call
// that needs no GPU (nvrtcVersion). All three run in the same process and run:
//   RawCFunctionPointer   the C function through a pointer from dlsym (the baseline)
//   CuwrapRaw             cuwrap::nvrtc::raw::nvrtcVersion (status return)
//   CuwrapTyped           cuwrap::nvrtc::nvrtcVersion (throwing, returns the pair)
#include <benchmark/benchmark.h>
#include <cuwrap/nvrtc.hpp>
#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace {

using NvrtcVersionFn = nvrtcResult (*)(int*, int*);

NvrtcVersionFn raw_c_function() {
  static NvrtcVersionFn fn = [] {
    const std::string lib = "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000);
    void* handle = dlopen(lib.c_str(), RTLD_NOW);
    if (handle == nullptr) {
      handle = dlopen(("/usr/local/cuda/lib64/" + lib).c_str(), RTLD_NOW);
    }
    return handle != nullptr ? reinterpret_cast<NvrtcVersionFn>(dlsym(handle, "nvrtcVersion"))
                             : nullptr;
  }();
  return fn;
}

void RawCFunctionPointer(benchmark::State& state) {
  NvrtcVersionFn fn = raw_c_function();
  if (fn == nullptr) {
    state.SkipWithError("libnvrtc not found");
    return;
  }
  benchmark::DoNotOptimize(fn);
  int major = 0;
  int minor = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn(&major, &minor));
    benchmark::DoNotOptimize(major);
    benchmark::DoNotOptimize(minor);
  }
}
BENCHMARK(RawCFunctionPointer);

void CuwrapRaw(benchmark::State& state) {
  int major = 0;
  int minor = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuwrap::nvrtc::raw::nvrtcVersion(&major, &minor));
    benchmark::DoNotOptimize(major);
    benchmark::DoNotOptimize(minor);
  }
}
BENCHMARK(CuwrapRaw);

void CuwrapTyped(benchmark::State& state) {
  for (auto _ : state) {
    auto r = cuwrap::nvrtc::nvrtcVersion();
    benchmark::DoNotOptimize(r.major);
    benchmark::DoNotOptimize(r.minor);
  }
}
BENCHMARK(CuwrapTyped);

}  // namespace

BENCHMARK_MAIN();
