// NVRTC compile time of cuda.core's saxpy through cuwrap::Program against the raw
// NVRTC calls (create, compile, get PTX/CUBIN, destroy), measured in the same run. No
// GPU needed: both compile for an explicit "sm_90". The ratios are printed at the end.
//
// Program cache: Program::compile with a warm InMemoryProgramCache and a warm
// FileProgramCache (in a private temporary directory) against the raw NVRTC compile of
// the same source; the expectation is a speed-up above 100x.
//
// The on-disk hit alone (FileCacheHit): ProgramCache::get_object_code on a
// FileProgramCache whose entry an earlier cache wrote, with the key built once, so that
// the loop holds only what the file cache adds (open, read, check, decode) and no
// Program or key building; /0 on the cache kept open, /1 on a cache opened anew each
// iteration. MemoryCacheHit is the same lookup in an InMemoryProgramCache. The lookup
// needs no GPU (NVRTC compiles the entry once, before the loop).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/nvrtc.hpp>

#include <benchmark/benchmark.h>

#include "../tests/support/kernel_sources.hpp"
#include "bench_support.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using cuwrap::testing::kSaxpySource;

template <class Body>
void measure(benchmark::State& state, const std::string& name, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    try {
      body();
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  cuwrap::bench::record(state, name, start);
}

void BM_CuwrapProgram(benchmark::State& state) {
  const auto target = static_cast<cuwrap::TargetType>(state.range(0));
  cuwrap::ProgramOptions options;
  options.arch = "sm_90";
  measure(state, "cuwrap_" + std::string(cuwrap::to_string(target)), [&] {
    cuwrap::Program program(kSaxpySource, cuwrap::CodeType::Cxx, options);
    cuwrap::ObjectCode obj = program.compile(target);
    benchmark::DoNotOptimize(obj.code().data());
  });
}
BENCHMARK(BM_CuwrapProgram)
    ->Arg(static_cast<int>(cuwrap::TargetType::Ptx))
    ->Arg(static_cast<int>(cuwrap::TargetType::Cubin))
    ->Unit(benchmark::kMillisecond);

void BM_RawNvrtc(benchmark::State& state) {
  const auto target = static_cast<cuwrap::TargetType>(state.range(0));
  namespace raw = cuwrap::nvrtc::raw;
  const char* options[] = {"-arch=sm_90"};
  measure(state, "raw_" + std::string(cuwrap::to_string(target)), [&] {
    nvrtcProgram program = nullptr;
    if (raw::nvrtcCreateProgram(&program, kSaxpySource, "default_program", 0, nullptr, nullptr) !=
        NVRTC_SUCCESS) {
      throw std::runtime_error("nvrtcCreateProgram failed");
    }
    if (raw::nvrtcCompileProgram(program, 1, options) != NVRTC_SUCCESS) {
      raw::nvrtcDestroyProgram(&program);
      throw std::runtime_error("nvrtcCompileProgram failed");
    }
    std::size_t size = 0;
    std::vector<char> code;
    if (target == cuwrap::TargetType::Ptx) {
      raw::nvrtcGetPTXSize(program, &size);
      code.resize(size);
      raw::nvrtcGetPTX(program, code.data());
    } else {
      raw::nvrtcGetCUBINSize(program, &size);
      code.resize(size);
      raw::nvrtcGetCUBIN(program, code.data());
    }
    benchmark::DoNotOptimize(code.data());
    raw::nvrtcDestroyProgram(&program);
  });
}
BENCHMARK(BM_RawNvrtc)
    ->Arg(static_cast<int>(cuwrap::TargetType::Ptx))
    ->Arg(static_cast<int>(cuwrap::TargetType::Cubin))
    ->Unit(benchmark::kMillisecond);

// A warm cache: the entry is stored before the timed loop, which then only hits.
void warm_cache_compile(benchmark::State& state, cuwrap::ProgramCache& cache,
                        const std::string& name) {
  cuwrap::ProgramOptions options;
  options.arch = "sm_90";
  {
    cuwrap::Program warm(kSaxpySource, cuwrap::CodeType::Cxx, options);
    static_cast<void>(warm.compile(cuwrap::TargetType::Cubin, {.cache = &cache}));
  }
  measure(state, name, [&] {
    cuwrap::Program program(kSaxpySource, cuwrap::CodeType::Cxx, options);
    cuwrap::ObjectCode obj = program.compile(cuwrap::TargetType::Cubin, {.cache = &cache});
    benchmark::DoNotOptimize(obj.code().data());
  });
}

void BM_CuwrapProgramWarmMemoryCache(benchmark::State& state) {
  cuwrap::InMemoryProgramCache cache(std::size_t{64} << 20);
  warm_cache_compile(state, cache, "cached_memory_cubin");
}
BENCHMARK(BM_CuwrapProgramWarmMemoryCache)->Unit(benchmark::kMicrosecond);

void BM_CuwrapProgramWarmFileCache(benchmark::State& state) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("cuwrap-bench-cache-" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  {
    cuwrap::FileProgramCache cache(dir, std::size_t{64} << 20);
    warm_cache_compile(state, cache, "cached_file_cubin");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_CuwrapProgramWarmFileCache)->Unit(benchmark::kMicrosecond);

// The key and entry value of saxpy compiled to CUBIN, as Program::compile stores them.
struct StoredEntry {
  std::string key;
  cuwrap::ObjectCode code;
};

StoredEntry saxpy_entry() {
  cuwrap::ProgramOptions options;
  options.arch = "sm_90";
  cuwrap::Program program(kSaxpySource, cuwrap::CodeType::Cxx, options);
  std::string key = program.program_cache_key(cuwrap::TargetType::Cubin);
  return {std::move(key), program.compile(cuwrap::TargetType::Cubin)};
}

std::filesystem::path fresh_cache_directory() {
  return std::filesystem::temp_directory_path() /
         ("cuwrap-bench-hit-" +
          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
}

void BM_FileCacheHit(benchmark::State& state) {
  const bool reopen = state.range(0) != 0;
  const std::filesystem::path dir = fresh_cache_directory();
  try {
    const StoredEntry entry = saxpy_entry();
    {
      cuwrap::FileProgramCache writer(dir, std::size_t{64} << 20);
      writer.put(entry.key, entry.code);
    }
    cuwrap::FileProgramCache cache(dir, std::size_t{64} << 20);
    measure(state, reopen ? "file_hit_reopened" : "file_hit", [&] {
      std::optional<cuwrap::ObjectCode> hit;
      if (reopen) {
        cuwrap::FileProgramCache opened(dir, std::size_t{64} << 20);
        hit = opened.get_object_code(entry.key);
      } else {
        hit = cache.get_object_code(entry.key);
      }
      if (!hit) {
        throw std::runtime_error("the entry was a miss");
      }
      benchmark::DoNotOptimize(hit->code().data());
    });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_FileCacheHit)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_MemoryCacheHit(benchmark::State& state) {
  try {
    const StoredEntry entry = saxpy_entry();
    cuwrap::InMemoryProgramCache cache(std::size_t{64} << 20);
    cache.put(entry.key, entry.code);
    measure(state, "memory_hit", [&] {
      std::optional<cuwrap::ObjectCode> hit = cache.get_object_code(entry.key);
      if (!hit) {
        throw std::runtime_error("the entry was a miss");
      }
      benchmark::DoNotOptimize(hit->code().data());
    });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_MemoryCacheHit)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    for (const char* target : {"ptx", "cubin"}) {
      if (const auto c = cuwrap::bench::compare(std::string("cuwrap_") + target,
                                                std::string("raw_") + target)) {
        std::printf("compile ratio cuwrap/raw (%s) = %.3f (%.2f ms vs %.2f ms)\n", target,
                    c->ratio(), c->ours_ns / 1e6, c->raw_ns / 1e6);
      }
    }
    for (const char* cached : {"cached_memory_cubin", "cached_file_cubin"}) {
      if (const auto c = cuwrap::bench::compare(cached, "raw_cubin")) {
        std::printf(
            "compile speed-up raw NVRTC / %s = %.0fx (%.1f us vs %.2f ms; expected > 100x)\n",
            cached, 1.0 / c->ratio(), c->ours_ns / 1e3, c->raw_ns / 1e6);
      }
    }
    for (const char* hit : {"memory_hit", "file_hit", "file_hit_reopened"}) {
      if (const auto c = cuwrap::bench::compare(hit, "raw_cubin")) {
        std::printf("lookup alone: raw NVRTC / %s = %.0fx (%.2f us vs %.2f ms)\n", hit,
                    1.0 / c->ratio(), c->ours_ns / 1e3, c->raw_ns / 1e6);
      }
    }
  });
}
