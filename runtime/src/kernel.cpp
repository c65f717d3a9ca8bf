// Kernel, KernelAttributes and KernelOccupancy.
#include "kernel_impl.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

void check_block_size_limit(int block_size_limit) {
  if (block_size_limit < 0) {
    throw std::invalid_argument(
        "KernelOccupancy::max_potential_block_size: block_size_limit must be >= 0, got " +
        std::to_string(block_size_limit));
  }
}

}  // namespace

// ---- Kernel ----------------------------------------------------------------------

namespace detail {
void ref_acquire(const KernelImpl* impl) noexcept { acquire_counted(impl); }
void ref_release(const KernelImpl* impl) noexcept { release_counted(impl); }
}  // namespace detail

Kernel::Kernel(detail::Ref<detail::KernelImpl> impl)
    : impl_(std::move(impl)), handle_(impl_->handle) {}

Kernel Kernel::from_handle(CUkernel kernel, std::string name) {
  if (kernel == nullptr) {
    throw std::invalid_argument("Kernel::from_handle: kernel is null");
  }
  auto impl = detail::make_ref<detail::KernelImpl>();
  impl->handle = kernel;
  impl->symbol = driver::cuKernelGetName(kernel);
  impl->name = name.empty() ? impl->symbol : std::move(name);
  impl->params = detail::query_param_info(kernel);
  return Kernel(std::move(impl));
}

CUfunction Kernel::function(CUcontext context) const {
  const detail::KernelImpl& impl = *impl_;
  const auto* last = impl.last_function.load(std::memory_order_acquire);
  if (last != nullptr && last->context == context) [[likely]] {
    return last->function;
  }
  const std::lock_guard<std::mutex> lock(impl.functions_mutex);
  for (const auto& entry : impl.functions) {
    if (entry->context == context) {
      impl.last_function.store(entry.get(), std::memory_order_release);
      return entry->function;
    }
  }
  const detail::ScopedContext scope(context);
  auto entry = std::make_unique<const detail::KernelImpl::ContextFunction>(
      detail::KernelImpl::ContextFunction{context, driver::cuKernelGetFunction(impl.handle)});
  impl.last_function.store(entry.get(), std::memory_order_release);
  impl.functions.push_back(std::move(entry));
  return impl.functions.back()->function;
}

KernelAttributes Kernel::attributes() const { return KernelAttributes(impl_); }

KernelOccupancy Kernel::occupancy() const { return KernelOccupancy(impl_); }

std::size_t Kernel::num_arguments() const { return impl_->params.size(); }

std::span<const ParamInfo> Kernel::arguments_info() const { return impl_->params; }

const std::string& Kernel::name() const { return impl_->name; }

const std::string& Kernel::symbol() const { return impl_->symbol; }

// ---- KernelAttributes --------------------------------------------------------------

KernelAttributes::KernelAttributes(detail::Ref<detail::KernelImpl> impl)
    : impl_(std::move(impl)) {}

int KernelAttributes::get(CUfunction_attribute attribute) const {
  return driver::cuKernelGetAttribute(attribute, impl_->handle,
                                      detail::current_or_default_device());
}

int KernelAttributes::get(CUfunction_attribute attribute, const Device& device) const {
  return driver::cuKernelGetAttribute(attribute, impl_->handle, device.handle());
}

// ---- KernelOccupancy ---------------------------------------------------------------

KernelOccupancy::KernelOccupancy(detail::Ref<detail::KernelImpl> impl)
    : impl_(std::move(impl)) {}

CUfunction KernelOccupancy::function() const {
  detail::ensure_current_context(0);
  return driver::cuKernelGetFunction(impl_->handle);
}

int KernelOccupancy::max_active_blocks_per_multiprocessor(
    int block_size, std::size_t dynamic_shared_memory_size) const {
  if (block_size <= 0) {
    throw std::invalid_argument(
        "KernelOccupancy::max_active_blocks_per_multiprocessor: block_size must be > 0, got " +
        std::to_string(block_size));
  }
  return driver::cuOccupancyMaxActiveBlocksPerMultiprocessor(function(), block_size,
                                                             dynamic_shared_memory_size);
}

MaxPotentialBlockSizeOccupancyResult KernelOccupancy::max_potential_block_size(
    std::size_t dynamic_shared_memory_needed, int block_size_limit) const {
  check_block_size_limit(block_size_limit);
  const auto [min_grid_size, block_size] = driver::cuOccupancyMaxPotentialBlockSize(
      function(), nullptr, dynamic_shared_memory_needed, block_size_limit);
  return {min_grid_size, block_size};
}

MaxPotentialBlockSizeOccupancyResult KernelOccupancy::max_potential_block_size_with(
    CUoccupancyB2DSize smem_for_block, int block_size_limit) const {
  if (smem_for_block == nullptr) {
    throw std::invalid_argument(
        "KernelOccupancy::max_potential_block_size: smem_for_block is null");
  }
  check_block_size_limit(block_size_limit);
  const auto [min_grid_size, block_size] =
      driver::cuOccupancyMaxPotentialBlockSize(function(), smem_for_block, 0, block_size_limit);
  return {min_grid_size, block_size};
}

std::size_t KernelOccupancy::available_dynamic_shared_memory_per_block(
    int num_blocks_per_multiprocessor, int block_size) const {
  if (num_blocks_per_multiprocessor <= 0 || block_size <= 0) {
    throw std::invalid_argument(
        "KernelOccupancy::available_dynamic_shared_memory_per_block: "
        "num_blocks_per_multiprocessor and block_size must be > 0, got " +
        std::to_string(num_blocks_per_multiprocessor) + " and " + std::to_string(block_size));
  }
  return driver::cuOccupancyAvailableDynamicSMemPerBlock(function(), num_blocks_per_multiprocessor,
                                                         block_size);
}

int KernelOccupancy::max_potential_cluster_size(const LaunchConfig& config) const {
  detail::check_config(config);
  CUlaunchConfig cu_config{};
  CUlaunchAttribute attributes[detail::kMaxLaunchAttributes];
  detail::to_cu_launch_config(config, nullptr, cu_config, attributes);
  const CUfunction fn = function();
  return driver::cuOccupancyMaxPotentialClusterSize(fn, &cu_config);
}

int KernelOccupancy::max_active_clusters(const LaunchConfig& config) const {
  if (!config.cluster) {
    throw std::invalid_argument("KernelOccupancy::max_active_clusters: config.cluster must be set");
  }
  detail::check_config(config);
  CUlaunchConfig cu_config{};
  CUlaunchAttribute attributes[detail::kMaxLaunchAttributes];
  detail::to_cu_launch_config(config, nullptr, cu_config, attributes);
  const CUfunction fn = function();
  return driver::cuOccupancyMaxActiveClusters(fn, &cu_config);
}

// ---- detail ------------------------------------------------------------------------

namespace detail {

std::vector<ParamInfo> query_param_info(CUkernel kernel) {
  // cuKernelGetParamInfo answers CUDA_ERROR_INVALID_CONTEXT without a current context.
  ensure_current_context(0);
  std::vector<ParamInfo> params;
  for (std::size_t index = 0;; ++index) {
    std::size_t offset = 0;
    std::size_t size = 0;
    const CUresult status = driver::raw::cuKernelGetParamInfo(kernel, index, &offset, &size);
    if (status == CUDA_ERROR_INVALID_VALUE) {
      break;  // one past the last parameter
    }
    check(status, "cuKernelGetParamInfo");
    params.push_back({offset, size});
  }
  return params;
}

CUdevice current_or_default_device() {
  if (device_count() == 0) {
    throw std::invalid_argument("no CUDA device is available");
  }
  if (const CUcontext context = current_context(); context != nullptr) {
    return driver::cuDeviceGet(device_of_context(context));
  }
  return driver::cuDeviceGet(0);
}

}  // namespace detail
}  // namespace cuwrap
