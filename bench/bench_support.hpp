// What the benchmark programs share: the GPU setup each builds once, the raw driver
// entry points their C baselines call, the per-benchmark timings, and a main() body that
// runs the benchmarks and then prints the cuwrap/raw ratios from those timings.
#pragma once

#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <exception>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace cuwrap::bench {

/// Device 0 with a stream on it, shared by a program's benchmarks; a program's own
/// `Setup` derives from it and adds what its benchmarks need.
struct GpuSetup {
  std::string error;  ///< why the benchmarks cannot run; empty when they can
  std::optional<Device> device;
  std::optional<Stream> stream;
};

/// Open device 0 (made current) and a stream into `setup`, then run `build(setup)` for
/// the rest. A machine without a GPU, or any exception, leaves the reason in
/// `setup.error`.
///
/// @return whether the benchmarks can run (`setup.error` is empty).
template <class Setup, class Build>
bool build_setup(Setup& setup, Build&& build) {
  try {
    if (Device::count() == 0) {
      setup.error = "no CUDA device";
      return false;
    }
    setup.device.emplace(0);
    setup.device->set_current();
    setup.stream.emplace(setup.device->create_stream());
    build(setup);
  } catch (const std::exception& e) {
    setup.error = e.what();
  }
  return setup.error.empty();
}

/// Return true when `setup` can run; otherwise skip the benchmark with the reason.
inline bool ready(benchmark::State& state, const GpuSetup& setup) {
  if (setup.error.empty()) {
    return true;
  }
  state.SkipWithError(setup.error.c_str());
  return false;
}

/// Return the driver's entry point `name` as `Fn`, as a C program gets it from
/// cuGetProcAddress (the baselines call through these, not through cuwrap's loader).
///
/// @throws std::runtime_error when the driver has no such entry point.
template <class Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  detail::check(
      driver::raw::cuGetProcAddress(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found),
      "cuGetProcAddress");
  if (fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {
    throw std::runtime_error(std::string("cuGetProcAddress: no ") + name);
  }
  return reinterpret_cast<Fn>(fn);
}

/// Return a line saying whether cuwrap's loader and driver_entry(`name`) (the raw
/// baselines' cuGetProcAddress at CUDA_VERSION) hold the same entry point for `name`.
/// cuwrap asks for the ABI version of the header's prototype (cudaTypedefs.h, e.g. 4000
/// for cuLaunchKernel): were the driver to hand out another implementation for it, a
/// ratio would compare two driver functions, not cuwrap's overhead.
inline std::string entry_point_note(const char* name) {
  for (std::size_t i = 0; i < detail::kDriverSymbolCount; ++i) {
    if (std::string(detail::kDriverSymbols[i].name) != name) {
      continue;
    }
    void* ours = detail::entry(detail::g_driver_slots[i], detail::Library::Driver, i);
    void* raw = driver_entry<void*>(name);
    const int version = detail::kDriverSymbols[i].version;
    return std::string(name) + ": cuwrap (ABI " + std::to_string(version) +
           ") and the baseline (ABI " + std::to_string(CUDA_VERSION) + ") call " +
           (ours == raw ? "the same entry point" : "DIFFERENT entry points");
  }
  return std::string(name) + ": not in the bindings";
}

/// Return the nanoseconds per iteration of the last (final) run of each benchmark, by
/// the name it was recorded under.
inline std::map<std::string, double>& results() {
  static std::map<std::string, double> r;
  return r;
}

/// Record under `name` in results() the time per iteration of `state`'s loop, which
/// began at `start`.
inline void record(const benchmark::State& state, const std::string& name,
                   std::chrono::steady_clock::time_point start) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (state.iterations() > 0) {
    results()[name] = std::chrono::duration<double, std::nano>(elapsed).count() /
                      static_cast<double>(state.iterations());
  }
}

/// Call `launch()` once per iteration of `state`, synchronising `stream` every
/// `sync_every` calls and at the end (so the queue never fills), and record the time
/// per iteration under `name`.
template <class Launch>
void measure_launches(benchmark::State& state, const std::string& name, CUstream stream,
                      int sync_every, Launch&& launch) {
  int pending = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    launch();
    if (++pending == sync_every) {
      pending = 0;
      static_cast<void>(driver::raw::cuStreamSynchronize(stream));
    }
  }
  static_cast<void>(driver::raw::cuStreamSynchronize(stream));
  record(state, name, start);
}

/// Time `ours()` against `raw()` in alternating blocks of `block` calls each, within one
/// benchmark loop: each iteration times a block of each, the order swapped every
/// iteration, then calls `between()` untimed (e.g. a stream synchronisation). Drift of
/// the machine between separate benchmark runs (clocks, queue depth, other tenants)
/// then hits both alike, which separate runs of a few microseconds per call cannot
/// promise. Sets the counters ours_ns, raw_ns (per call) and ratio, and adds the totals
/// of every repetition to results() under `name` + "_ours" / "_raw" (ns per call, pooled
/// over repetitions; see alternating_ratio()).
template <class Ours, class Raw, class Between>
void measure_alternating(benchmark::State& state, const std::string& name, int block, Ours&& ours,
                         Raw&& raw, Between&& between) {
  using clock = std::chrono::steady_clock;
  double ours_ns = 0;
  double raw_ns = 0;
  long long rounds = 0;
  const auto time_block = [block](auto& call) {
    const auto start = clock::now();
    for (int i = 0; i < block; ++i) {
      call();
    }
    return std::chrono::duration<double, std::nano>(clock::now() - start).count();
  };
  for (auto _ : state) {
    if (rounds % 2 == 0) {
      ours_ns += time_block(ours);
      raw_ns += time_block(raw);
    } else {
      raw_ns += time_block(raw);
      ours_ns += time_block(ours);
    }
    ++rounds;
    between();
  }
  if (rounds == 0) {
    return;
  }
  const double calls = static_cast<double>(rounds) * block;
  state.counters["ours_ns"] = ours_ns / calls;
  state.counters["raw_ns"] = raw_ns / calls;
  state.counters["ratio"] = ours_ns / raw_ns;
  results()[name + "_ours_total"] += ours_ns;
  results()[name + "_raw_total"] += raw_ns;
  results()[name + "_calls"] += calls;
}

/// The recorded times of a cuwrap benchmark and of its raw baseline.
struct Comparison {
  double ours_ns;  ///< nanoseconds per iteration through cuwrap
  double raw_ns;   ///< nanoseconds per iteration of the raw baseline

  /// Return cuwrap's time over the baseline's.
  double ratio() const { return ours_ns / raw_ns; }
};

/// Return the times recorded under `ours` and `raw`, or nothing when either did not run.
inline std::optional<Comparison> compare(const std::string& ours, const std::string& raw) {
  const auto& r = results();
  const auto a = r.find(ours);
  const auto b = r.find(raw);
  if (a == r.end() || b == r.end() || a->second <= 0 || b->second <= 0) {
    return std::nullopt;
  }
  return Comparison{a->second, b->second};
}

/// Return the pooled times per call of measure_alternating(`name`) over every repetition
/// (ours, raw), or nothing when it did not run.
inline std::optional<Comparison> alternating_ratio(const std::string& name) {
  const auto& r = results();
  const auto calls = r.find(name + "_calls");
  if (calls == r.end() || calls->second <= 0) {
    return std::nullopt;
  }
  return Comparison{r.at(name + "_ours_total") / calls->second,
                    r.at(name + "_raw_total") / calls->second};
}

/// Run the benchmarks the command line selects, then `report()` (which prints the
/// ratios from results()).
///
/// @return main()'s exit status: 1 for an unrecognised argument, else 0.
template <class Report>
int run_benchmarks(int argc, char** argv, Report&& report) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  report();
  return 0;
}

}  // namespace cuwrap::bench
