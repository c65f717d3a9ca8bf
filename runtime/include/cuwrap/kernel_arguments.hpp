// The typed launches of the generated layer (<cuwrap/driver.hpp> includes this header):
// cuwrap::driver::cuLaunchKernel and cuLaunchKernelEx with the kernel's arguments packed
// for you, their sizes checked against the kernel's parameters where the driver can say.
//
// \code
//   cuwrap::driver::cuLaunchKernel(fn, {blocks}, {256}, 0, stream, x, y, out, n);
// \endcode
//
// The arguments are copied (each must be trivially copyable, as a kernel argument is)
// and their addresses passed as kernelParams. Before the launch, cuFuncGetParamInfo
// (driver and toolkit 12.4+) gives the kernel's parameter count and sizes: a wrong count
// or size throws std::invalid_argument naming the argument. With an older driver, or a
// function the driver has no parameter information for, the launch goes unchecked, as
// the C form does. The check costs one cuFuncGetParamInfo per argument and launch: code
// launching one kernel many times can use the C form with its own arguments array.
#pragma once

#include <cuda.h>
#include <cuwrap/dim3.hpp>
#include <cuwrap/driver_raw.hpp>
#include <cuwrap/error.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace cuwrap {
namespace detail {

/// Throw std::invalid_argument unless the `count` arguments of sizes `sizes` match the
/// parameters of `function` (cuFuncGetParamInfo, driver 12.4+); `caller` names the call
/// in the message. Checks nothing where the driver cannot say.
void check_function_arguments(CUfunction function, const std::size_t* sizes, std::size_t count,
                              const char* caller);

/// Copy `args`, then call `launch(void** params)` with their copies' addresses.
template <class Launch, class... Args>
CUresult launch_with_arguments(Launch&& launch, const Args&... args) {
  static_assert((std::is_trivially_copyable_v<Args> && ...),
                "a kernel argument is trivially copyable");
  std::tuple<Args...> copies(args...);
  return std::apply(
      [&](auto&... copy) {
        void* params[] = {static_cast<void*>(&copy)..., nullptr};
        return launch(params);
      },
      copies);
}

}  // namespace detail

namespace driver {

/// \brief Launches a CUDA function with its arguments packed for you.
///
/// Typed form of cuLaunchKernel: grid and block as Dim3, `args` copied and passed as
/// kernelParams, their number and sizes checked against the kernel's parameters where
/// the driver can say (see <cuwrap/kernel_arguments.hpp>). The C form stays.
template <class... Args>
// NOLINTNEXTLINE(readability-identifier-naming): the C API's names, as the generated layer's
void cuLaunchKernel(CUfunction f, ::cuwrap::Dim3 grid, ::cuwrap::Dim3 block,
                    unsigned int sharedMemBytes,  // NOLINT(readability-identifier-naming)
                    CUstream hStream,             // NOLINT(readability-identifier-naming)
                    const Args&... args) {
  const std::size_t sizes[] = {sizeof(Args)..., 0};
  ::cuwrap::detail::check_function_arguments(f, sizes, sizeof...(Args), "cuLaunchKernel");
  ::cuwrap::detail::check(::cuwrap::detail::launch_with_arguments(
                              [&](void** params) {
                                return raw::cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x,
                                                           block.y, block.z, sharedMemBytes,
                                                           hStream, params, nullptr);
                              },
                              args...),
                          "cuLaunchKernel");
}

/// \brief Launches a CUDA function with launch-time configuration and its arguments packed.
///
/// Typed form of cuLaunchKernelEx: `config` by reference, `args` copied and passed as
/// kernelParams, checked as cuLaunchKernel's typed form checks them. The C form stays.
template <class... Args>
// NOLINTNEXTLINE(readability-identifier-naming): the C API's name
void cuLaunchKernelEx(const CUlaunchConfig& config, CUfunction f, const Args&... args) {
  const std::size_t sizes[] = {sizeof(Args)..., 0};
  ::cuwrap::detail::check_function_arguments(f, sizes, sizeof...(Args), "cuLaunchKernelEx");
  ::cuwrap::detail::check(
      ::cuwrap::detail::launch_with_arguments(
          [&](void** params) { return raw::cuLaunchKernelEx(&config, f, params, nullptr); },
          args...),
      "cuLaunchKernelEx");
}

}  // namespace driver
}  // namespace cuwrap
