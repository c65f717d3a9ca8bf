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

#include "bench_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
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

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
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
  using cuwrap::bench::driver_entry;
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    r.pinned.emplace(r.pinned_mr.allocate(kCopyBytes, *r.stream));
    std::memset(r.pinned->host_span().data(), 0x5a, kCopyBytes);
    r.src.emplace(r.device->allocate(kCopyBytes, *r.stream));
    r.dst.emplace(r.device->allocate(kCopyBytes, *r.stream));
    r.src->fill(std::uint8_t{0x33}, *r.stream);
    r.stream->sync();
    r.pool = r.device->memory_resource().handle();
    r.memcpy_htod = driver_entry<MemcpyHtoDAsyncFn>("cuMemcpyHtoDAsync");
    r.memcpy_dtod = driver_entry<MemcpyDtoDAsyncFn>("cuMemcpyDtoDAsync");
    r.alloc_from_pool = driver_entry<MemAllocFromPoolAsyncFn>("cuMemAllocFromPoolAsync");
    r.free_async = driver_entry<MemFreeAsyncFn>("cuMemFreeAsync");
    r.stream_sync = driver_entry<StreamSynchronizeFn>("cuStreamSynchronize");
  });
  return s;
}

// Run `body` per iteration, synchronising the stream every `sync_every` iterations.
template <class Body>
void measure(benchmark::State& state, const char* name, int sync_every, std::size_t bytes,
             Body&& body) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
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
  cuwrap::bench::record(state, name, start);
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
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    const auto report = [](const char* what, const char* ours, const char* raw, bool bandwidth) {
      const auto c = cuwrap::bench::compare(ours, raw);
      if (!c) {
        return;
      }
      if (bandwidth) {
        const double ours_gbs = static_cast<double>(kCopyBytes) / c->ours_ns;  // bytes/ns = GB/s
        const double raw_gbs = static_cast<double>(kCopyBytes) / c->raw_ns;
        std::printf("%s bandwidth cuwrap/raw = %.3f (%.2f GB/s vs %.2f GB/s; target >= 0.97)\n",
                    what, ours_gbs / raw_gbs, ours_gbs, raw_gbs);
      } else {
        std::printf(
            "%s time ratio cuwrap/raw = %.3f (%.1f ns vs %.1f ns per pair; target <= 1.05)\n", what,
            c->ratio(), c->ours_ns, c->raw_ns);
      }
    };
    report("host->device", "htod_cuwrap", "htod_raw", true);
    report("device->device", "dtod_cuwrap", "dtod_raw", true);
    report("alloc+free", "alloc_cuwrap", "alloc_raw", false);
  });
}
