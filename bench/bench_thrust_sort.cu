// thrust::sort on a cuwrap stream with memory from a cuwrap pool (the keys, and thrust's
// temporary storage through StreamOrderedAllocator) against thrust as it comes: keys from
// cudaMalloc, a stream from cudaStreamCreate, thrust's own temporary allocation. Both are
// timed in alternating blocks of the same run (bench_support.hpp's measure_alternating),
// each sort from the same unsorted copy and to its completion. BM_ThrustSortStreamOnly
// isolates the stream (thrust allocates for both sides): target cuwrap / thrust within
// 1 +- 0.02.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/launch_cuda.hpp>
#include <cuwrap/stream_allocator.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using Key = std::uint32_t;

// The unsorted keys and both sides' working memory and streams, for one key count.
struct Setup : cuwrap::bench::GpuSetup {
  std::size_t count = 0;
  std::optional<cuwrap::DeviceMemoryResource> pool;
  std::optional<cuwrap::Buffer> unsorted;  // copied into each side's keys before a sort
  std::optional<cuwrap::Buffer> pool_keys;
  Key* raw_keys = nullptr;            // cudaMalloc
  cudaStream_t raw_stream = nullptr;  // cudaStreamCreate
  // Both raw handles live until the process exits: the CUDA runtime may be gone before
  // a static destructor could release them.
};

void check(cudaError_t code, const char* function) {
  if (code != cudaSuccess) {
    throw cuwrap::CudaRuntimeError(code, function);
  }
}

Setup& setup(std::size_t count) {
  static Setup s;
  if (s.count == count) {
    return s;
  }
  s.count = count;
  cuwrap::bench::build_setup(s, [count](Setup& r) {
    r.unsorted.reset();  // the last key count's buffers, before their pool goes
    r.pool_keys.reset();
    r.pool.emplace(*r.device, cuwrap::DeviceMemoryResourceOptions{.create_pool = true});
    std::vector<Key> keys(count);
    std::mt19937 random(11);
    for (Key& key : keys) {
      key = static_cast<Key>(random());
    }
    const std::size_t bytes = count * sizeof(Key);
    r.unsorted.emplace(r.pool->allocate(bytes, *r.stream));
    r.unsorted->copy_from(keys, *r.stream);
    r.pool_keys.emplace(r.pool->allocate(bytes, *r.stream));
    r.stream->sync();
    check(cudaFree(r.raw_keys), "cudaFree");
    r.raw_keys = nullptr;
    check(cudaMalloc(&r.raw_keys, bytes), "cudaMalloc");
    if (r.raw_stream == nullptr) {
      check(cudaStreamCreateWithFlags(&r.raw_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
  });
  return s;
}

// Time thrust::sort of the unsorted keys on a cuwrap stream (`pool_temporaries`: thrust's
// temporary storage from the cuwrap pool, else thrust allocates it) against thrust on a
// cudaStreamCreate stream allocating its own, in alternating blocks named `name`.
void sort_pair(benchmark::State& state, const std::string& name, bool pool_temporaries) {
  const auto count = static_cast<std::size_t>(state.range(0));
  Setup& s = setup(count);
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const std::size_t bytes = count * sizeof(Key);
  const auto unsorted = reinterpret_cast<const Key*>(s.unsorted->handle());
  auto* pool_keys = reinterpret_cast<Key*>(s.pool_keys->handle());
  cuwrap::StreamOrderedAllocator<char> allocator(*s.pool, *s.stream);
  const cudaStream_t ours_stream = s.stream->handle();
  const auto ours = [&] {
    check(cudaMemcpyAsync(pool_keys, unsorted, bytes, cudaMemcpyDeviceToDevice, ours_stream),
          "cudaMemcpyAsync");
    if (pool_temporaries) {
      thrust::sort(thrust::cuda::par_nosync(allocator).on(ours_stream), pool_keys,
                   pool_keys + count);
    } else {
      thrust::sort(thrust::cuda::par_nosync.on(ours_stream), pool_keys, pool_keys + count);
    }
    check(cudaStreamSynchronize(ours_stream), "cudaStreamSynchronize");
  };
  const auto raw = [&] {
    check(cudaMemcpyAsync(s.raw_keys, unsorted, bytes, cudaMemcpyDeviceToDevice, s.raw_stream),
          "cudaMemcpyAsync");
    thrust::sort(thrust::cuda::par_nosync.on(s.raw_stream), s.raw_keys, s.raw_keys + count);
    check(cudaStreamSynchronize(s.raw_stream), "cudaStreamSynchronize");
  };
  ours();  // warm both up (thrust's kernels, the pool's first reservation)
  raw();
  cuwrap::bench::measure_alternating(state, name + std::to_string(count), 4, ours, raw, [] {});
  state.SetItemsProcessed(state.iterations() * 4 * static_cast<std::int64_t>(count));
}

void BM_ThrustSort(benchmark::State& state) { sort_pair(state, "sort_", true); }
BENCHMARK(BM_ThrustSort)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond);

// The stream alone: both sides let thrust allocate its temporary storage itself
// (cudaMalloc), so only the stream differs: a cuwrap Stream against a cudaStreamCreate one.
void BM_ThrustSortStreamOnly(benchmark::State& state) { sort_pair(state, "sort_stream_", false); }
BENCHMARK(BM_ThrustSortStreamOnly)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    for (const std::size_t count : {std::size_t{1} << 20, std::size_t{1} << 24}) {
      if (const auto c = cuwrap::bench::alternating_ratio("sort_" + std::to_string(count))) {
        std::printf(
            "thrust::sort of %zu keys, cuwrap stream + pool / thrust alone = %.3f (%.3f ms vs "
            "%.3f ms per sort; the pool spares thrust's cudaMalloc of temporary storage)\n",
            count, c->ratio(), c->ours_ns / 1e6, c->raw_ns / 1e6);
      }
      if (const auto c = cuwrap::bench::alternating_ratio("sort_stream_" + std::to_string(count))) {
        std::printf(
            "thrust::sort of %zu keys, cuwrap stream / cudaStreamCreate stream = %.3f (%.3f ms "
            "vs %.3f ms per sort; target 1 +- 0.02)\n",
            count, c->ratio(), c->ours_ns / 1e6, c->raw_ns / 1e6);
      }
    }
  });
}
