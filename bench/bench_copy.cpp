// copy_batch against the raw driver calls (through the pointers cuGetProcAddress
// returns, as a C program gets them), measured in the same run:
//
//   1,000 device->device copies of 64 bytes each, then a stream synchronisation:
//     cuwrap::copy_batch (one cuMemcpyBatchAsync where toolkit and driver have it)
//     vs a loop of 1,000 cuMemcpyAsync                         (CopyBatch_Raw)
//     vs one raw cuMemcpyBatchAsync, where available           (CopyBatch_RawBatchAsync)
//
//   the same 1,000 copies with CopyOptions, against one raw cuMemcpyBatchAsync with the
//   same attributes, timed in alternating blocks within one benchmark (each block: the
//   call and a stream synchronisation):
//     CopyBatch_OptionsVsRaw:       the address form, one CopyOptions for every copy
//     CopyBatch_BufferRangeVsRaw:   std::vector<Buffer> of 1,000 pool allocations, the
//                                   hints derived from their memory resource
//
// After the run the ratios are printed: cuwrap over the loop (the gain batching brings)
// and cuwrap over the raw batch call (the wrapper's own cost; target <= 1.05, and <= 1.03
// for the alternating comparisons with options).
#include <cuwrap/buffer.hpp>
#include <cuwrap/copy.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/version.hpp>

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
#if CUDA_VERSION >= 12080
// The two shapes of cuMemcpyBatchAsync: CUDA 13.0's, and 12.8's with failIdx.
using MemcpyBatchAsyncFn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, std::size_t*, std::size_t,
                                        CUmemcpyAttributes*, std::size_t*, std::size_t, CUstream);
using MemcpyBatchAsync12080Fn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, std::size_t*, std::size_t,
                                             CUmemcpyAttributes*, std::size_t*, std::size_t,
                                             std::size_t*, CUstream);

// The entry point `name` in its ABI of CUDA `version`, as a C program asks for it.
template <class Fn>
Fn driver_entry_at(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (cuwrap::driver::raw::cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT,
                                            &found) != CUDA_SUCCESS ||
      found != CU_GET_PROC_ADDRESS_SUCCESS) {
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}
#endif

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Buffer> src, dst;
  std::vector<cuwrap::Buffer> src_buffers, dst_buffers;  // kCopies pool allocations each
  std::vector<CUdeviceptr> buffer_dsts, buffer_srcs;
  std::vector<cuwrap::CopyOp> ops;
  std::vector<CUdeviceptr> dsts, srcs;
  std::vector<std::size_t> sizes;
  MemcpyAsyncFn memcpy_async = nullptr;
  StreamSynchronizeFn stream_sync = nullptr;
#if CUDA_VERSION >= 12080
  MemcpyBatchAsyncFn memcpy_batch = nullptr;             // null where the driver lacks it
  MemcpyBatchAsync12080Fn memcpy_batch_12080 = nullptr;  // on a 12.8 or 12.9 driver
#endif
};

#if CUDA_VERSION >= 12080
// One raw cuMemcpyBatchAsync of `count` copies, every copy with `attributes`.
bool raw_batch(Setup& s, CUdeviceptr* dsts, CUdeviceptr* srcs, CUmemcpyAttributes attributes) {
  std::size_t first = 0;
  if (s.memcpy_batch != nullptr) {
    return s.memcpy_batch(dsts, srcs, s.sizes.data(), kCopies, &attributes, &first, 1,
                          s.stream->handle()) == CUDA_SUCCESS;
  }
  std::size_t failed = 0;
  return s.memcpy_batch_12080(dsts, srcs, s.sizes.data(), kCopies, &attributes, &first, 1, &failed,
                              s.stream->handle()) == CUDA_SUCCESS;
}

CUmemcpyAttributes device_attributes(const Setup& s, CUmemcpySrcAccessOrder order) {
  CUmemcpyAttributes attributes{};
  attributes.srcAccessOrder = order;
  attributes.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
  attributes.srcLocHint.id = s.device->device_id();
  attributes.dstLocHint = attributes.srcLocHint;
  return attributes;
}
#endif

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
      r.src_buffers.push_back(r.device->allocate(kCopyBytes, *r.stream));
      r.dst_buffers.push_back(r.device->allocate(kCopyBytes, *r.stream));
      r.buffer_srcs.push_back(r.src_buffers.back().handle());
      r.buffer_dsts.push_back(r.dst_buffers.back().handle());
    }
    r.stream->sync();
    r.memcpy_async = driver_entry<MemcpyAsyncFn>("cuMemcpyAsync");
    r.stream_sync = driver_entry<StreamSynchronizeFn>("cuStreamSynchronize");
#if CUDA_VERSION >= 12080
    if (cuwrap::has_native_copy_batch()) {
      if (CUDA_VERSION >= 13000 && cuwrap::driver_version() >= 13000) {
        r.memcpy_batch = driver_entry_at<MemcpyBatchAsyncFn>("cuMemcpyBatchAsync", 13000);
      } else {
        r.memcpy_batch_12080 =
            driver_entry_at<MemcpyBatchAsync12080Fn>("cuMemcpyBatchAsync", 12080);
      }
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
  if (setup().error.empty() && setup().memcpy_batch == nullptr &&
      setup().memcpy_batch_12080 == nullptr) {
    state.SkipWithError("the driver has no cuMemcpyBatchAsync");
    return;
  }
  measure(state, "copy_batch_raw_batch", [](Setup& s) {
    return raw_batch(s, s.dsts.data(), s.srcs.data(),
                     device_attributes(s, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM));
  });
#else
  state.SkipWithError("built against a toolkit older than CUDA 12.8 (no cuMemcpyBatchAsync)");
#endif
}
BENCHMARK(BM_CopyBatch_RawBatchAsync)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_CopyBatch_Cuwrap(benchmark::State& state) {
  measure(state, "copy_batch_cuwrap", [](Setup& s) {
    cuwrap::copy_batch(s.ops, *s.stream);
    return true;
  });
}
BENCHMARK(BM_CopyBatch_Cuwrap)->UseRealTime()->Unit(benchmark::kMicrosecond);

// cuwrap with CopyOptions against the raw call with the same attributes, alternating.
template <class Ours, class Raw>
void alternate(benchmark::State& state, const char* name, Ours&& ours, Raw&& raw) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  if (!cuwrap::has_native_copy_batch()) {
    state.SkipWithError("the toolkit or driver has no cuMemcpyBatchAsync (CopyOptions need it)");
    return;
  }
  const CUstream stream = s.stream->handle();
  bool ok = true;
  cuwrap::bench::measure_alternating(
      state, name, 1,
      [&] {
        ours(s);
        ok = ok && s.stream_sync(stream) == CUDA_SUCCESS;
      },
      [&] { ok = ok && raw(s) && s.stream_sync(stream) == CUDA_SUCCESS; }, [] {});
  if (!ok) {
    state.SkipWithError("driver call failed");
  }
}

void BM_CopyBatch_OptionsVsRaw(benchmark::State& state) {
#if CUDA_VERSION >= 12080
  alternate(
      state, "copy_batch_options",
      [](Setup& s) {
        // Made on first use: the device exists only once setup() found a GPU.
        static const cuwrap::CopyOptions options{
            .src_access_order = cuwrap::MemcpySrcAccessOrder::Any,
            .src_location_hint = *s.device,
            .dst_location_hint = *s.device};
        cuwrap::copy_batch(s.ops, *s.stream, options);
      },
      [](Setup& s) {
        return raw_batch(s, s.dsts.data(), s.srcs.data(),
                         device_attributes(s, CU_MEMCPY_SRC_ACCESS_ORDER_ANY));
      });
#else
  state.SkipWithError("built against a toolkit older than CUDA 12.8 (no cuMemcpyBatchAsync)");
#endif
}
BENCHMARK(BM_CopyBatch_OptionsVsRaw)->Unit(benchmark::kMicrosecond);

void BM_CopyBatch_BufferRangeVsRaw(benchmark::State& state) {
#if CUDA_VERSION >= 12080
  const cuwrap::CopyOptions options{.src_access_order = cuwrap::MemcpySrcAccessOrder::Any};
  alternate(
      state, "copy_batch_buffer_range",
      [&](Setup& s) { cuwrap::copy_batch(s.src_buffers, s.dst_buffers, *s.stream, options); },
      [](Setup& s) {
        return raw_batch(s, s.buffer_dsts.data(), s.buffer_srcs.data(),
                         device_attributes(s, CU_MEMCPY_SRC_ACCESS_ORDER_ANY));
      });
#else
  state.SkipWithError("built against a toolkit older than CUDA 12.8 (no cuMemcpyBatchAsync)");
#endif
}
BENCHMARK(BM_CopyBatch_BufferRangeVsRaw)->Unit(benchmark::kMicrosecond);

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
    for (const char* name : {"copy_batch_options", "copy_batch_buffer_range"}) {
      if (const auto c = cuwrap::bench::alternating_ratio(name)) {
        std::printf(
            "%s vs raw cuMemcpyBatchAsync with the same attributes (alternating): time ratio "
            "cuwrap/raw = %.3f (%.1f us vs %.1f us per batch and sync; target <= 1.03)\n",
            name, c->ratio(), c->ours_ns / 1000.0, c->raw_ns / 1000.0);
      }
    }
  });
}
