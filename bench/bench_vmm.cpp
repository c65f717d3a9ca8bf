// Growing a buffer: VirtualMemoryResource::modify_allocation against the two ways a C
// program grows device memory, measured in the same run:
//
//   vmm_cuwrap  VirtualMemoryResource: allocate(old) + modify_allocation(2 x old) + close
//   vmm_raw     the same driver calls by hand: cuMemAddressReserve + cuMemCreate +
//               cuMemMap + cuMemSetAccess for the old size, the same for the added part
//               at the end of the range, then unmap, release and free everything
//   copy_raw    allocate + copy + free: cuMemAllocFromPoolAsync(old),
//               cuMemAllocFromPoolAsync(2 x old), cuMemcpyDtoDAsync(old bytes),
//               cuMemFreeAsync both, cuStreamSynchronize
//
// Every variant ends with nothing allocated and the stream idle, and starts from sizes
// that are multiples of the granularity. Ratios printed after the run:
// vmm_cuwrap/copy_raw (what growing in place saves or costs) and vmm_cuwrap/vmm_raw
// (cuwrap's overhead over the same driver calls; target <= 1.05).
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/virtual_memory_resource.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::VirtualMemoryResource> vmm;
  std::optional<cuwrap::DeviceMemoryResource> pool_mr;
  CUmemAllocationProp prop{};
  CUmemAccessDesc access{};
};

Setup& setup() {
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    cuwrap::VirtualMemoryResourceOptions options;
    options.handle_type = cuwrap::VirtualMemoryHandleType::None;
    r.vmm.emplace(*r.device, options);
    r.pool_mr.emplace(*r.device, cuwrap::DeviceMemoryResourceOptions{.create_pool = true});
    r.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    r.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    r.prop.location.id = r.device->device_id();
    r.access.location = r.prop.location;
    r.access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  });
  return s;
}

std::string name_of(const char* variant, std::size_t old_mib) {
  return std::string(variant) + "_" + std::to_string(old_mib);
}

void BM_Grow_Vmm(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const auto old_size = static_cast<std::size_t>(state.range(0)) * kMiB;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    cuwrap::Buffer buffer = s.vmm->allocate(old_size, *s.stream);
    s.vmm->modify_allocation(buffer, 2 * old_size);
    benchmark::DoNotOptimize(buffer.handle());
    buffer.close(*s.stream);
  }
  cuwrap::bench::record(state, name_of("vmm_cuwrap", old_size / kMiB), start);
}

// Map `size` bytes of new physical memory at `at` (raw driver calls); returns the handle.
CUmemGenericAllocationHandle raw_map(const Setup& s, CUdeviceptr at, std::size_t size) {
  CUmemGenericAllocationHandle handle = 0;
  cuwrap::driver::raw::cuMemCreate(&handle, size, &s.prop, 0);
  cuwrap::driver::raw::cuMemMap(at, size, 0, handle, 0);
  cuwrap::driver::raw::cuMemSetAccess(at, size, &s.access, 1);
  return handle;
}

void BM_Grow_RawVmm(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const auto old_size = static_cast<std::size_t>(state.range(0)) * kMiB;
  const std::size_t granule = s.vmm->granularity();
  const CUstream stream = s.stream->handle();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    CUdeviceptr base = 0;
    cuwrap::driver::raw::cuMemAddressReserve(&base, old_size, granule, 0, 0);
    const CUmemGenericAllocationHandle first = raw_map(s, base, old_size);
    CUdeviceptr next = 0;
    cuwrap::driver::raw::cuMemAddressReserve(&next, old_size, granule, base + old_size, 0);
    if (next != base + old_size) {
      state.SkipWithError("the range after the reservation was taken");
      cuwrap::driver::raw::cuMemUnmap(base, old_size);
      cuwrap::driver::raw::cuMemRelease(first);
      cuwrap::driver::raw::cuMemAddressFree(base, old_size);
      if (next != 0) {
        cuwrap::driver::raw::cuMemAddressFree(next, old_size);
      }
      break;
    }
    const CUmemGenericAllocationHandle second = raw_map(s, next, old_size);
    benchmark::DoNotOptimize(base);
    cuwrap::driver::raw::cuStreamSynchronize(stream);  // as deallocate() does
    cuwrap::driver::raw::cuMemUnmap(base, old_size);
    cuwrap::driver::raw::cuMemUnmap(next, old_size);
    cuwrap::driver::raw::cuMemRelease(first);
    cuwrap::driver::raw::cuMemRelease(second);
    cuwrap::driver::raw::cuMemAddressFree(base, old_size);
    cuwrap::driver::raw::cuMemAddressFree(next, old_size);
  }
  cuwrap::bench::record(state, name_of("vmm_raw", old_size / kMiB), start);
}

void BM_Grow_AllocCopyFree(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const auto old_size = static_cast<std::size_t>(state.range(0)) * kMiB;
  const CUstream stream = s.stream->handle();
  const CUmemoryPool pool = s.pool_mr->handle();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    CUdeviceptr small = 0;
    CUdeviceptr large = 0;
    cuwrap::driver::raw::cuMemAllocFromPoolAsync(&small, old_size, pool, stream);
    cuwrap::driver::raw::cuMemAllocFromPoolAsync(&large, 2 * old_size, pool, stream);
    cuwrap::driver::raw::cuMemcpyDtoDAsync(large, small, old_size, stream);
    cuwrap::driver::raw::cuMemFreeAsync(small, stream);
    benchmark::DoNotOptimize(large);
    cuwrap::driver::raw::cuMemFreeAsync(large, stream);
    cuwrap::driver::raw::cuStreamSynchronize(stream);
  }
  cuwrap::bench::record(state, name_of("copy_raw", old_size / kMiB), start);
}

// Old sizes in MiB: one granule (2 MiB on current GPUs), then sizes where the copy
// dominates.
#define CUWRAP_GROW_SIZES Arg(2)->Arg(64)->Arg(256)
BENCHMARK(BM_Grow_Vmm)->CUWRAP_GROW_SIZES->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Grow_RawVmm)->CUWRAP_GROW_SIZES->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Grow_AllocCopyFree)->CUWRAP_GROW_SIZES->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    for (const std::size_t mib : {std::size_t{2}, std::size_t{64}, std::size_t{256}}) {
      const auto copy =
          cuwrap::bench::compare(name_of("vmm_cuwrap", mib), name_of("copy_raw", mib));
      const auto raw = cuwrap::bench::compare(name_of("vmm_cuwrap", mib), name_of("vmm_raw", mib));
      if (copy) {
        std::printf(
            "grow %zu MiB -> %zu MiB: modify_allocation / (alloc+copy+free) = %.3f "
            "(%.1f us vs %.1f us)\n",
            mib, 2 * mib, copy->ratio(), copy->ours_ns / 1e3, copy->raw_ns / 1e3);
      }
      if (raw) {
        std::printf(
            "grow %zu MiB -> %zu MiB: cuwrap / raw VMM calls = %.3f (%.1f us vs %.1f us; "
            "target <= 1.05)\n",
            mib, 2 * mib, raw->ratio(), raw->ours_ns / 1e3, raw->raw_ns / 1e3);
      }
    }
  });
}
