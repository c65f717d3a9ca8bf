// Overhead of the generated wrappers against the raw C entry point, all in the same
// process and run:
//   RawCFunctionPointer         nvrtcVersion through a pointer from dlsym, status discarded
//   RawCFunctionPointerChecked  the same with the status check a C or C++ caller writes
//                               (throw unless NVRTC_SUCCESS), outputs read
//   CuwrapRaw                   cuwrap::nvrtc::raw::nvrtcVersion (status return): against
//                               the unchecked pointer, the cost of run-time loading
//   CuwrapTyped                 cuwrap::nvrtc::nvrtcVersion (throwing, returns the pair):
//                               against the checked pointer, the cost of the typed form
// and, on a GPU:
//   RawPointerGetAttribute    cuPointerGetAttribute through cuGetProcAddress's pointer
//   TypedPointerGetAttribute  cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL>
//   RawGraphGetNodes          count query, a new std::vector, fill (what C++ code writes)
//   TypedGraphGetNodes        cuGraphGetNodes(graph) → std::vector (two calls, one allocation)
// The ratios (typed / raw; target <= 1.05) are printed after the run.
#include "bench_support.hpp"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <cuwrap/nvrtc.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
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

// What a caller's error macro does on failure; out of line, as such handlers are.
[[noreturn]] __attribute__((noinline, cold)) void fail_nvrtc(nvrtcResult status) {
  throw std::runtime_error("nvrtcVersion failed: " + std::to_string(status));
}

// The baseline of the typed form: the pointer called the way a C++ caller uses it, the
// status checked and both outputs read.
void checked_call(NvrtcVersionFn fn) {
  int major = 0;
  int minor = 0;
  const nvrtcResult status = fn(&major, &minor);
  if (status != NVRTC_SUCCESS) [[unlikely]] {
    fail_nvrtc(status);
  }
  benchmark::DoNotOptimize(major);
  benchmark::DoNotOptimize(minor);
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
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn(&major, &minor));
    benchmark::DoNotOptimize(major);
    benchmark::DoNotOptimize(minor);
  }
  cuwrap::bench::record(state, "RawCFunctionPointer", start);
}
BENCHMARK(RawCFunctionPointer);

void RawCFunctionPointerChecked(benchmark::State& state) {
  NvrtcVersionFn fn = raw_c_function();
  if (fn == nullptr) {
    state.SkipWithError("libnvrtc not found");
    return;
  }
  benchmark::DoNotOptimize(fn);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    checked_call(fn);
  }
  cuwrap::bench::record(state, "RawCFunctionPointerChecked", start);
}
BENCHMARK(RawCFunctionPointerChecked);

void CuwrapRaw(benchmark::State& state) {
  int major = 0;
  int minor = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuwrap::nvrtc::raw::nvrtcVersion(&major, &minor));
    benchmark::DoNotOptimize(major);
    benchmark::DoNotOptimize(minor);
  }
  cuwrap::bench::record(state, "CuwrapRaw", start);
}
BENCHMARK(CuwrapRaw);

void CuwrapTyped(benchmark::State& state) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto r = cuwrap::nvrtc::nvrtcVersion();
    benchmark::DoNotOptimize(r.major);
    benchmark::DoNotOptimize(r.minor);
  }
  cuwrap::bench::record(state, "CuwrapTyped", start);
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

// nvrtcVersion through cuwrap and through the raw C pointer, in alternating blocks of 1024
// calls within one loop, each block's loop placed at one of kLayouts byte offsets past a
// 64-byte boundary (measure_layouts). At 1.5-3 ns per call one cycle is 10-20 %, and
// where the compiler happens to place a loop moves the figure by as much: the same source
// measured 0.72 in one build and 1.16 in another. Sweeping the placement measures the
// calls rather than one placement. Three pairs:
//   typed against the checked pointer: the target (both check the status, read outputs);
//   raw:: against the unchecked pointer: the entry-point slot's load and null test;
//   typed against the unchecked pointer: for reference, what the status check and the
//   returned outputs cost over a call whose result is thrown away.
constexpr int kLayouts = 8;

// Time `block` calls of `call`, the loop placed `Pad` bytes past a 64-byte boundary (the
// padding is executed once per block: a few cycles per 1024 calls, alike for both sides).
template <int Pad, class Call>
__attribute__((noinline)) double time_block_at(Call& call, int block) {
  const auto start = std::chrono::steady_clock::now();
  asm volatile(".p2align 6\n\t.skip %c0, 0x90" : : "i"(Pad * 8));
  for (int i = 0; i < block; ++i) {
    call();
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

// Time `block` calls of `call` in placement `layout` (0 .. kLayouts - 1).
template <class Call, std::size_t... Pads>
double time_block_layout(int layout, Call& call, int block, std::index_sequence<Pads...>) {
  static constexpr std::array<double (*)(Call&, int), kLayouts> kTimers{
      &time_block_at<static_cast<int>(Pads), Call>...};
  return kTimers[static_cast<std::size_t>(layout)](call, block);
}

// The results() key of placement `k`'s total for `side` ("ours" or "raw").
std::string layout_key(const std::string& name, int k, const char* side) {
  return name + "_L" + std::to_string(k) + "_" + side;
}

// measure_alternating with the placement swept: round r times both sides in layout
// r % kLayouts, the order swapped every kLayouts rounds. Adds each layout's totals to
// results() under `name` + "_L<k>_ours" / "_raw"; print_layouts() reads them.
template <class Ours, class Raw>
void measure_layouts(benchmark::State& state, const std::string& name, int block, Ours ours,
                     Raw raw) {
  std::array<double, kLayouts> ours_ns{};
  std::array<double, kLayouts> raw_ns{};
  long long rounds = 0;
  const auto seq = std::make_index_sequence<kLayouts>();
  for (auto _ : state) {
    const int layout = static_cast<int>(rounds % kLayouts);
    if ((rounds / kLayouts) % 2 == 0) {
      ours_ns[layout] += time_block_layout(layout, ours, block, seq);
      raw_ns[layout] += time_block_layout(layout, raw, block, seq);
    } else {
      raw_ns[layout] += time_block_layout(layout, raw, block, seq);
      ours_ns[layout] += time_block_layout(layout, ours, block, seq);
    }
    ++rounds;
  }
  double ours_total = 0;
  double raw_total = 0;
  for (int k = 0; k < kLayouts; ++k) {
    cuwrap::bench::results()[layout_key(name, k, "ours")] += ours_ns[k];
    cuwrap::bench::results()[layout_key(name, k, "raw")] += raw_ns[k];
    ours_total += ours_ns[k];
    raw_total += raw_ns[k];
  }
  if (rounds > 0) {
    const double calls = static_cast<double>(rounds) * block;
    state.counters["ours_ns"] = ours_total / calls;
    state.counters["raw_ns"] = raw_total / calls;
    state.counters["ratio"] = ours_total / raw_total;
  }
}

// Print the per-layout ratios of measure_layouts(`name`): their median, range and the
// pooled figure.
void print_layouts(const char* what, const std::string& name, const char* target) {
  std::vector<double> ratios;
  double ours = 0;
  double raw = 0;
  for (int k = 0; k < kLayouts; ++k) {
    const auto& r = cuwrap::bench::results();
    const auto a = r.find(layout_key(name, k, "ours"));
    const auto b = r.find(layout_key(name, k, "raw"));
    if (a == r.end() || b == r.end() || b->second <= 0) {
      return;
    }
    ratios.push_back(a->second / b->second);
    ours += a->second;
    raw += b->second;
  }
  std::sort(ratios.begin(), ratios.end());
  const double median = (ratios[kLayouts / 2 - 1] + ratios[kLayouts / 2]) / 2;
  std::printf("%s, %d loop placements: median ratio %.3f (range %.3f-%.3f, pooled %.3f)%s\n", what,
              kLayouts, median, ratios.front(), ratios.back(), ours / raw, target);
}

void typed_call() {
  auto r = cuwrap::nvrtc::nvrtcVersion();
  benchmark::DoNotOptimize(r.major);
  benchmark::DoNotOptimize(r.minor);
}

void unchecked_call(NvrtcVersionFn fn) {
  int major = 0;
  int minor = 0;
  benchmark::DoNotOptimize(fn(&major, &minor));
  benchmark::DoNotOptimize(major);
  benchmark::DoNotOptimize(minor);
}

void cuwrap_raw_call() {
  int major = 0;
  int minor = 0;
  benchmark::DoNotOptimize(cuwrap::nvrtc::raw::nvrtcVersion(&major, &minor));
  benchmark::DoNotOptimize(major);
  benchmark::DoNotOptimize(minor);
}

// measure_layouts of `ours` against `raw(fn)`, fn being the dlsym pointer. Both are
// lambdas, so that each copy of the timed loop inlines its call.
template <class Ours, class Raw>
void against_pointer(benchmark::State& state, const std::string& name, Ours ours, Raw raw) {
  const NvrtcVersionFn fn = raw_c_function();
  if (fn == nullptr) {
    state.SkipWithError("libnvrtc not found");
    return;
  }
  measure_layouts(state, name, 1024, ours, [fn, raw] { raw(fn); });
}

void AlternatingNvrtcVersion(benchmark::State& state) {
  against_pointer(
      state, "nvrtc_typed_vs_checked", [] { typed_call(); },
      [](NvrtcVersionFn fn) { checked_call(fn); });
}
BENCHMARK(AlternatingNvrtcVersion);

void AlternatingNvrtcVersionRaw(benchmark::State& state) {
  against_pointer(
      state, "nvrtc_raw_vs_unchecked", [] { cuwrap_raw_call(); },
      [](NvrtcVersionFn fn) { unchecked_call(fn); });
}
BENCHMARK(AlternatingNvrtcVersionRaw);

void AlternatingNvrtcVersionUnchecked(benchmark::State& state) {
  against_pointer(
      state, "nvrtc_typed_vs_unchecked", [] { typed_call(); },
      [](NvrtcVersionFn fn) { unchecked_call(fn); });
}
BENCHMARK(AlternatingNvrtcVersionUnchecked);

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
    print_ratio("typed wrapper (nvrtcVersion) vs the checked pointer", "CuwrapTyped",
                "RawCFunctionPointerChecked");
    print_ratio("raw:: wrapper (nvrtcVersion) vs the unchecked pointer", "CuwrapRaw",
                "RawCFunctionPointer");
    print_layouts("typed wrapper (nvrtcVersion) vs the checked pointer, alternating blocks",
                  "nvrtc_typed_vs_checked", "; target <= 1.05");
    print_layouts("raw:: wrapper (nvrtcVersion) vs the unchecked pointer, alternating blocks",
                  "nvrtc_raw_vs_unchecked", "; target <= 1.05");
    print_layouts("typed wrapper (nvrtcVersion) vs the unchecked pointer, alternating blocks",
                  "nvrtc_typed_vs_unchecked",
                  " (for reference: the status check and the returned outputs)");
    if (setup().error.empty()) {
      std::printf("%s\n", cuwrap::bench::entry_point_note("cuPointerGetAttribute").c_str());
    }
    if (const auto c = cuwrap::bench::alternating_ratio("alternating_getter")) {
      std::printf(
          "typed attribute getter, alternating blocks: ratio %.3f (%.1f ns vs %.1f ns; "
          "target <= 1.05)\n",
          c->ratio(), c->ours_ns, c->raw_ns);
    }
  });
}
