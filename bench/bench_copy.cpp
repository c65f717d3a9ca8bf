// copy_batch against the raw driver calls (through the pointers cuGetProcAddress
// returns, as a C program gets them), measured in the same run:
//
//   1,000 device->device copies of 64 bytes each, then a stream synchronisation:
//     cuwrap::copy_batch (one cuMemcpyBatchAsync where toolkit and driver have it)
//     vs a loop of 1,000 cuMemcpyAsync                         (CopyBatch_Raw)
//     vs one raw cuMemcpyBatchAsync, where available           (CopyBatch_RawBatchAsync)
//
// After the run the ratios are printed: cuwrap over the loop (the gain batching brings)
// and cuwrap over the raw batch call (the wrapper's own cost; target <= 1.05).
#include <cuwrap/buffer.hpp>
#include <cuwrap/copy.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

namespace {

constexpr std::size_t kCopies = 1000;
constexpr std::size_t kCopyBytes = 64;

using MemcpyAsyncFn = CUresult (*)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);
using StreamSynchronizeFn = CUresult (*)(CUstream);
#if CUDA_VERSION >= 13000
using MemcpyBatchAsyncFn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, std::size_t*, std::size_t,
                                        CUmemcpyAttributes*, std::size_t*, std::size_t, CUstream);
#elif CUDA_VERSION >= 12080
using MemcpyBatchAsyncFn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, std::size_t*, std::size_t,
                                        CUmemcpyAttributes*, std::size_t*, std::size_t,
                                        std::size_t*, CUstream);
#endif

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Buffer> src, dst;
  std::vector<cuwrap::CopyOp> ops;
  std::vector<CUdeviceptr> dsts, srcs;
  std::vector<std::size_t> sizes;
  MemcpyAsyncFn memcpy_async = nullptr;
  StreamSynchronizeFn stream_sync = nullptr;
#if CUDA_VERSION >= 12080
  MemcpyBatchAsyncFn memcpy_batch = nullptr;  // null where the driver lacks it
#endif
};

Setup& setup() {
  using cuwrap::bench::driver_entry;
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    r.src.emplace(r.device->allocate(kCopies * kCopyBytes, *r.stream));
    r.dst.emplace(r.device->allocate(kCopies * kCopyBytes, *r.stream));
    r.src->fill(std::uint8_t{0x5a}, *r.stream);
    r.stream->sync();
    for (std::size_t i = 0; i < kCopies; ++i) {
      const CUdeviceptr d = r.dst->handle() + i * kCopyBytes;
      const CUdeviceptr s = r.src->handle() + i * kCopyBytes;
      r.ops.push_back({d, s, kCopyBytes});
      r.dsts.push_back(d);
      r.srcs.push_back(s);
      r.sizes.push_back(kCopyBytes);
    }
    r.memcpy_async = driver_entry<MemcpyAsyncFn>("cuMemcpyAsync");
    r.stream_sync = driver_entry<StreamSynchronizeFn>("cuStreamSynchronize");
#if CUDA_VERSION >= 12080
    if (cuwrap::has_native_copy_batch()) {
      r.memcpy_batch = driver_entry<MemcpyBatchAsyncFn>("cuMemcpyBatchAsync");
    }
#endif
  });
  return s;
}

// Run `body` (one batch of copies) and a stream synchronisation per iteration.
template <class Body>
void measure(benchmark::State& state, const char* name, Body&& body) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUstream stream = s.stream->handle();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!body(s) || s.stream_sync(stream) != CUDA_SUCCESS) [[unlikely]] {
      state.SkipWithError("driver call failed");
      break;
    }
  }
  cuwrap::bench::record(state, name, start);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kCopies));
}

void BM_CopyBatch_Raw(benchmark::State& state) {
  measure(state, "copy_batch_raw_loop", [](Setup& s) {
    const CUstream stream = s.stream->handle();
    for (const cuwrap::CopyOp& op : s.ops) {
      if (s.memcpy_async(op.dst, op.src, op.size, stream) != CUDA_SUCCESS) {
        return false;
      }
    }
    return true;
  });
}
BENCHMARK(BM_CopyBatch_Raw)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_CopyBatch_RawBatchAsync(benchmark::State& state) {
#if CUDA_VERSION >= 12080
  if (setup().error.empty() && setup().memcpy_batch == nullptr) {
    state.SkipWithError("the driver has no cuMemcpyBatchAsync of this toolkit's form");
    return;
  }
  measure(state, "copy_batch_raw_batch", [](Setup& s) {
    CUmemcpyAttributes attributes{};
    attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attributes.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
    attributes.srcLocHint.id = s.device->handle();
    attributes.dstLocHint = attributes.srcLocHint;
    std::size_t first = 0;
#if CUDA_VERSION >= 13000
    return s.memcpy_batch(s.dsts.data(), s.srcs.data(), s.sizes.data(), kCopies, &attributes,
                          &first, 1, s.stream->handle()) == CUDA_SUCCESS;
#else
    std::size_t failed = 0;
    return s.memcpy_batch(s.dsts.data(), s.srcs.data(), s.sizes.data(), kCopies, &attributes,
                          &first, 1, &failed, s.stream->handle()) == CUDA_SUCCESS;
#endif
  });
#else
  state.SkipWithError("built against a toolkit older than CUDA 12.8 (no cuMemcpyBatchAsync)");
#endif
}
BENCHMARK(BM_CopyBatch_RawBatchAsync)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_CopyBatch_Cuwrap(benchmark::State& state) {
  measure(state, "copy_batch_cuwrap", [](Setup& s) {
    cuwrap::copy_batch(*s.stream, s.ops);
    return true;
  });
}
BENCHMARK(BM_CopyBatch_Cuwrap)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    const bool native = setup().error.empty() && cuwrap::has_native_copy_batch();
    if (const auto c = cuwrap::bench::compare("copy_batch_cuwrap", "copy_batch_raw_loop")) {
      std::printf(
          "copy_batch of %zu x %zu B vs a cuMemcpyAsync loop: time ratio cuwrap/raw = %.3f "
          "(%.1f us vs %.1f us per batch; %s)\n",
          kCopies, kCopyBytes, c->ratio(), c->ours_ns / 1000.0, c->raw_ns / 1000.0,
          native ? "cuMemcpyBatchAsync" : "fallback loop: toolkit or driver older than needed");
    }
    if (const auto c = cuwrap::bench::compare("copy_batch_cuwrap", "copy_batch_raw_batch")) {
      std::printf(
          "copy_batch vs raw cuMemcpyBatchAsync: time ratio cuwrap/raw = %.3f (%.1f us vs "
          "%.1f us per batch; target <= 1.05)\n",
          c->ratio(), c->ours_ns / 1000.0, c->raw_ns / 1000.0);
    }
  });
}
