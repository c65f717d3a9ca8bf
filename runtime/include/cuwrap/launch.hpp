// LaunchConfig and launch(): run a Kernel on a Stream.
//
// launch() packs its arguments without touching the heap: each argument is converted
// (Buffer → CUdeviceptr, everything else as is) into one struct on the stack and a
// std::array<void*, N> points into it. Before the driver is called, the argument count
// and every argument's size are compared with the kernel's parameter layout, which the
// Kernel cached when it was looked up, so the check costs no driver call. Launches with
// neither a cluster, cooperative_launch, programmatic_stream_serialization nor a
// priority go through plain cuLaunchKernel; the others through cuLaunchKernelEx with
// launch attributes.
//
// Grid counting differs from cuda.core when a cluster is given: cuwrap's `grid` counts
// thread blocks, as CUDA C++ (<<<>>>, cudaLaunchKernelEx) does, while cuda.core's
// LaunchConfig counts clusters. cuda.core's LaunchConfig(grid=G, cluster=C) is cuwrap's
// {.grid = {G.x * C.x, G.y * C.y, G.z * C.z}, .cluster = C}.
//
// The GraphBuilder overload of launch() lives in graph.hpp and calls detail::launch_raw.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/device_span.hpp>
#include <cuwrap/dim3.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace cuwrap {

class Device;

/// How a kernel is launched: grid, block, optional cluster, dynamic shared memory,
/// cooperative launch, programmatic dependent launch, priority.
///
/// `grid` counts thread blocks, also with a cluster (see the note at the top of this
/// header for cuda.core's cluster-counted grid). A cluster (thread-block clusters, sm_90
/// and newer) must divide the grid in every dimension. shmem_size above 48 KiB is
/// allowed: launch() raises the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
/// as needed.
struct LaunchConfig {
  // Every member has a default member initialiser, so that designated initialisers
  // ({.grid = 4, .block = 256}) compile cleanly with -Wmissing-field-initializers.
  Dim3 grid{};                      ///< thread blocks in the grid
  Dim3 block{};                     ///< threads in a block
  std::optional<Dim3> cluster{};    ///< thread blocks in a cluster (sm_90+)
  std::size_t shmem_size = 0;       ///< dynamic shared memory in bytes
  bool cooperative_launch = false;  ///< cuLaunchCooperativeKernel semantics (grid sync)
  /// Programmatic dependent launch (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION):
  /// this kernel may start before the previous kernel in the stream finishes, once every
  /// block of that kernel has executed `griddepcontrol.launch_dependents`
  /// (cudaTriggerProgrammaticLaunchCompletion) or exited. The kernel must wait with
  /// `griddepcontrol.wait` (cudaGridDependencySynchronize) before it reads the previous
  /// kernel's results. Overlap needs sm_90 or newer; older devices run the two in order.
  bool programmatic_stream_serialization = false;
  /// Launch priority of this kernel (CU_LAUNCH_ATTRIBUTE_PRIORITY), overriding the
  /// stream's; unset keeps the stream's priority. Lower numbers are higher priority,
  /// within cuCtxGetStreamPriorityRange (values outside are clamped by the driver).
  std::optional<int> priority{};

  /// Return a one-dimensional configuration for `count` elements, one thread each: the
  /// block size from cuOccupancyMaxPotentialBlockSize for `kernel` with
  /// `dynamic_shared_bytes` of dynamic shared memory per block, on the device of the
  /// current context (device 0 when none is current), and grid = ceil(count / block).
  ///
  /// shmem_size is `dynamic_shared_bytes`. Throws std::invalid_argument naming `count`
  /// when it is 0 or needs more blocks than a grid's x extent holds (2^31 - 1).
  ///
  /// Example:
  /// \code
  ///   cuwrap::launch(stream, cuwrap::LaunchConfig::for_elements(scale, n), scale, x, n);
  /// \endcode
  static LaunchConfig for_elements(const Kernel& kernel, std::size_t count,
                                   std::size_t dynamic_shared_bytes = 0);
  /// Return for_elements(kernel, count, dynamic_shared_bytes) sized for `device` (the
  /// occupancy API in its primary context), whatever context is current: what a thread
  /// that works on several GPUs wants.
  ///
  /// Example:
  /// \code
  ///   auto config = cuwrap::LaunchConfig::for_elements(scale, n, cuwrap::Device(1));
  /// \endcode
  static LaunchConfig for_elements(const Kernel& kernel, std::size_t count, const Device& device,
                                   std::size_t dynamic_shared_bytes = 0);
  /// Return a one-dimensional configuration for `count` elements, one thread each, in
  /// blocks of `block_size` threads: grid = ceil(count / block_size), shmem_size
  /// `dynamic_shared_bytes`. Needs no kernel and calls no driver function; check(device)
  /// compares the block with a device's limits.
  ///
  /// Throws std::invalid_argument naming the value when `count` or `block_size` is 0, or
  /// when the grid needs more blocks than a grid's x extent holds (2^31 - 1).
  ///
  /// Example:
  /// \code
  ///   cuwrap::launch(stream, cuwrap::LaunchConfig::for_elements(n, 256), scale, x, n);
  /// \endcode
  static LaunchConfig for_elements(std::size_t count, unsigned block_size,
                                   std::size_t dynamic_shared_bytes = 0);
  /// Return a one-dimensional configuration for `count` elements, one thread each, in the
  /// largest block `kernel` can launch with on `device`: the kernel's
  /// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK there (its registers limit it), at most the
  /// device's threads per block and block x extent; grid = ceil(count / block).
  ///
  /// Throws std::invalid_argument as for_elements(count, block_size) does.
  static LaunchConfig for_elements_largest_block(const Kernel& kernel, std::size_t count,
                                                 const Device& device,
                                                 std::size_t dynamic_shared_bytes = 0);
  /// Throw std::invalid_argument, naming the value and the limit, when this configuration
  /// cannot launch on `device`: a zero extent; a block over the device's threads per
  /// block or block dimensions; a grid over its grid dimensions; dynamic shared memory
  /// over its opt-in maximum per block; a cluster on a device without cluster launch
  /// (before sm_90), of more than 16 blocks, or not dividing the grid; a cooperative
  /// launch on a device without it, or a cooperative grid that cannot be resident
  /// whatever the kernel (more blocks or threads than all multiprocessors hold).
  ///
  /// Reads device attributes; launches nothing. Limits that depend on the kernel
  /// (its registers, static shared memory, occupancy) are checked by
  /// check(device, kernel).
  void check(const Device& device) const;
  /// As check(device), and also against `kernel` on `device`: its maximum threads per
  /// block (registers limit it) and, for a cooperative launch, whether the grid can be
  /// resident (cuOccupancyMaxActiveBlocksPerMultiprocessor × multiprocessors, in the
  /// device's primary context).
  void check(const Device& device, const Kernel& kernel) const;
};

/// Whether launch() passes a `T` to a kernel by its bytes: true for trivially copyable
/// types.
///
/// A program may specialise it to true for a type of its own that is not trivially
/// copyable but whose bytes are what the kernel expects (a struct with a user-written
/// copy constructor, say); launch() then copies it with that constructor into the
/// parameter buffer and the kernel receives its bytes:
/// \code
///   template <> inline constexpr bool cuwrap::is_kernel_argument_v<Params> = true;
/// \endcode
template <class T>  // named as the standard's traits (std::is_trivially_copyable_v)
inline constexpr bool is_kernel_argument_v =  // NOLINT(readability-identifier-naming)
    std::is_trivially_copyable_v<T>;

/// Launch `kernel` on `stream` with `config` and `args`.
///
/// Arguments: scalars and trivially copyable structs by value (and types for which
/// is_kernel_argument_v is specialised to true), Buffer and BufferRef as their device
/// pointer, DeviceSpan<T> as `T*`, raw CUdeviceptr, pointers. Throws
/// std::invalid_argument when the number of arguments or an argument's size differs from
/// the kernel's parameters, or when the configuration is invalid (zero extents, too many
/// threads per block, a cluster that does not divide the grid, a cluster on a device
/// older than sm_90, a cooperative grid that cannot be resident on the stream's device
/// with this kernel); DriverError naming cuLaunchKernel / cuLaunchKernelEx when the
/// driver refuses the launch. LaunchConfig::check(device) checks every device limit
/// without launching.
///
/// Example:
/// \code
///   cuwrap::launch(stream, {.grid = (n + 255) / 256, .block = 256}, saxpy,
///                  2.0f, x, y, out, n);
/// \endcode
template <class... Args>
void launch(StreamRef stream, const LaunchConfig& config, const Kernel& kernel,
            const Args&... args);

namespace detail {

/// How one launch argument is passed: Buffer and BufferRef as CUdeviceptr, DeviceSpan<T>
/// as T*, the rest by value.
template <class T>
struct LaunchArgument {
  static_assert(is_kernel_argument_v<T>,
                "cuwrap::launch: a kernel argument must be a Buffer, a DeviceSpan or trivially "
                "copyable (or a type for which cuwrap::is_kernel_argument_v is specialised)");
  using type = T;
  static const T& convert(const T& value) noexcept { return value; }
};

template <>
struct LaunchArgument<BufferRef> {
  using type = CUdeviceptr;
  static CUdeviceptr convert(BufferRef buffer) { return buffer.handle(); }  // throws when closed
};

// A Buffer is passed as its view.
template <>
struct LaunchArgument<Buffer> : LaunchArgument<BufferRef> {};

template <class T>
struct LaunchArgument<DeviceSpan<T>> {
  using type = T*;
  static T* convert(DeviceSpan<T> span) noexcept { return span.data(); }
};

/// Return the name of `T` as the compiler spells it ("float", "unsigned long").
template <class T>
constexpr std::string_view type_name() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view pretty = __PRETTY_FUNCTION__;
  constexpr std::string_view key = "T = ";
  constexpr auto begin = pretty.find(key) + key.size();
  constexpr auto end = pretty.find_first_of(";]", begin);
  return pretty.substr(begin, end - begin);
#else
  return "?";
#endif
}

/// Check arguments against `kernel`'s parameters, validate `config` and launch.
///
/// `args[i]` points to argument i, `sizes[i]` is its size in bytes, and `type_names`
/// (may be null) names its type for error messages. `context` (may be empty) is the
/// stream's context: when given, the kernel's CUfunction cached for it is launched.
/// The non-template core of launch(), shared with the GraphBuilder overload.
void launch_raw(CUstream stream, const LaunchConfig& config, const Kernel& kernel, void** args,
                std::size_t count, const std::size_t* sizes,
                const std::string_view* type_names = nullptr, ContextKey context = {});

/// Throw std::invalid_argument unless `count` and `sizes` match `kernel`'s parameters.
void check_arguments(const Kernel& kernel, std::size_t count, const std::size_t* sizes,
                     const std::string_view* type_names);

/// Throw std::invalid_argument when `config` cannot describe any valid launch.
void check_config(const LaunchConfig& config);

/// Throw std::invalid_argument when the cooperative grid of `config` cannot be resident
/// on `device` with `function` (a CUfunction of its context, current for the call).
void check_cooperative_residency(const LaunchConfig& config, CUfunction function, CUdevice device);

/// Copy `config`'s grid, block and dynamic shared memory into a driver struct that names
/// them gridDimX..Z, blockDimX..Z and sharedMemBytes (CUlaunchConfig, the kernel node
/// parameters).
template <class DriverParams>
void copy_launch_dimensions(const LaunchConfig& config, DriverParams& out) {
  out.gridDimX = config.grid.x;
  out.gridDimY = config.grid.y;
  out.gridDimZ = config.grid.z;
  out.blockDimX = config.block.x;
  out.blockDimY = config.block.y;
  out.blockDimZ = config.block.z;
  out.sharedMemBytes = static_cast<unsigned>(config.shmem_size);
}

/// The most launch attributes to_cu_launch_config writes (one per LaunchConfig feature).
inline constexpr std::size_t kMaxLaunchAttributes = 4;

/// Fill `out` (a CUlaunchConfig) and `attributes` (room for kMaxLaunchAttributes) from
/// `config`.
void to_cu_launch_config(const LaunchConfig& config, CUstream stream, CUlaunchConfig& out,
                         CUlaunchAttribute* attributes);

/// One converted launch argument, told apart from the others of its PackedArguments by
/// its position `I`.
template <std::size_t I, class T>
struct PackedArgument {
  T value;
};

/// The converted arguments of one launch, each in its own base (what std::tuple would
/// hold, without <tuple>).
template <class Indices, class... Ts>
struct PackedArguments;

template <std::size_t... Is, class... Ts>
struct PackedArguments<std::index_sequence<Is...>, Ts...> : PackedArgument<Is, Ts>... {
  /// Return the address of each argument, in order.
  std::array<void*, sizeof...(Ts)> pointers() {
    return {static_cast<void*>(&static_cast<PackedArgument<Is, Ts>&>(*this).value)...};
  }
};

/// Pack `args` as launch_raw expects them and call `fn(pointers, count, sizes, names)`.
template <class Fn, class... Args>
void with_packed_arguments(Fn&& fn, const Args&... args) {
  constexpr std::size_t kCount = sizeof...(Args);
  PackedArguments<std::index_sequence_for<Args...>, typename LaunchArgument<Args>::type...>
      converted{{LaunchArgument<Args>::convert(args)}...};
  // A DeviceSpan<T> argument is passed as its T*: the pointer's size is the one meant.
  static constexpr std::array<std::size_t, kCount> kSizes{
      sizeof(typename LaunchArgument<Args>::type)...};  // NOLINT(bugprone-sizeof-expression)
  static constexpr std::array<std::string_view, kCount> kNames{
      type_name<typename LaunchArgument<Args>::type>()...};
  std::array<void*, kCount> pointers = converted.pointers();
  fn(pointers.data(), kCount, kSizes.data(), kNames.data());
}

}  // namespace detail

template <class... Args>
void launch(StreamRef stream, const LaunchConfig& config, const Kernel& kernel,
            const Args&... args) {
  detail::with_packed_arguments(
      [&](void** pointers, std::size_t count, const std::size_t* sizes,
          const std::string_view* names) {
        detail::launch_raw(stream.handle(), config, kernel, pointers, count, sizes, names,
                           detail::stream_context_key(stream));
      },
      args...);
}

}  // namespace cuwrap
