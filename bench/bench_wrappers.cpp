// Overhead of the generated wrappers against the raw C entry point, all in the same
// process and run:
//   RawCFunctionPointer   nvrtcVersion through a pointer from dlsym (the baseline)
//   CuwrapRaw             cuwrap::nvrtc::raw::nvrtcVersion (status return)
//   CuwrapTyped           cuwrap::nvrtc::nvrtcVersion (throwing, returns the pair)
// and, on a GPU:
//   RawPointerGetAttribute    cuPointerGetAttribute through cuGetProcAddress's pointer
//   TypedPointerGetAttribute  cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL>
//   RawGraphGetNodes          count query, a new std::vector, fill (what C++ code writes)
//   TypedGraphGetNodes        cuGraphGetNodes(graph) → std::vector (two calls, one allocation)
// The ratios (typed / raw; target <= 1.05) are printed after the run.
#include "bench_support.hpp"

#include <benchmark/benchmark.h>
#include <cuwrap/nvrtc.hpp>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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

// A graph of 16 empty nodes and one device allocation, built once.
struct Setup : cuwrap::bench::GpuSetup {
  CUgraph graph{};
  CUdeviceptr ptr{};
};

Setup& setup() {
  static Setup s;
  static const bool built = cuwrap::bench::build_setup(s, [](Setup& me) {
    me.graph = cuwrap::driver::cuGraphCreate(0);
    for (int i = 0; i < 16; ++i) {
      cuwrap::driver::cuGraphAddEmptyNode(me.graph, std::span<const CUgraphNode>());
    }
    me.ptr = cuwrap::driver::cuMemAlloc(4096);
  });
  static_cast<void>(built);
  return s;
}

void RawPointerGetAttribute(benchmark::State& state) {
  if (!cuwrap::bench::ready(state, setup())) {
    return;
  }
  using Fn = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
  const auto fn = cuwrap::bench::driver_entry<Fn>("cuPointerGetAttribute");
  const CUdeviceptr ptr = setup().ptr;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    int ordinal = -1;
    benchmark::DoNotOptimize(fn(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr));
    benchmark::DoNotOptimize(ordinal);
  }
  cuwrap::bench::record(state, "RawPointerGetAttribute", start);
}
BENCHMARK(RawPointerGetAttribute);

void TypedPointerGetAttribute(benchmark::State& state) {
  if (!cuwrap::bench::ready(state, setup())) {
    return;
  }
  const CUdeviceptr ptr = setup().ptr;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        cuwrap::driver::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL>(ptr));
  }
  cuwrap::bench::record(state, "TypedPointerGetAttribute", start);
}
BENCHMARK(TypedPointerGetAttribute);

// nvrtcVersion typed and through the raw C pointer in alternating blocks of 1024 calls
// within one loop (measure_alternating): at 2-3 ns per call, separate runs differ by more
// than the difference being measured.
void AlternatingNvrtcVersion(benchmark::State& state) {
  const NvrtcVersionFn fn = raw_c_function();
  if (fn == nullptr) {
    state.SkipWithError("libnvrtc not found");
    return;
  }
  cuwrap::bench::measure_alternating(
      state, "alternating_nvrtc_version", 1024,
      [] {
        auto r = cuwrap::nvrtc::nvrtcVersion();
        benchmark::DoNotOptimize(r.major);
        benchmark::DoNotOptimize(r.minor);
      },
      [fn] {
        int major = 0;
        int minor = 0;
        benchmark::DoNotOptimize(fn(&major, &minor));
        benchmark::DoNotOptimize(major);
        benchmark::DoNotOptimize(minor);
      },
      [] {});
}
BENCHMARK(AlternatingNvrtcVersion);

// The typed getter and the raw pointer in alternating blocks of 256 calls within one
// loop (measure_alternating): a like-for-like ratio for a call of a few tens of ns,
// where separate runs differ by more than the 5 % being measured.
void AlternatingPointerGetAttribute(benchmark::State& state) {
  if (!cuwrap::bench::ready(state, setup())) {
    return;
  }
  using Fn = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
  const auto fn = cuwrap::bench::driver_entry<Fn>("cuPointerGetAttribute");
  const CUdeviceptr ptr = setup().ptr;
  cuwrap::bench::measure_alternating(
      state, "alternating_getter", 256,
      [&] {
        benchmark::DoNotOptimize(
            cuwrap::driver::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL>(ptr));
      },
      [&] {
        int ordinal = -1;
        benchmark::DoNotOptimize(fn(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr));
        benchmark::DoNotOptimize(ordinal);
      },
      [] {});
}
BENCHMARK(AlternatingPointerGetAttribute);

void RawGraphGetNodes(benchmark::State& state) {
  if (!cuwrap::bench::ready(state, setup())) {
    return;
  }
  using Fn = CUresult (*)(CUgraph, CUgraphNode*, size_t*);
  const auto fn = cuwrap::bench::driver_entry<Fn>("cuGraphGetNodes");
  const CUgraph graph = setup().graph;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    size_t count = 0;
    benchmark::DoNotOptimize(fn(graph, nullptr, &count));
    std::vector<CUgraphNode> nodes(count);
    benchmark::DoNotOptimize(fn(graph, nodes.data(), &count));
    benchmark::DoNotOptimize(nodes.data());
  }
  cuwrap::bench::record(state, "RawGraphGetNodes", start);
}
BENCHMARK(RawGraphGetNodes);

void TypedGraphGetNodes(benchmark::State& state) {
  if (!cuwrap::bench::ready(state, setup())) {
    return;
  }
  const CUgraph graph = setup().graph;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::vector<CUgraphNode> nodes = cuwrap::driver::cuGraphGetNodes(graph);
    benchmark::DoNotOptimize(nodes.data());
  }
  cuwrap::bench::record(state, "TypedGraphGetNodes", start);
}
BENCHMARK(TypedGraphGetNodes);

void print_ratio(const char* what, const std::string& ours, const std::string& raw) {
  if (const auto c = cuwrap::bench::compare(ours, raw)) {
    std::printf("%s: %.1f ns vs %.1f ns raw, ratio %.3f (target <= 1.05)\n", what, c->ours_ns,
                c->raw_ns, c->ratio());
  }
}

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    print_ratio("typed attribute getter", "TypedPointerGetAttribute", "RawPointerGetAttribute");
    print_ratio("enumeration (cuGraphGetNodes)", "TypedGraphGetNodes", "RawGraphGetNodes");
    if (const auto c = cuwrap::bench::alternating_ratio("alternating_nvrtc_version")) {
      std::printf("typed wrapper (nvrtcVersion), alternating blocks: ratio %.3f (%.2f ns vs "
                  "%.2f ns; target <= 1.05)\n",
                  c->ratio(), c->ours_ns, c->raw_ns);
    }
    if (setup().error.empty()) {
      std::printf("%s\n", cuwrap::bench::entry_point_note("cuPointerGetAttribute").c_str());
    }
    if (const auto c = cuwrap::bench::alternating_ratio("alternating_getter")) {
      std::printf("typed attribute getter, alternating blocks: ratio %.3f (%.1f ns vs %.1f ns; "
                  "target <= 1.05)\n",
                  c->ratio(), c->ours_ns, c->raw_ns);
    }
  });
}
