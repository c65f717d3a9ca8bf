// KernelAttributes' setters: cuKernelSetAttribute and cuKernelSetCacheConfig, per device.
#include "launch/kernel_impl.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/kernel.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cuwrap {
namespace {

void set_attribute(const detail::KernelImpl& impl, CUfunction_attribute attribute, int value,
                   CUdevice device) {
  driver::cuKernelSetAttribute(attribute, value, impl.handle, device);
}

void set_max_dynamic_shared(const detail::KernelImpl& impl, int bytes, CUdevice device) {
  if (bytes < 0) {
    throw std::invalid_argument(
        "KernelAttributes::set_max_dynamic_shared_size_bytes: bytes must be >= 0, got " +
        std::to_string(bytes));
  }
  set_attribute(impl, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes, device);
  // launch() raises the limit only above what it remembers as allowed: remember exactly
  // this value, so that a lowered limit is raised again when a launch needs more.
  const int ordinal = detail::ordinal_of(device);
  if (ordinal >= 0 && static_cast<std::size_t>(ordinal) < detail::kMaxTrackedDevices) {
    impl.dynamic_shared_allowed[static_cast<std::size_t>(ordinal)].store(
        static_cast<std::size_t>(bytes), std::memory_order_relaxed);
  }
}

void set_carveout(const detail::KernelImpl& impl, int percent, CUdevice device) {
  if (percent < -1 || percent > 100) {
    throw std::invalid_argument(
        "KernelAttributes::set_preferred_shared_memory_carveout: percent must be -1 (the "
        "default) or 0..100, got " +
        std::to_string(percent));
  }
  set_attribute(impl, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent, device);
}

}  // namespace

void KernelAttributes::set_max_dynamic_shared_size_bytes(int bytes) const {
  set_max_dynamic_shared(*impl_, bytes, detail::current_or_default_device());
}

void KernelAttributes::set_max_dynamic_shared_size_bytes(int bytes, const Device& device) const {
  set_max_dynamic_shared(*impl_, bytes, device.handle());
}

void KernelAttributes::set_preferred_shared_memory_carveout(int percent) const {
  set_carveout(*impl_, percent, detail::current_or_default_device());
}

void KernelAttributes::set_preferred_shared_memory_carveout(int percent,
                                                            const Device& device) const {
  set_carveout(*impl_, percent, device.handle());
}

void KernelAttributes::set_cache_config(CUfunc_cache config) const {
  driver::cuKernelSetCacheConfig(impl_->handle, config, detail::current_or_default_device());
}

void KernelAttributes::set_cache_config(CUfunc_cache config, const Device& device) const {
  driver::cuKernelSetCacheConfig(impl_->handle, config, device.handle());
}

void KernelAttributes::set_non_portable_cluster_size_allowed(bool allowed) const {
  set_attribute(*impl_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, allowed ? 1 : 0,
                detail::current_or_default_device());
}

void KernelAttributes::set_non_portable_cluster_size_allowed(bool allowed,
                                                             const Device& device) const {
  set_attribute(*impl_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, allowed ? 1 : 0,
                device.handle());
}

}  // namespace cuwrap
