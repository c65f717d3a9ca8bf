// Kernel, KernelAttributes and KernelOccupancy.
#include "base/compat.hpp"
#include "base/context_registry.hpp"
#include "launch/kernel_impl.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/stream.hpp>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
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

namespace {

// Every live KernelImpl, for forget_context_functions.
struct KernelRegistry {
  std::mutex mutex;
  std::unordered_set<const KernelImpl*> kernels;
};

KernelRegistry& kernel_registry() {
  static auto* registry = [] {
    // Contexts that cuwrap destroys drop what the kernels cached for them (core calls
    // back; it may not include this concept).
    set_context_destroy_hook(&forget_context_functions);
    return new KernelRegistry;  // never destroyed: kernels may outlive statics
  }();
  return *registry;
}

// Replace the cached pair (the caller holds functions_mutex).
void store_last(const KernelImpl& kernel, unsigned long long context_id, CUfunction function) {
  const unsigned sequence = kernel.last_sequence.load(std::memory_order_relaxed);
  kernel.last_sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  kernel.last_context_id.store(context_id, std::memory_order_relaxed);
  kernel.last_function.store(function, std::memory_order_relaxed);
  kernel.last_sequence.store(sequence + 2, std::memory_order_release);
}

}  // namespace

KernelImpl::KernelImpl() {
  KernelRegistry& registry = kernel_registry();
  const std::lock_guard<std::mutex> lock(registry.mutex);
  registry.kernels.insert(this);
}

KernelImpl::~KernelImpl() {
  KernelRegistry& registry = kernel_registry();
  const std::lock_guard<std::mutex> lock(registry.mutex);
  registry.kernels.erase(this);
}

CUfunction kernel_function(const KernelImpl& kernel, CUcontext context,
                           unsigned long long context_id) {
  const unsigned sequence = kernel.last_sequence.load(std::memory_order_acquire);
  const unsigned long long last_id = kernel.last_context_id.load(std::memory_order_relaxed);
  const CUfunction last = kernel.last_function.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (last_id == context_id && last != nullptr && (sequence & 1U) == 0 &&
      kernel.last_sequence.load(std::memory_order_relaxed) == sequence) [[likely]] {
    return last;
  }
  const std::lock_guard<std::mutex> lock(kernel.functions_mutex);
  for (const KernelImpl::ContextFunction& entry : kernel.functions) {
    if (entry.context_id == context_id) {
      store_last(kernel, context_id, entry.function);
      return entry.function;
    }
  }
  CUfunction function = nullptr;
  {
    const ContextUse use(context, context_id, "Context", context, "launch");
    const ScopedContext scope(context);
    function = driver::cuKernelGetFunction(kernel.handle);
  }
  kernel.functions.push_back({context_id, function});
  store_last(kernel, context_id, function);
  return function;
}

void forget_context_functions(unsigned long long context_id) noexcept {
  KernelRegistry& registry = kernel_registry();
  const std::lock_guard<std::mutex> registry_lock(registry.mutex);
  for (const KernelImpl* kernel : registry.kernels) {
    const std::lock_guard<std::mutex> lock(kernel->functions_mutex);
    std::erase_if(kernel->functions, [&](const KernelImpl::ContextFunction& entry) {
      return entry.context_id == context_id;
    });
    if (kernel->last_context_id.load(std::memory_order_relaxed) == context_id) {
      store_last(*kernel, 0, nullptr);
    }
  }
}
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
  if (context == nullptr) {
    throw std::invalid_argument("Kernel::function: context is null (kernel '" + impl_->name + "')");
  }
  unsigned long long id = 0;
  const CUresult status = driver::raw::cuCtxGetId(context, &id);
  if (status != CUDA_SUCCESS) {
    // A destroyed context, or not a context: never look up (or use) a stale handle.
    throw std::invalid_argument(
        "Kernel::function: kernel '" + impl_->name +
        "': the context is not valid (destroyed?): cuCtxGetId failed with " +
        std::string(to_string(status)));
  }
  return detail::kernel_function(*impl_, context, id);
}

KernelAttributes Kernel::attributes() const { return KernelAttributes(impl_); }

KernelOccupancy Kernel::occupancy() const { return KernelOccupancy(impl_, -1); }

KernelOccupancy Kernel::occupancy(const Device& device) const {
  return KernelOccupancy(impl_, device.device_id());
}

std::size_t Kernel::num_arguments() const { return impl_->params.size(); }

std::span<const ParamInfo> Kernel::arguments_info() const { return impl_->params; }

const std::string& Kernel::name() const { return impl_->name; }

const std::string& Kernel::symbol() const { return impl_->symbol; }

// ---- KernelAttributes --------------------------------------------------------------

KernelAttributes::KernelAttributes(detail::Ref<detail::KernelImpl> impl) : impl_(std::move(impl)) {}

int KernelAttributes::get(CUfunction_attribute attribute) const {
  return driver::cuKernelGetAttribute(attribute, impl_->handle,
                                      detail::current_or_default_device());
}

int KernelAttributes::get(CUfunction_attribute attribute, const Device& device) const {
  return driver::cuKernelGetAttribute(attribute, impl_->handle, device.handle());
}

// ---- KernelOccupancy ---------------------------------------------------------------

KernelOccupancy::KernelOccupancy(detail::Ref<detail::KernelImpl> impl, int device_id)
    : impl_(std::move(impl)), device_id_(device_id) {}

Device KernelOccupancy::device() const {
  if (device_id_ >= 0) {
    return Device(device_id_);
  }
  const CUcontext current = detail::current_context();
  return Device(current == nullptr ? 0 : detail::device_of_context(current));
}

// Run `query` with the context the answers are for current: the bound device's primary
// context, else the current one, else device 0's primary context (none is current
// afterwards). The CUfunction (cuKernelGetFunction) is of that context.
template <class Query>
auto KernelOccupancy::in_context(Query query) const {
  if (device_id_ >= 0) {
    const detail::ScopedContext scope(device_id_);
    return query();
  }
  const detail::ScopedCurrentOrPrimary scope(0);
  return query();
}

CUfunction KernelOccupancy::function() const { return driver::cuKernelGetFunction(impl_->handle); }

int KernelOccupancy::max_active_blocks_per_multiprocessor(
    int block_size, std::size_t dynamic_shared_memory_size) const {
  if (block_size <= 0) {
    throw std::invalid_argument(
        "KernelOccupancy::max_active_blocks_per_multiprocessor: block_size must be > 0, got " +
        std::to_string(block_size));
  }
  return in_context([&] {
    return driver::cuOccupancyMaxActiveBlocksPerMultiprocessor(function(), block_size,
                                                               dynamic_shared_memory_size);
  });
}

MaxPotentialBlockSizeOccupancyResult KernelOccupancy::max_potential_block_size(
    std::size_t dynamic_shared_memory_needed, int block_size_limit) const {
  check_block_size_limit(block_size_limit);
  const auto [min_grid_size, block_size] = in_context([&] {
    return driver::cuOccupancyMaxPotentialBlockSize(function(), nullptr,
                                                    dynamic_shared_memory_needed, block_size_limit);
  });
  return {min_grid_size, block_size};
}

MaxPotentialBlockSizeOccupancyResult KernelOccupancy::max_potential_block_size_with(
    CUoccupancyB2DSize smem_for_block, int block_size_limit) const {
  if (smem_for_block == nullptr) {
    throw std::invalid_argument(
        "KernelOccupancy::max_potential_block_size: smem_for_block is null");
  }
  check_block_size_limit(block_size_limit);
  const auto [min_grid_size, block_size] = in_context([&] {
    return driver::cuOccupancyMaxPotentialBlockSize(function(), smem_for_block, 0,
                                                    block_size_limit);
  });
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
  return in_context([&] {
    return driver::cuOccupancyAvailableDynamicSMemPerBlock(
        function(), num_blocks_per_multiprocessor, block_size);
  });
}

// A cluster query of `config` on `stream` (nullptr: none) in `context` (nullptr: the
// current one, or device 0's primary one): cuOccupancyMaxActiveClusters when `active`,
// else cuOccupancyMaxPotentialClusterSize.
int KernelOccupancy::cluster_query(const LaunchConfig& config, CUstream stream, CUcontext context,
                                   bool active) const {
  detail::check_config(config);
  CUlaunchConfig cu_config{};
  CUlaunchAttribute attributes[detail::kMaxLaunchAttributes];
  detail::to_cu_launch_config(config, stream, cu_config, attributes);
  const auto query = [&] {
    const CUfunction fn = function();
    return active ? driver::cuOccupancyMaxActiveClusters(fn, &cu_config)
                  : driver::cuOccupancyMaxPotentialClusterSize(fn, &cu_config);
  };
  if (context != nullptr) {
    const detail::ScopedContext scope(context);
    return query();
  }
  return in_context(query);
}

int KernelOccupancy::max_potential_cluster_size(const LaunchConfig& config) const {
  return cluster_query(config, nullptr, nullptr, false);
}

int KernelOccupancy::max_potential_cluster_size(const LaunchConfig& config,
                                                StreamRef stream) const {
  return cluster_query(config, stream.handle(), detail::stream_context_key(stream).context, false);
}

int KernelOccupancy::max_active_clusters(const LaunchConfig& config) const {
  return cluster_query(config, nullptr, nullptr, true);
}

int KernelOccupancy::max_active_clusters(const LaunchConfig& config, StreamRef stream) const {
  return cluster_query(config, stream.handle(), detail::stream_context_key(stream).context, true);
}

// ---- detail ------------------------------------------------------------------------

namespace detail {

std::vector<ParamInfo> query_param_info(CUkernel kernel) {
  // cuKernelGetParamInfo answers CUDA_ERROR_INVALID_CONTEXT without a current context:
  // device 0's primary context is current for the queries when none is.
  const ScopedCurrentOrPrimary scope(0);
  std::vector<ParamInfo> params;
#if CUDA_VERSION >= 13020
  // Toolkit 13.2, driver 13.2: the driver says how many parameters there are.
  static const bool has_count = driver_at_least(13020);
  if (has_count) {
    std::size_t count = 0;
    check(driver::raw::cuKernelGetParamCount(kernel, &count), "cuKernelGetParamCount");
    params.reserve(count);
    for (std::size_t index = 0; index < count; ++index) {
      const auto info = driver::cuKernelGetParamInfo(kernel, index);
      params.push_back({info.paramOffset, info.paramSize});
    }
    return params;
  }
#endif
  // Older drivers: ask for one index after another; CUDA_ERROR_INVALID_VALUE (an index
  // past the last parameter) ends the list, any other status is an error.
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
