// launch(): argument checks against the cached parameter layout, configuration checks,
// and the driver call (cuLaunchKernel, or cuLaunchKernelEx with launch attributes).
//
// This is a measured hot path (bench/bench_launch.cpp): the common case does a few
// comparisons, no allocation and no driver call besides the launch, which goes through
// the raw entry point and is checked with detail::check.
#include "base/compat.hpp"
#include "base/context_registry.hpp"
#include "launch/dims.hpp"
#include "launch/kernel_impl.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>

#include <atomic>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap::detail {
namespace {

// Limits every CUDA device since compute capability 2.0 shares; the device-specific
// ones (a kernel's register-bound maximum) are left to the driver.
constexpr unsigned long long kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockZ = 64;
constexpr std::size_t kDefaultDynamicShared = std::size_t{48} * 1024;

// nullptr, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: the current context's streams.
bool is_default_stream(CUstream stream) noexcept {
  return reinterpret_cast<std::uintptr_t>(stream) <=
         reinterpret_cast<std::uintptr_t>(CU_STREAM_PER_THREAD);
}

[[noreturn]] void throw_count_mismatch(const Kernel& kernel, std::size_t count) {
  const std::size_t expected = kernel.impl().params.size();
  throw std::invalid_argument("kernel '" + kernel.name() + "' takes " + std::to_string(expected) +
                              (expected == 1 ? " parameter" : " parameters") + " but " +
                              std::to_string(count) +
                              (count == 1 ? " argument was" : " arguments were") + " given");
}

[[noreturn]] void throw_size_mismatch(const Kernel& kernel, std::size_t index, std::size_t size,
                                      const std::string_view* type_names) {
  std::string message = "kernel '" + kernel.name() + "' parameter " + std::to_string(index) +
                        " is " + std::to_string(kernel.impl().params[index].size) +
                        " bytes but argument " + std::to_string(index) + " is " +
                        std::to_string(size) + " bytes";
  if (type_names != nullptr && !type_names[index].empty()) {
    message += " (" + std::string(type_names[index]) + ")";
  }
  throw std::invalid_argument(message);
}

// Raise the kernel's dynamic shared memory limit on the stream's device when a launch
// asks for more than the 48 KiB default; remembered per device so it is done once.
void allow_dynamic_shared(CUstream stream, const Kernel& kernel, std::size_t size) {
  // The caller keeps a context current for a default stream.
  const CUdevice device = stream_device(stream);
  const int ordinal = ordinal_of(device);
  std::atomic<std::size_t>* allowed =
      static_cast<std::size_t>(ordinal) < kMaxTrackedDevices
          ? &kernel.impl().dynamic_shared_allowed[static_cast<std::size_t>(ordinal)]
          : nullptr;
  if (allowed != nullptr && allowed->load(std::memory_order_relaxed) >= size) {
    return;
  }
  driver::cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(size), kernel.handle(), device);
  if (allowed != nullptr) {
    std::size_t previous = allowed->load(std::memory_order_relaxed);
    while (previous < size &&
           !allowed->compare_exchange_weak(previous, size, std::memory_order_relaxed)) {
    }
  }
}

// Check what only the stream's device can tell: clusters need compute capability 9.0.
void check_cluster_support(CUstream stream) {
  const CUdevice device = stream_device(stream);
  const int major =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (major < 9) {
    const int minor =
        driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    throw std::invalid_argument(
        "LaunchConfig::cluster: thread-block clusters need sm_90 or "
        "newer, but the stream's device is sm_" +
        std::to_string(major) + std::to_string(minor));
  }
}

// Drivers before CUDA 13 launch a CUfunction only while its context is current: when a
// launch fails for that reason, make the stream's context current and launch again.
template <class Launch>
CUresult launch_in_context(CUstream stream, ContextKey context, Launch&& launch) {
  CUresult status = launch();
  if ((status == CUDA_ERROR_INVALID_CONTEXT || status == CUDA_ERROR_INVALID_HANDLE) &&
      context.context != nullptr && current_context() != context.context) [[unlikely]] {
    const ContextUse use(context.context, context.id, "Stream", stream, "launch");
    const ScopedContext scope(context.context);
    status = launch();
  }
  return status;
}

// Throw for a failed launch on `stream`: ContextDestroyedError when its context is gone
// (destroyed outside cuwrap), else DriverError naming `function`.
[[noreturn, gnu::noinline, gnu::cold]] void throw_launch_failure(CUresult status,
                                                                 const char* function,
                                                                 CUstream stream,
                                                                 ContextKey context) {
  const ContextUse use(context.context, context.id, "Stream", stream, "launch");
  check(status, function);
  throw std::logic_error("launch: a failing status passed the check");  // not reached
}

inline void check_launch(CUresult status, const char* function, CUstream stream,
                         ContextKey context) {
  if (status != CUDA_SUCCESS) [[unlikely]] {
    throw_launch_failure(status, function, stream, context);
  }
}

// The driver refuses a cooperative grid that cannot be resident only with a status; say
// which limit it is, before launching anything. The occupancy query needs a CUfunction
// of the stream's context, with that context current.
void check_cooperative_launch(CUstream stream, const LaunchConfig& config, const Kernel& kernel,
                              CUfunction function, ContextKey context) {
  const CUdevice device = stream_device(stream);
  if (context.context != nullptr) {  // a cuwrap stream: `function` is its context's
    const ScopedContext scope(context.context);
    check_cooperative_residency(config, function, device);
  } else if (is_default_stream(stream)) {  // the caller made the right context current
    check_cooperative_residency(config, driver::cuKernelGetFunction(kernel.handle()), device);
  } else {  // a stream from elsewhere: its own context
    const ScopedContext scope(driver::cuStreamGetCtx(stream));
    check_cooperative_residency(config, driver::cuKernelGetFunction(kernel.handle()), device);
  }
}

void launch_checked(CUstream stream, const LaunchConfig& config, const Kernel& kernel, void** args,
                    ContextKey context) {
  // One relaxed load unless cuwrap destroyed a context: never launch on a stale stream.
  check_context_recorded(context.id, "Stream", stream, "launch");
  if (config.shmem_size > kDefaultDynamicShared) [[unlikely]] {
    if (config.shmem_size > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::invalid_argument("LaunchConfig::shmem_size " + std::to_string(config.shmem_size) +
                                  " is too large");
    }
    allow_dynamic_shared(stream, kernel, config.shmem_size);
  }
  // With the stream's context known, launch the kernel's cached CUfunction there (the
  // driver launches it faster than a CUkernel). Otherwise a CUkernel may be passed where
  // a CUfunction is expected (CUDA 12+): the driver loads it into the stream's context.
  const CUfunction function = context.context != nullptr
                                  ? kernel_function(kernel.impl(), context.context, context.id)
                                  : reinterpret_cast<CUfunction>(kernel.handle());
  if (!config.cluster && !config.cooperative_launch && !config.programmatic_stream_serialization &&
      !config.priority) [[likely]] {
    check_launch(launch_in_context(stream, context,
                                   [&] {
                                     return driver::raw::cuLaunchKernel(
                                         function, config.grid.x, config.grid.y, config.grid.z,
                                         config.block.x, config.block.y, config.block.z,
                                         static_cast<unsigned>(config.shmem_size), stream, args,
                                         nullptr);
                                   }),
                 "cuLaunchKernel", stream, context);
    return;
  }
  if (config.cluster) {
    check_cluster_support(stream);
  }
  if (config.cooperative_launch) {
    check_cooperative_launch(stream, config, kernel, function, context);
  }
  CUlaunchConfig cu_config;
  CUlaunchAttribute attributes[kMaxLaunchAttributes];
  to_cu_launch_config(config, stream, cu_config, attributes);
  check_launch(
      launch_in_context(
          stream, context,
          [&] { return driver::raw::cuLaunchKernelEx(&cu_config, function, args, nullptr); }),
      "cuLaunchKernelEx", stream, context);
}

}  // namespace

void check_arguments(const Kernel& kernel, std::size_t count, const std::size_t* sizes,
                     const std::string_view* type_names) {
  const std::vector<ParamInfo>& params = kernel.impl().params;
  if (count != params.size()) [[unlikely]] {
    throw_count_mismatch(kernel, count);
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (sizes[i] != params[i].size) [[unlikely]] {
      throw_size_mismatch(kernel, i, sizes[i], type_names);
    }
  }
}

void check_config(const LaunchConfig& config) {
  if (config.grid.volume() == 0) [[unlikely]] {
    throw std::invalid_argument("LaunchConfig::grid " + dims(config.grid) + " has a zero extent");
  }
  if (config.block.volume() == 0) [[unlikely]] {
    throw std::invalid_argument("LaunchConfig::block " + dims(config.block) + " has a zero extent");
  }
  if (config.block.volume() > kMaxThreadsPerBlock || config.block.x > kMaxThreadsPerBlock ||
      config.block.y > kMaxThreadsPerBlock || config.block.z > kMaxBlockZ) [[unlikely]] {
    throw std::invalid_argument("LaunchConfig::block " + dims(config.block) + " has " +
                                std::to_string(config.block.volume()) +
                                " threads; a block holds at most 1024 threads, with z <= 64");
  }
  if (config.cluster) {
    const Dim3& c = *config.cluster;
    if (c.volume() == 0) {
      throw std::invalid_argument("LaunchConfig::cluster " + dims(c) + " has a zero extent");
    }
    if (config.grid.x % c.x != 0 || config.grid.y % c.y != 0 || config.grid.z % c.z != 0) {
      throw std::invalid_argument("LaunchConfig::cluster " + dims(c) +
                                  " does not divide the grid " + dims(config.grid));
    }
  }
}

void to_cu_launch_config(const LaunchConfig& config, CUstream stream, CUlaunchConfig& out,
                         CUlaunchAttribute* attributes) {
  out = CUlaunchConfig{};
  copy_launch_dimensions(config, out);
  out.hStream = stream;
  out.attrs = attributes;
  out.numAttrs = 0;
  if (config.cluster) {
    CUlaunchAttribute& a = attributes[out.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = config.cluster->x;
    a.value.clusterDim.y = config.cluster->y;
    a.value.clusterDim.z = config.cluster->z;
  }
  if (config.cooperative_launch) {
    CUlaunchAttribute& a = attributes[out.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    a.value.cooperative = 1;
  }
  if (config.programmatic_stream_serialization) {
    CUlaunchAttribute& a = attributes[out.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  if (config.priority) {
    CUlaunchAttribute& a = attributes[out.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    a.value.priority = *config.priority;
  }
}

void launch_raw(CUstream stream, const LaunchConfig& config, const Kernel& kernel, void** args,
                std::size_t count, const std::size_t* sizes, const std::string_view* type_names,
                ContextKey context) {
  check_arguments(kernel, count, sizes, type_names);
  check_config(config);
  if (is_default_stream(stream)) [[unlikely]] {
    // A default stream means the current context's: device 0's primary context for
    // this launch when none is current (and none afterwards).
    const ScopedCurrentOrPrimary scope(0);
    launch_checked(stream, config, kernel, args, {});
    return;
  }
  launch_checked(stream, config, kernel, args, context);
}

}  // namespace cuwrap::detail
