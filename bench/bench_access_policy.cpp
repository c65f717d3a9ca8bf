// The L2 access policy window (StreamRef::set_access_policy_window), measured in one run:
//
//   a kernel re-reads a "hot" buffer that fits in the persisting part of L2 while it
//   streams through a "cold" buffer four times the L2's size, which evicts the hot lines
//   unless they persist; once with the window over the hot buffer, once without
//
// Both benchmarks launch the same kernel on the same buffers and stream, timed with CUDA
// events (manual time), alternating per iteration so that clocks and neighbours affect
// both alike. After the run: the time ratio window-on / window-off (below 1 where
// persistence pays). Without a GPU, or on a device without persisting L2 (before sm_80),
// every benchmark is skipped with the reason.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace {

constexpr const char* kSource = R"(
extern "C" __global__ void reread(const float* hot, unsigned long long hot_count,
                                  const float* cold, unsigned long long cold_count,
                                  float* out, int rounds) {
  const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  float sum = 0.0f;
  for (int r = 0; r < rounds; ++r) {
    for (unsigned long long i = first; i < hot_count; i += stride) sum += hot[i];
    const unsigned long long slice = cold_count / rounds;
    for (unsigned long long i = first; i < slice; i += stride) sum += cold[r * slice + i];
  }
  if (sum == 123456.0f) out[0] = sum;  // keeps the reads; never true for zeroed buffers
}
)";

constexpr int kRounds = 16;

struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Kernel> kernel;
  std::optional<cuwrap::Buffer> hot;
  std::optional<cuwrap::Buffer> cold;
  std::optional<cuwrap::Buffer> out;
  std::optional<cuwrap::Event> start;
  std::optional<cuwrap::Event> end;
  cuwrap::LaunchConfig config{};
};

Setup& setup() {
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    const cuwrap::Device& dev = *r.device;
    const auto persisting =
        static_cast<std::size_t>(dev.attribute(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE));
    const auto window =
        static_cast<std::size_t>(dev.attribute(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE));
    const auto l2 = static_cast<std::size_t>(dev.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
    if (persisting == 0 || window == 0) {
      r.error = "the device has no persisting L2 (needs sm_80 or newer)";
      return;
    }
    const std::size_t hot_bytes = std::min(persisting, window) / 4 * 4;
    dev.primary_context().set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, persisting);
    cuwrap::ProgramOptions options;
    options.arch = "sm_" + dev.arch();
    r.kernel.emplace(cuwrap::Program(kSource, cuwrap::CodeType::Cxx, options)
                         .compile(cuwrap::TargetType::Cubin)
                         .get_kernel("reread"));
    r.hot.emplace(dev.allocate(hot_bytes, *r.stream));
    r.cold.emplace(dev.allocate(4 * l2, *r.stream));
    r.out.emplace(dev.allocate(sizeof(float), *r.stream));
    r.hot->fill(std::uint8_t{0}, *r.stream);
    r.cold->fill(std::uint8_t{0}, *r.stream);
    r.start.emplace(dev.create_event({.enable_timing = true}));
    r.end.emplace(dev.create_event({.enable_timing = true}));
    r.config = {
        .grid = static_cast<unsigned>(dev.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) * 4),
        .block = 256};
    r.stream->sync();
  });
  return s;
}

void run(benchmark::State& state, bool window_on) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const cuwrap::Stream& stream = *s.stream;
  if (window_on) {
    stream.set_access_policy_window(*s.hot, 1.0F);
  } else {
    stream.reset_access_policy_window();
  }
  stream.sync();
  cuwrap::driver::cuCtxResetPersistingL2Cache();  // no lines persist from the other run
  const auto hot_count = static_cast<unsigned long long>(s.hot->size() / sizeof(float));
  const auto cold_count = static_cast<unsigned long long>(s.cold->size() / sizeof(float));
  for (auto _ : state) {
    stream.record(*s.start);
    cuwrap::launch(stream, s.config, *s.kernel, *s.hot, hot_count, *s.cold, cold_count, *s.out,
                   kRounds);
    stream.record(*s.end);
    s.end->sync();
    const double seconds = static_cast<double>(*s.end - *s.start) * 1e-3;
    state.SetIterationTime(seconds);
    cuwrap::bench::results()[window_on ? "window_on" : "window_off"] += seconds;
  }
  stream.reset_access_policy_window();
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(kRounds * s.hot->size() + s.cold->size()));
}

}  // namespace

void BM_ReReadL2_WindowOff(benchmark::State& state) { run(state, false); }
void BM_ReReadL2_WindowOn(benchmark::State& state) { run(state, true); }

// Alternating registrations, so that each runs between runs of the other.
BENCHMARK(BM_ReReadL2_WindowOff)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(50);
BENCHMARK(BM_ReReadL2_WindowOn)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(50);
BENCHMARK(BM_ReReadL2_WindowOff)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(50);
BENCHMARK(BM_ReReadL2_WindowOn)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(50);

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    const auto& r = cuwrap::bench::results();
    const auto on = r.find("window_on");
    const auto off = r.find("window_off");
    if (on != r.end() && off != r.end() && off->second > 0) {
      std::printf("access policy window: time on / off = %.3f (below 1: persistence pays)\n",
                  on->second / off->second);
    }
  });
}
