// The implementation behind Kernel, KernelAttributes and KernelOccupancy (private:
// public headers only forward-declare it, so that <mutex>, <atomic> and <memory> stay
// out of every user's translation unit; see docs/performance.md, "Include cost").
#pragma once

#include "base/ref_counted.hpp"

#include <cuwrap/kernel.hpp>
#include <cuwrap/object_code.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cuwrap {

namespace detail {

/// Devices for which launch() remembers the dynamic shared memory it allowed.
inline constexpr std::size_t kMaxTrackedDevices = 64;

/// State shared by every copy of a Kernel.
struct KernelImpl : RefCounted {
  Ref<const ObjectCodeImpl> library;  ///< keeps the CUlibrary loaded
  CUkernel handle = nullptr;
  std::string name;    ///< as requested
  std::string symbol;  ///< as in the library
  std::vector<ParamInfo> params;
  /// Per device ordinal: the dynamic shared memory size launch() already allowed with
  /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (0: the 48 KiB default).
  mutable std::array<std::atomic<std::size_t>, kMaxTrackedDevices> dynamic_shared_allowed{};

  /// The kernel's CUfunction in one context (cuKernelGetFunction), keyed by the
  /// context's ID (cuCtxGetId): a context created where a destroyed one was gets
  /// another ID, so it never finds the destroyed one's function.
  struct ContextFunction {
    unsigned long long context_id;
    CUfunction function;
  };
  /// The most recently used entry, read by launch() without a lock or a driver call
  /// (a sequence lock: odd while a writer changes it). Written under functions_mutex.
  mutable std::atomic<unsigned> last_sequence{0};
  mutable std::atomic<unsigned long long> last_context_id{0};
  mutable std::atomic<CUfunction> last_function{nullptr};
  mutable std::mutex functions_mutex;
  mutable std::vector<ContextFunction> functions;

  /// Registers the kernel, so that destroying a context through cuwrap evicts its
  /// functions (forget_context_functions).
  KernelImpl();
  KernelImpl(const KernelImpl&) = delete;
  KernelImpl& operator=(const KernelImpl&) = delete;
  ~KernelImpl();
};

/// Query every parameter's offset and size with cuKernelGetParamInfo.
///
/// The count comes from cuKernelGetParamCount (toolkit and driver 13.2); older drivers
/// are asked for one index after another until CUDA_ERROR_INVALID_VALUE. The driver
/// needs a current context for the queries: device 0's primary context is current for
/// them when none is (and none is again afterwards).
std::vector<ParamInfo> query_param_info(CUkernel kernel);

/// Return `kernel`'s CUfunction in the context `context` whose ID is `context_id`,
/// loading it there on first use (with `context` current for the call). The common
/// case, the context of the previous call, reads the cached pair and calls no driver
/// function.
CUfunction kernel_function(const KernelImpl& kernel, CUcontext context,
                           unsigned long long context_id);

/// Drop every kernel's cached CUfunction for the context whose ID is `context_id`;
/// called when cuwrap destroys that context. Never throws.
void forget_context_functions(unsigned long long context_id) noexcept;

/// Return the device of the current context, or device 0 when none is current.
///
/// Initialises the driver. Throws std::invalid_argument when there is no device,
/// LoadError when there is no driver.
CUdevice current_or_default_device();

}  // namespace detail
}  // namespace cuwrap
