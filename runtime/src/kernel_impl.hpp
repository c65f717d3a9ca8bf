// The implementation behind Kernel, KernelAttributes and KernelOccupancy (private:
// public headers only forward-declare it, so that <mutex>, <atomic> and <memory> stay
// out of every user's translation unit; see docs/performance.md, "Include cost").
#pragma once

#include "ref_counted.hpp"

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

  /// The kernel's CUfunction in one context (cuKernelGetFunction).
  struct ContextFunction {
    CUcontext context;
    CUfunction function;
  };
  /// The most recently used entry of `functions`: launch() compares one pointer, then
  /// passes the CUfunction (the driver launches a CUfunction faster than a CUkernel,
  /// which it has to look up in the stream's context every time).
  mutable std::atomic<const ContextFunction*> last_function{nullptr};
  mutable std::mutex functions_mutex;
  mutable std::vector<std::unique_ptr<const ContextFunction>> functions;
};

/// Query every parameter's offset and size with cuKernelGetParamInfo.
///
/// The driver needs a current context for it: device 0's primary context is made
/// current when none is.
std::vector<ParamInfo> query_param_info(CUkernel kernel);

/// Return the device of the current context, or device 0 when none is current.
///
/// Initialises the driver. Throws std::invalid_argument when there is no device,
/// LoadError when there is no driver.
CUdevice current_or_default_device();

}  // namespace detail
}  // namespace cuwrap
