// LaunchConfig's named constructor and device checks: for_elements (the occupancy API's
// block size) and check(device[, kernel]), which compare a configuration with the
// device's limits before anything is launched; and the cooperative-residency check that
// launch() makes before a cooperative launch.
#include "launch/dims.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace cuwrap {
namespace {

// The largest grid x extent of every device since compute capability 3.0.
constexpr unsigned long long kMaxGridX = 2147483647ULL;
// Thread blocks of a cluster: 8 portable, 16 with non-portable cluster sizes (sm_90).
constexpr unsigned long long kMaxClusterBlocks = 16;

using detail::dims;

std::string on_device(const Device& device) {
  return "device " + std::to_string(device.device_id());
}

// Throw unless `value` <= `limit` for the dimension `what` ("block.x") of `member`.
void require_extent(const char* member, const Dim3& d, char axis, unsigned value, int limit,
                    const Device& device) {
  if (limit > 0 && value > static_cast<unsigned>(limit)) {
    throw std::invalid_argument(std::string("LaunchConfig::") + member + " " + dims(d) + ": " +
                                axis + " = " + std::to_string(value) + " exceeds " +
                                on_device(device) + "'s limit " + std::to_string(limit));
  }
}

void refuse_no_elements(std::size_t count) {
  if (count == 0) {
    throw std::invalid_argument("LaunchConfig::for_elements: count is 0 (a grid needs a block)");
  }
}

// The block size the occupancy API gives `kernel` through `occupancy`.
unsigned occupancy_block(const Kernel& kernel, const KernelOccupancy& occupancy,
                         std::size_t dynamic_shared_bytes) {
  const int block = occupancy.max_potential_block_size(dynamic_shared_bytes).max_block_size;
  if (block <= 0) {
    throw std::invalid_argument("LaunchConfig::for_elements: kernel '" + kernel.name() +
                                "' fits no block with " + std::to_string(dynamic_shared_bytes) +
                                " bytes of dynamic shared memory");
  }
  return static_cast<unsigned>(block);
}

// One thread an element in blocks of `block` threads (block > 0, count > 0).
LaunchConfig linear_config(std::size_t count, unsigned block, std::size_t dynamic_shared_bytes) {
  const std::size_t grid = count / block + (count % block != 0 ? 1 : 0);
  if (grid > kMaxGridX) {
    throw std::invalid_argument("LaunchConfig::for_elements: count " + std::to_string(count) +
                                " needs " + std::to_string(grid) + " blocks of " +
                                std::to_string(block) + " threads; a grid holds at most " +
                                std::to_string(kMaxGridX));
  }
  LaunchConfig config;
  config.grid = Dim3(static_cast<unsigned>(grid));
  config.block = Dim3(block);
  config.shmem_size = dynamic_shared_bytes;
  return config;
}

void check_residency(const LaunchConfig& config, long long resident_blocks, const char* reason,
                     const Device& device) {
  if (static_cast<long long>(config.grid.volume()) > resident_blocks) {
    throw std::invalid_argument(
        "LaunchConfig: a cooperative grid " + dims(config.grid) + " of " +
        std::to_string(config.grid.volume()) + " blocks cannot be resident on " +
        on_device(device) + ": at most " + std::to_string(resident_blocks) + " blocks of " +
        std::to_string(config.block.volume()) + " threads (" + reason + ")");
  }
}

}  // namespace

LaunchConfig LaunchConfig::for_elements(const Kernel& kernel, std::size_t count,
                                        std::size_t dynamic_shared_bytes) {
  refuse_no_elements(count);
  return linear_config(count, occupancy_block(kernel, kernel.occupancy(), dynamic_shared_bytes),
                       dynamic_shared_bytes);
}

LaunchConfig LaunchConfig::for_elements(const Kernel& kernel, std::size_t count,
                                        const Device& device, std::size_t dynamic_shared_bytes) {
  refuse_no_elements(count);
  return linear_config(count,
                       occupancy_block(kernel, kernel.occupancy(device), dynamic_shared_bytes),
                       dynamic_shared_bytes);
}

LaunchConfig LaunchConfig::for_elements(std::size_t count, unsigned block_size,
                                        std::size_t dynamic_shared_bytes) {
  refuse_no_elements(count);
  if (block_size == 0) {
    throw std::invalid_argument(
        "LaunchConfig::for_elements: block_size is 0 (a block needs a "
        "thread)");
  }
  return linear_config(count, block_size, dynamic_shared_bytes);
}

LaunchConfig LaunchConfig::for_elements_largest_block(const Kernel& kernel, std::size_t count,
                                                      const Device& device,
                                                      std::size_t dynamic_shared_bytes) {
  refuse_no_elements(count);
  int block = kernel.attributes().get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
  for (const CUdevice_attribute limit :
       {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X}) {
    const int value = device.attribute(limit);
    if (value > 0 && value < block) {
      block = value;
    }
  }
  if (block <= 0) {
    throw std::invalid_argument("LaunchConfig::for_elements_largest_block: kernel '" +
                                kernel.name() + "' can launch no block on " + on_device(device));
  }
  return linear_config(count, static_cast<unsigned>(block), dynamic_shared_bytes);
}

void LaunchConfig::check(const Device& device) const {
  detail::check_config(*this);  // zero extents, the limits every device shares, cluster division
  const int threads = device.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  if (threads > 0 && block.volume() > static_cast<unsigned long long>(threads)) {
    throw std::invalid_argument("LaunchConfig::block " + dims(block) + " has " +
                                std::to_string(block.volume()) + " threads; " + on_device(device) +
                                " allows at most " + std::to_string(threads) + " per block");
  }
  require_extent("block", block, 'x', block.x,
                 device.attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), device);
  require_extent("block", block, 'y', block.y,
                 device.attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y), device);
  require_extent("block", block, 'z', block.z,
                 device.attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z), device);
  require_extent("grid", grid, 'x', grid.x, device.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                 device);
  require_extent("grid", grid, 'y', grid.y, device.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                 device);
  require_extent("grid", grid, 'z', grid.z, device.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
                 device);
  if (shmem_size > 0) {
    const int optin = device.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    if (optin > 0 && shmem_size > static_cast<std::size_t>(optin)) {
      throw std::invalid_argument("LaunchConfig::shmem_size " + std::to_string(shmem_size) +
                                  " bytes exceeds " + on_device(device) + "'s limit of " +
                                  std::to_string(optin) +
                                  " bytes of shared memory per block (opt-in maximum)");
    }
  }
  if (cluster) {
    if (device.attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) == 0) {
      const int major = device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
      const int minor = device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
      throw std::invalid_argument("LaunchConfig::cluster " + dims(*cluster) + ": " +
                                  on_device(device) + " (sm_" + std::to_string(major) +
                                  std::to_string(minor) +
                                  ") has no thread-block clusters (sm_90 or newer)");
    }
    if (cluster->volume() > kMaxClusterBlocks) {
      throw std::invalid_argument("LaunchConfig::cluster " + dims(*cluster) + " has " +
                                  std::to_string(cluster->volume()) +
                                  " blocks; a cluster holds at most 16 (8 portably)");
    }
  }
  if (cooperative_launch) {
    if (device.attribute(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) == 0) {
      throw std::invalid_argument("LaunchConfig::cooperative_launch: " + on_device(device) +
                                  " does not support cooperative launches");
    }
    const long long sms = device.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    const long long blocks_per_sm =
        device.attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    const long long threads_per_sm =
        device.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    const auto block_threads = static_cast<long long>(block.volume());
    const long long by_threads = threads_per_sm / block_threads;
    const bool threads_bind = by_threads < blocks_per_sm;
    const std::string reason = std::to_string(threads_bind ? by_threads : blocks_per_sm) +
                               " per multiprocessor by the device's " +
                               (threads_bind ? std::to_string(threads_per_sm) + " threads"
                                             : std::to_string(blocks_per_sm) + " blocks") +
                               " per multiprocessor, " + std::to_string(sms) + " multiprocessors";
    check_residency(*this, sms * (threads_bind ? by_threads : blocks_per_sm), reason.c_str(),
                    device);
  }
}

void LaunchConfig::check(const Device& device, const Kernel& kernel) const {
  check(device);
  const int kernel_threads =
      kernel.attributes().get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
  if (kernel_threads > 0 && block.volume() > static_cast<unsigned long long>(kernel_threads)) {
    throw std::invalid_argument("LaunchConfig::block " + dims(block) + " has " +
                                std::to_string(block.volume()) + " threads; kernel '" +
                                kernel.name() + "' allows at most " +
                                std::to_string(kernel_threads) + " per block on " +
                                on_device(device) + " (its registers limit it)");
  }
  if (cooperative_launch) {
    const detail::ScopedContext scope(device.context());
    detail::check_cooperative_residency(*this, driver::cuKernelGetFunction(kernel.handle()),
                                        device.handle());
  }
}

namespace detail {

void check_cooperative_residency(const LaunchConfig& config, CUfunction function, CUdevice device) {
  const unsigned long long threads = config.block.volume();
  if (threads > static_cast<unsigned long long>(std::numeric_limits<int>::max())) {
    return;  // check_config refused it already
  }
  const int per_sm = driver::cuOccupancyMaxActiveBlocksPerMultiprocessor(
      function, static_cast<int>(threads), config.shmem_size);
  const int sms = driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  if (config.grid.volume() <=
      static_cast<unsigned long long>(per_sm) * static_cast<unsigned>(sms)) {
    return;  // the common case: no message to build
  }
  const Device dev(ordinal_of(device));
  const std::string reason = std::to_string(per_sm) + " per multiprocessor for this kernel with " +
                             std::to_string(config.shmem_size) +
                             " bytes of dynamic shared memory, " + std::to_string(sms) +
                             " multiprocessors";
  check_residency(config, static_cast<long long>(per_sm) * sms, reason.c_str(), dev);
}

}  // namespace detail
}  // namespace cuwrap
