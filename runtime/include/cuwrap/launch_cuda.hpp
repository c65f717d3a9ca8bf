// launch() for kernels compiled by nvcc: `cuwrap::launch(stream, config, my_kernel, args...)`
// in a .cu file, with every argument converted to the kernel's parameter type at compile
// time, as CCCL's cuda::launch does.
//
// Only for translation units compiled by nvcc (or another CUDA compiler that defines
// __CUDACC__): it includes the CUDA runtime and launches through cudaLaunchKernel (plain
// configurations, exactly what <<<>>> calls) or cudaLaunchKernelExC (cluster,
// cooperative, programmatic stream serialization, priority), on cuwrap's stream (a
// CUstream is a cudaStream_t). The runtime finds the kernel in the module nvcc embedded,
// in the stream's (primary) context. Link the CUDA runtime (CMake's CUDA language does).
//
// Arguments: each must convert implicitly to its parameter's type, or the call does
// not compile (a static_assert names the position); a DeviceSpan<T> passes its T*; a
// Buffer passes its device pointer
// to a pointer (or CUdeviceptr) parameter. The count must match as well.
#pragma once

#if !defined(__CUDACC__)
#error \
    "<cuwrap/launch_cuda.hpp> is for .cu files compiled by nvcc; use <cuwrap/launch.hpp> for Kernel objects"
#endif

#include <cuwrap/buffer.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/stream.hpp>

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace cuwrap {

/// Thrown for a non-success cudaError_t from the CUDA runtime (nvcc kernel launches).
class CudaRuntimeError : public Error {
 public:
  /// Build the error for `code` returned by the runtime function `function`.
  CudaRuntimeError(cudaError_t code, const char* function)
      : Error(std::string(function) + " failed: " + cudaGetErrorName(code) + " (" +
              cudaGetErrorString(code) + ")"),
        code_(code),
        function_(function) {}
  /// Return the cudaError_t that was returned.
  cudaError_t code() const noexcept { return code_; }
  /// Return the enumerator name, e.g. "cudaErrorInvalidConfiguration".
  std::string name() const { return cudaGetErrorName(code_); }
  /// Return the runtime function that failed, e.g. "cudaLaunchKernel".
  const std::string& function() const noexcept { return function_; }

 private:
  cudaError_t code_;
  std::string function_;
};

namespace detail {

/// Throw CudaRuntimeError unless `code` is cudaSuccess.
inline void check_runtime(cudaError_t code, const char* function) {
  if (code != cudaSuccess) [[unlikely]] {
    throw CudaRuntimeError(code, function);
  }
}

/// Whether T is a DeviceSpan (passed as its element pointer).
template <class T>
inline constexpr bool kIsDeviceSpan = false;
template <class T>
inline constexpr bool kIsDeviceSpan<DeviceSpan<T>> = true;

/// Whether a value of type Arg may be passed for a kernel parameter of type Param.
template <class Param, class Arg>
inline constexpr bool kArgumentConverts = [] {
  using A = std::remove_cvref_t<Arg>;
  using P = std::remove_cvref_t<Param>;
  if constexpr (std::is_same_v<A, Buffer>) {
    return std::is_pointer_v<P> || std::is_same_v<P, CUdeviceptr>;
  } else if constexpr (kIsDeviceSpan<A>) {
    return std::is_convertible_v<typename A::pointer, P>;  // DeviceSpan<float> → const float*
  } else {
    return std::is_convertible_v<Arg, P>;
  }
}();

/// Convert one launch argument to its kernel parameter's type (checked at compile time).
template <std::size_t Index, class Param, class Arg>
std::remove_cvref_t<Param> to_kernel_parameter(Arg&& arg) {
  using P = std::remove_cvref_t<Param>;
  static_assert(kArgumentConverts<Param, Arg>,
                "cuwrap::launch: an argument does not convert to its kernel parameter's type "
                "(see 'Index' and the types in the instantiation above)");
  if constexpr (std::is_same_v<std::remove_cvref_t<Arg>, Buffer>) {
    if constexpr (std::is_pointer_v<P>) {
      return reinterpret_cast<P>(arg.handle());  // NOLINT(performance-no-int-to-ptr)
    } else {
      return arg.handle();
    }
  } else if constexpr (kIsDeviceSpan<std::remove_cvref_t<Arg>>) {
    return arg.data();
  } else {
    return static_cast<P>(std::forward<Arg>(arg));
  }
}

/// Convert every argument, pairing argument i with parameter i.
template <class... Params, class... Args, std::size_t... Is>
std::tuple<std::remove_cvref_t<Params>...> to_kernel_parameters(std::index_sequence<Is...>,
                                                                Args&&... args) {
  return {to_kernel_parameter<Is, Params>(std::forward<Args>(args))...};
}

/// Launch the nvcc kernel `kernel` (its host stub's address) with packed `args`.
inline void launch_cuda_kernel(CUstream stream, const LaunchConfig& config, const void* kernel,
                               void** args) {
  check_config(config);
  if (config.shmem_size > std::size_t{48} * 1024) [[unlikely]] {
    check_runtime(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(config.shmem_size)),
                  "cudaFuncSetAttribute");
  }
  const dim3 grid(config.grid.x, config.grid.y, config.grid.z);
  const dim3 block(config.block.x, config.block.y, config.block.z);
  if (!config.cluster && !config.cooperative_launch && !config.programmatic_stream_serialization &&
      !config.priority) [[likely]] {
    check_runtime(cudaLaunchKernel(kernel, grid, block, args, config.shmem_size, stream),
                  "cudaLaunchKernel");
    return;
  }
  std::array<cudaLaunchAttribute, kMaxLaunchAttributes> attributes{};
  cudaLaunchConfig_t cuda_config{};
  cuda_config.gridDim = grid;
  cuda_config.blockDim = block;
  cuda_config.dynamicSmemBytes = config.shmem_size;
  cuda_config.stream = stream;
  cuda_config.attrs = attributes.data();
  unsigned count = 0;
  if (config.cluster) {
    cudaLaunchAttribute& a = attributes[count++];
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = config.cluster->x;
    a.val.clusterDim.y = config.cluster->y;
    a.val.clusterDim.z = config.cluster->z;
  }
  if (config.cooperative_launch) {
    cudaLaunchAttribute& a = attributes[count++];
    a.id = cudaLaunchAttributeCooperative;
    a.val.cooperative = 1;
  }
  if (config.programmatic_stream_serialization) {
    cudaLaunchAttribute& a = attributes[count++];
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
  }
  if (config.priority) {
    cudaLaunchAttribute& a = attributes[count++];
    a.id = cudaLaunchAttributePriority;
    a.val.priority = *config.priority;
  }
  cuda_config.numAttrs = count;
  check_runtime(cudaLaunchKernelExC(&cuda_config, kernel, args), "cudaLaunchKernelExC");
}

}  // namespace detail

/// Launch the nvcc-compiled `__global__` function `kernel` on `stream` with `config`.
///
/// Each argument is converted to the kernel's parameter type; a wrong count or an
/// argument that does not convert fails to compile. Throws std::invalid_argument for an
/// invalid configuration (as launch() for Kernel objects) and CudaRuntimeError when the
/// runtime refuses the launch.
///
/// Example (in a .cu file):
/// \code
///   __global__ void saxpy(float a, const float* x, float* y, int n);
///   cuwrap::launch(stream, {.grid = (n + 255) / 256, .block = 256}, saxpy, 2.0f, x, y, n);
/// \endcode
template <class... Params, class... Args>
void launch(StreamRef stream, const LaunchConfig& config, void (*kernel)(Params...),
            Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "cuwrap::launch: the number of arguments differs from the kernel's parameters");
  auto converted = detail::to_kernel_parameters<Params...>(std::index_sequence_for<Args...>{},
                                                           std::forward<Args>(args)...);
  std::array<void*, sizeof...(Params) + 1> pointers = std::apply(
      [](auto&... values) {
        return std::array<void*, sizeof...(Params) + 1>{static_cast<void*>(&values)..., nullptr};
      },
      converted);
  detail::launch_cuda_kernel(stream.handle(), config, reinterpret_cast<const void*>(kernel),
                             pointers.data());
}

}  // namespace cuwrap
