// Memory throughput and allocation cost through Buffer and DeviceMemoryResource,
// against the raw driver calls (through the pointers cuGetProcAddress returns, as a C
// program gets them), measured in the same run:
//
//   host->device 64 MiB from pinned memory: Buffer::copy_from(span)  vs cuMemcpyHtoDAsync
//   device->device 64 MiB:                  Buffer::copy_to(Buffer)  vs cuMemcpyDtoDAsync
//   allocate + close on a stream (1 MiB):   Device::allocate + Buffer::close(stream)
//                                           vs cuMemAllocFromPoolAsync + cuMemFreeAsync
//
// Copies synchronise the stream every iteration; allocations every kSyncEvery pairs,
// alike in both variants. Both sides use the same pool, stream and pinned memory. After
// the run the ratios are printed; targets: bandwidth within 3%, alloc+free <= 1.05x raw.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace {

constexpr std::size_t kCopyBytes = std::size_t{64} << 20;
constexpr std::size_t kAllocBytes = std::size_t{1} << 20;
constexpr int kSyncEvery = 1024;

using MemcpyHtoDAsyncFn = CUresult (*)(CUdeviceptr, const void*, std::size_t, CUstream);
using MemcpyDtoDAsyncFn = CUresult (*)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);
using MemAllocFromPoolAsyncFn = CUresult (*)(CUdeviceptr*, std::size_t, CUmemoryPool, CUstream);
using MemFreeAsyncFn = CUresult (*)(CUdeviceptr, CUstream);
using StreamSynchronizeFn = CUresult (*)(CUstream);

template <class Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  cuwrap::detail::check(cuwrap::driver::raw::cuGetProcAddress(name, &fn, CUDA_VERSION,
                                                              CU_GET_PROC_ADDRESS_DEFAULT, &found),
                        "cuGetProcAddress");
  if (fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {
    throw std::runtime_error(std::string("cuGetProcAddress: no ") + name);
  }
  return reinterpret_cast<Fn>(fn);
}

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup {
  std::string error;
  std::optional<cuwrap::Device> device;
  std::optional<cuwrap::Stream> stream;
  cuwrap::LegacyPinnedMemoryResource pinned_mr;
  std::optional<cuwrap::Buffer> pinned;  // host source of the host->device copies
  std::optional<cuwrap::Buffer> src, dst;
  CUmemoryPool pool = nullptr;  // the pool behind Device::memory_resource()
  MemcpyHtoDAsyncFn memcpy_htod = nullptr;
  MemcpyDtoDAsyncFn memcpy_dtod = nullptr;
  MemAllocFromPoolAsyncFn alloc_from_pool = nullptr;
  MemFreeAsyncFn free_async = nullptr;
  StreamSynchronizeFn stream_sync = nullptr;
};

Setup& setup() {
  static Setup s;
  static const bool ready = [] {
    try {
      if (cuwrap::Device::count() == 0) {
        s.error = "no CUDA device";
        return false;
      }
      s.device.emplace(0);
      s.device->set_current();
      s.stream.emplace(s.device->create_stream());
      s.pinned.emplace(s.pinned_mr.allocate(kCopyBytes, *s.stream));
      std::memset(s.pinned->host_span().data(), 0x5a, kCopyBytes);
      s.src.emplace(s.device->allocate(kCopyBytes, *s.stream));
      s.dst.emplace(s.device->allocate(kCopyBytes, *s.stream));
      s.src->fill(std::uint8_t{0x33}, *s.stream);
      s.stream->sync();
      s.pool = dynamic_cast<cuwrap::DeviceMemoryResource&>(s.device->memory_resource()).handle();
      s.memcpy_htod = driver_entry<MemcpyHtoDAsyncFn>("cuMemcpyHtoDAsync");
      s.memcpy_dtod = driver_entry<MemcpyDtoDAsyncFn>("cuMemcpyDtoDAsync");
      s.alloc_from_pool = driver_entry<MemAllocFromPoolAsyncFn>("cuMemAllocFromPoolAsync");
      s.free_async = driver_entry<MemFreeAsyncFn>("cuMemFreeAsync");
      s.stream_sync = driver_entry<StreamSynchronizeFn>("cuStreamSynchronize");
    } catch (const std::exception& e) {
      s.error = e.what();
      return false;
    }
    return true;
  }();
  static_cast<void>(ready);
  return s;
}

// Per-iteration nanoseconds of the last (final) run of each benchmark.
std::map<std::string, double>& results() {
  static std::map<std::string, double> r;
  return r;
}

// Run `body` per iteration, synchronising the stream every `sync_every` iterations.
template <class Body>
void measure(benchmark::State& state, const char* name, int sync_every, std::size_t bytes,
             Body&& body) {
  Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const CUstream stream = s.stream->handle();
  int pending = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!body(s)) [[unlikely]] {
      state.SkipWithError("driver call failed");
      break;
    }
    if (++pending == sync_every) {
      pending = 0;
      static_cast<void>(s.stream_sync(stream));
    }
  }
  static_cast<void>(s.stream_sync(stream));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (state.iterations() > 0) {
    results()[name] = std::chrono::duration<double, std::nano>(elapsed).count() /
                      static_cast<double>(state.iterations());
  }
  if (bytes != 0) {
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(bytes));
  }
}

// ---- host -> device from pinned memory ---------------------------------------------

void BM_HtoD_Raw(benchmark::State& state) {
  measure(state, "htod_raw", 1, kCopyBytes, [](Setup& s) {
    return s.memcpy_htod(s.dst->handle(), s.pinned->host_span().data(), kCopyBytes,
                         s.stream->handle()) == CUDA_SUCCESS;
  });
}
BENCHMARK(BM_HtoD_Raw)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_HtoD_Buffer(benchmark::State& state) {
  measure(state, "htod_cuwrap", 1, kCopyBytes, [](Setup& s) {
    const std::span<const std::byte> host = s.pinned->host_span();
    s.dst->copy_from(host, *s.stream);
    return true;
  });
}
BENCHMARK(BM_HtoD_Buffer)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- device -> device ----------------------------------------------------------------

void BM_DtoD_Raw(benchmark::State& state) {
  measure(state, "dtod_raw", 1, kCopyBytes, [](Setup& s) {
    return s.memcpy_dtod(s.dst->handle(), s.src->handle(), kCopyBytes, s.stream->handle()) ==
           CUDA_SUCCESS;
  });
}
BENCHMARK(BM_DtoD_Raw)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_DtoD_Buffer(benchmark::State& state) {
  measure(state, "dtod_cuwrap", 1, kCopyBytes, [](Setup& s) {
    s.src->copy_to(*s.dst, *s.stream);
    return true;
  });
}
BENCHMARK(BM_DtoD_Buffer)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- allocate + free on a stream -----------------------------------------------------

void BM_AllocFree_Raw(benchmark::State& state) {
  measure(state, "alloc_raw", kSyncEvery, 0, [](Setup& s) {
    const CUstream stream = s.stream->handle();
    CUdeviceptr ptr = 0;
    if (s.alloc_from_pool(&ptr, kAllocBytes, s.pool, stream) != CUDA_SUCCESS) {
      return false;
    }
    benchmark::DoNotOptimize(ptr);
    return s.free_async(ptr, stream) == CUDA_SUCCESS;
  });
}
BENCHMARK(BM_AllocFree_Raw)->UseRealTime();

// The same two driver calls through cuwrap's raw:: entry points (resolved at the ABI
// version of the header's prototype): separates the driver entry from the wrapper.
void BM_AllocFree_CuwrapRawEntry(benchmark::State& state) {
  measure(state, "alloc_cuwrap_raw_entry", kSyncEvery, 0, [](Setup& s) {
    const CUstream stream = s.stream->handle();
    CUdeviceptr ptr = 0;
    if (cuwrap::driver::raw::cuMemAllocFromPoolAsync(&ptr, kAllocBytes, s.pool, stream) !=
        CUDA_SUCCESS) {
      return false;
    }
    benchmark::DoNotOptimize(ptr);
    return cuwrap::driver::raw::cuMemFreeAsync(ptr, stream) == CUDA_SUCCESS;
  });
}
BENCHMARK(BM_AllocFree_CuwrapRawEntry)->UseRealTime();

// Through the memory resource directly (no Device::memory_resource() lookup).
void BM_AllocFree_MemoryResourceDirect(benchmark::State& state) {
  measure(state, "alloc_cuwrap_mr", kSyncEvery, 0, [](Setup& s) {
    static cuwrap::MemoryResource& mr = s.device->memory_resource();
    cuwrap::Buffer buffer = mr.allocate(kAllocBytes, *s.stream);
    benchmark::DoNotOptimize(buffer.handle());
    buffer.close(*s.stream);
    return true;
  });
}
BENCHMARK(BM_AllocFree_MemoryResourceDirect)->UseRealTime();

void BM_AllocFree_DeviceMemoryResource(benchmark::State& state) {
  measure(state, "alloc_cuwrap", kSyncEvery, 0, [](Setup& s) {
    cuwrap::Buffer buffer = s.device->allocate(kAllocBytes, *s.stream);
    benchmark::DoNotOptimize(buffer.handle());
    buffer.close(*s.stream);
    return true;
  });
}
BENCHMARK(BM_AllocFree_DeviceMemoryResource)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const auto& r = results();
  const auto report = [&](const char* what, const char* ours, const char* raw, bool bandwidth) {
    const auto a = r.find(ours);
    const auto b = r.find(raw);
    if (a == r.end() || b == r.end() || a->second <= 0 || b->second <= 0) {
      return;
    }
    if (bandwidth) {
      const double ours_gbs = static_cast<double>(kCopyBytes) / a->second;  // bytes/ns = GB/s
      const double raw_gbs = static_cast<double>(kCopyBytes) / b->second;
      std::printf("%s bandwidth cuwrap/raw = %.3f (%.2f GB/s vs %.2f GB/s; target >= 0.97)\n", what,
                  ours_gbs / raw_gbs, ours_gbs, raw_gbs);
    } else {
      std::printf("%s time ratio cuwrap/raw = %.3f (%.1f ns vs %.1f ns per pair; target <= 1.05)\n",
                  what, a->second / b->second, a->second, b->second);
    }
  };
  report("host->device", "htod_cuwrap", "htod_raw", true);
  report("device->device", "dtod_cuwrap", "dtod_raw", true);
  report("alloc+free", "alloc_cuwrap", "alloc_raw", false);
  return 0;
}
