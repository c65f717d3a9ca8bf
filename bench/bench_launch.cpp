// CPU cost of cuwrap::launch for an empty kernel with four arguments, against the raw
// driver call with prebuilt argument arrays, measured in the same run.
//
// Baselines: cuLaunchKernel called through the pointer cuGetProcAddress returns (what a
// C program does), once with a context-bound CUfunction and once with the CUkernel that
// cuwrap::launch passes. The stream is synchronised every kSyncEvery launches in every
// variant alike, so the queue never fills. cuwrap::launch runs on the Stream, on a
// StreamRef made from it, and on the bare CUstream (a StreamRef that knows no context,
// as another library's stream arrives). After the run the ratios are printed; the
// target is cuwrap / raw <= 1.03.
//
// Programmatic dependent launch (sm_90+): pairs of short kernels (the first triggers its
// dependents at once and then works ~5 us, the second waits with griddepcontrol.wait
// and works ~5 us) launched plainly and with programmatic_stream_serialization; the GPU
// time per pair and the kernel-to-kernel gap (second's start − first's end, from
// %globaltimer, negative when they overlap) are reported for both.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace {

constexpr const char* kSource = R"(
extern "C" __global__ void empty(float a, const float* x, float* y, size_t n) {}
)";
constexpr int kSyncEvery = 1024;

constexpr const char* kPdlSource = R"(
__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ void work(unsigned long long ns) {
  const unsigned long long start = now();
  while (now() - start < ns) {}
}
extern "C" __global__ void first(unsigned long long* stamps, unsigned long long ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  work(ns);
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[0] = now();
}
extern "C" __global__ void second(unsigned long long* stamps, unsigned long long ns) {
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[1] = now();
  asm volatile("griddepcontrol.wait;" ::: "memory");
  work(ns);
}
)";
constexpr unsigned long long kPairWorkNs = 5000;
constexpr int kPairsPerSync = 256;

using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Kernel> kernel;
  std::optional<cuwrap::Buffer> x, y;
  CUfunction function = nullptr;
  LaunchKernelFn launch_kernel = nullptr;
  std::optional<cuwrap::Kernel> first, second;  // PDL pair (sm_90+ only)
  std::optional<cuwrap::Buffer> stamps;
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
    if (r.device->compute_capability().major >= 9) {
      const cuwrap::ObjectCode pdl =
          cuwrap::Program(kPdlSource, cuwrap::CodeType::Cxx).compile(cuwrap::TargetType::Cubin);
      r.first.emplace(pdl.get_kernel("first"));
      r.second.emplace(pdl.get_kernel("second"));
      r.stamps.emplace(r.device->allocate(2 * sizeof(unsigned long long), *r.stream));
    }
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

// cuwrap::launch through a StreamRef: made once from the Stream (what a function taking
// StreamRef receives), and made from the bare CUstream as another library would pass it.
void BM_CuwrapLaunchStreamRef(benchmark::State& state) {
  const cuwrap::LaunchConfig config{.grid = 1, .block = 32};
  const float a = 2.0f;
  const std::size_t n = 256;
  measure(state, "cuwrap_ref", [&](Setup& s) {
    const cuwrap::StreamRef stream = *s.stream;
    cuwrap::launch(stream, config, *s.kernel, a, *s.x, *s.y, n);
  });
}
BENCHMARK(BM_CuwrapLaunchStreamRef);

void BM_CuwrapLaunchForeignStreamRef(benchmark::State& state) {
  const cuwrap::LaunchConfig config{.grid = 1, .block = 32};
  const float a = 2.0f;
  const std::size_t n = 256;
  measure(state, "cuwrap_foreign", [&](Setup& s) {
    const CUstream foreign = s.stream->handle();  // as another library hands it over
    cuwrap::launch(foreign, config, *s.kernel, a, *s.x, *s.y, n);
  });
}
BENCHMARK(BM_CuwrapLaunchForeignStreamRef);

// cuwrap::launch and the raw cuLaunchKernel (CUfunction) in alternating blocks of 64
// within one loop (bench_support.hpp's measure_alternating): the like-for-like ratio that
// separate benchmark runs, minutes apart, measure less steadily. The stream is
// synchronised, untimed, every 1024 launches.
// `foreign`: cuwrap::launch takes the bare CUstream (a StreamRef made from it, no context
// known) instead of the Stream.
void launch_alternating(benchmark::State& state, const char* name, bool foreign) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  constexpr int kBlock = 64;
  float a = 2.0f;
  CUdeviceptr x = s.x->handle();
  CUdeviceptr y = s.y->handle();
  std::size_t n = 256;
  void* args[] = {&a, &x, &y, &n};
  const cuwrap::LaunchConfig config{.grid = 1, .block = 32};
  const CUstream stream = s.stream->handle();
  bool failed = false;
  int rounds = 0;
  cuwrap::bench::measure_alternating(
      state, name, kBlock,
      [&] {
        if (foreign) {
          cuwrap::launch(stream, config, *s.kernel, a, *s.x, *s.y, n);
        } else {
          cuwrap::launch(*s.stream, config, *s.kernel, a, *s.x, *s.y, n);
        }
      },
      [&] {
        failed |= s.launch_kernel(s.function, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr) !=
                  CUDA_SUCCESS;
      },
      [&] {
        if (++rounds % (kSyncEvery / (2 * kBlock)) == 0) {
          static_cast<void>(cuwrap::driver::raw::cuStreamSynchronize(stream));
        }
      });
  static_cast<void>(cuwrap::driver::raw::cuStreamSynchronize(stream));
  if (failed) {
    state.SkipWithError("cuLaunchKernel failed");
  }
}
void BM_LaunchAlternating(benchmark::State& state) {
  launch_alternating(state, "alternating", false);
}
BENCHMARK(BM_LaunchAlternating);

void BM_LaunchAlternatingForeignStreamRef(benchmark::State& state) {
  launch_alternating(state, "alternating_foreign", true);
}
BENCHMARK(BM_LaunchAlternatingForeignStreamRef);

// GPU time per pair of dependent kernels, plain or with PDL; the gap of the last pair.
void pair_launch(benchmark::State& state, const char* name, bool pdl) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  if (!s.first) {
    state.SkipWithError("programmatic dependent launch needs sm_90 or newer");
    return;
  }
  const cuwrap::LaunchConfig first_config{.grid = 1, .block = 32};
  const cuwrap::LaunchConfig second_config{
      .grid = 1, .block = 32, .programmatic_stream_serialization = pdl};
  double gap_sum = 0;
  int gap_count = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int i = 0; i < kPairsPerSync; ++i) {
      cuwrap::launch(*s.stream, first_config, *s.first, *s.stamps, kPairWorkNs);
      cuwrap::launch(*s.stream, second_config, *s.second, *s.stamps, kPairWorkNs);
    }
    s.stream->sync();
    unsigned long long stamps[2] = {0, 0};
    s.stamps->copy_to(std::as_writable_bytes(std::span(stamps)), *s.stream);
    s.stream->sync();
    gap_sum += static_cast<double>(static_cast<long long>(stamps[1] - stamps[0]));
    ++gap_count;
  }
  cuwrap::bench::record(state, name, start);
  cuwrap::bench::results()[std::string(name) + "_gap"] = gap_sum / gap_count;
  state.counters["pairs_per_iteration"] = kPairsPerSync;
  state.counters["gap_ns"] = gap_sum / gap_count;
}

void BM_PairPlain(benchmark::State& state) { pair_launch(state, "pair_plain", false); }
BENCHMARK(BM_PairPlain)->Unit(benchmark::kMicrosecond);

void BM_PairPdl(benchmark::State& state) { pair_launch(state, "pair_pdl", true); }
BENCHMARK(BM_PairPdl)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    for (const char* ours : {"cuwrap", "cuwrap_ref", "cuwrap_foreign"}) {
      for (const char* baseline : {"raw_cufunction", "raw_cukernel"}) {
        if (const auto c = cuwrap::bench::compare(ours, baseline)) {
          std::printf("launch ratio %s/%s = %.3f (%.1f ns vs %.1f ns per launch; target <= 1.03)\n",
                      ours, baseline, c->ratio(), c->ours_ns, c->raw_ns);
        }
      }
    }
    if (setup().error.empty()) {
      std::printf("%s\n", cuwrap::bench::entry_point_note("cuLaunchKernel").c_str());
    }
    if (const auto c = cuwrap::bench::alternating_ratio("alternating")) {
      std::printf(
          "launch ratio cuwrap/raw_cufunction, alternating blocks = %.3f (%.1f ns vs %.1f ns "
          "per launch; target <= 1.03)\n",
          c->ratio(), c->ours_ns, c->raw_ns);
    }
    if (const auto c = cuwrap::bench::alternating_ratio("alternating_foreign")) {
      std::printf(
          "launch ratio cuwrap(StreamRef from a CUstream)/raw_cufunction, alternating blocks = "
          "%.3f (%.1f ns vs %.1f ns per launch; target <= 1.03)\n",
          c->ratio(), c->ours_ns, c->raw_ns);
    }
    if (const auto c = cuwrap::bench::compare("pair_pdl", "pair_plain")) {
      const auto& r = cuwrap::bench::results();
      std::printf(
          "PDL pair / plain pair = %.3f (%.2f us vs %.2f us per pair); kernel-to-kernel gap "
          "%.0f ns with PDL vs %.0f ns plain (negative: overlap)\n",
          c->ratio(), c->ours_ns / 1e3 / kPairsPerSync, c->raw_ns / 1e3 / kPairsPerSync,
          r.at("pair_pdl_gap"), r.at("pair_plain_gap"));
    }
  });
}
