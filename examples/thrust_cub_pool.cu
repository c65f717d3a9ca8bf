// thrust_cub_pool: thrust::sort and cub::DeviceReduce::Sum on a cuwrap stream, every
// byte (the keys, thrust's and CUB's temporary storage) from a cuwrap memory pool.
//
// thrust takes a StreamOrderedAllocator (<cuwrap/stream_allocator.hpp>) through
// thrust::cuda::par_nosync(allocator).on(stream); CUB's temporary storage comes from
// the pool through CcclResource (<cuwrap/cccl_resource.hpp>), the CCCL memory resource
// form of a cuwrap resource. Checks the sort, the sum and that thrust's temporary memory
// came from the pool; exits 1 on a wrong result. Built only when CMake finds nvcc; needs a
// GPU to run (otherwise it says so and exits 0).
#include <cuwrap/cccl_resource.hpp>
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/launch_cuda.hpp>
#include <cuwrap/stream_allocator.hpp>

#include "support.hpp"

#include <thrust/execution_policy.h>
#include <thrust/sort.h>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <random>
#include <span>
#include <vector>

namespace {

// Throw the CUDA runtime's error as cuwrap does for its launches.
void check(cudaError_t code, const char* function) {
  if (code != cudaSuccess) {
    throw cuwrap::CudaRuntimeError(code, function);
  }
}

int thrust_cub_pool_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  cuwrap::DeviceMemoryResource pool(device, {.create_pool = true});

  const std::size_t n = std::size_t{1} << 22;
  std::vector<std::int64_t> keys(n);
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::int64_t> uniform(-1'000'000, 1'000'000);
  for (auto& key : keys) {
    key = uniform(random);
  }
  cuwrap::Buffer data = pool.allocate(n * sizeof(std::int64_t), stream);
  cuwrap::Buffer sum = pool.allocate(sizeof(std::int64_t), stream);
  data.copy_from(keys, stream);
  auto* first = reinterpret_cast<std::int64_t*>(data.handle());

  // thrust: its temporary storage from the pool, ordered on the stream.
  const std::uint64_t before_sort = pool.attributes().used_mem_current();
  pool.attributes().reset_used_mem_high();
  cuwrap::StreamOrderedAllocator<char> allocator(pool, stream);
  thrust::sort(thrust::cuda::par_nosync(allocator).on(stream.handle()), first, first + n);
  const bool sort_used_pool = pool.attributes().used_mem_high() > before_sort;

  // CUB: ask for the temporary size, take it from the pool through the CCCL resource.
  cuwrap::CcclResource resource(pool);
  const cuda::stream_ref on(stream.handle());
  auto* total = reinterpret_cast<std::int64_t*>(sum.handle());
  std::size_t temp_bytes = 0;
  check(cub::DeviceReduce::Sum(nullptr, temp_bytes, first, total, n, stream.handle()),
        "cub::DeviceReduce::Sum");
  void* temp = resource.allocate(on, temp_bytes, cuwrap::kResourceAlignment);
  check(cub::DeviceReduce::Sum(temp, temp_bytes, first, total, n, stream.handle()),
        "cub::DeviceReduce::Sum");
  resource.deallocate(on, temp, temp_bytes, cuwrap::kResourceAlignment);

  std::vector<std::int64_t> sorted(n);
  std::int64_t device_sum = 0;
  data.copy_to(sorted, stream);
  sum.copy_to(std::as_writable_bytes(std::span(&device_sum, 1)), stream);
  stream.sync();

  std::vector<std::int64_t> expected = keys;
  std::sort(expected.begin(), expected.end());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrong += sorted[i] != expected[i] ? 1 : 0;
  }
  const std::int64_t host_sum = std::accumulate(keys.begin(), keys.end(), std::int64_t{0});
  if (device_sum != host_sum) {
    std::cerr << "thrust_cub_pool: FAILED: cub::DeviceReduce::Sum gave " << device_sum
              << ", the host sum is " << host_sum << '\n';
    return 1;
  }
  if (!sort_used_pool) {
    std::cerr << "thrust_cub_pool: FAILED: thrust's temporary storage did not come from the "
                 "pool (its usage never rose above the keys' "
              << before_sort << " bytes)\n";
    return 1;
  }
  std::cout << "thrust_cub_pool: sum " << device_sum << " (pool high-water mark "
            << pool.attributes().used_mem_high() << " bytes during the sort)\n";
  return example::verdict("thrust_cub_pool", n, wrong);
}

}  // namespace

int main() { return example::run_on_gpu("thrust_cub_pool", thrust_cub_pool_example); }
