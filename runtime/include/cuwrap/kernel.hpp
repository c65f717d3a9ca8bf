// Kernel: one __global__ function of a loaded ObjectCode, with its attributes,
// occupancy queries and parameter layout.
//
// A Kernel is a cheap copyable handle. Copies share one implementation that keeps the
// library (and so the CUkernel) alive after the ObjectCode is gone, and that caches
// the parameter layout (cuKernelGetParamInfo, queried once when the kernel is looked
// up) so that launch() can check argument counts and sizes without a driver call.
#pragma once

#include <cuwrap/detail/ref.hpp>

#include <cuda.h>

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

namespace cuwrap {

class Device;
class StreamRef;
struct LaunchConfig;
class KernelAttributes;
class KernelOccupancy;

namespace detail {
struct KernelImpl;  // runtime/src/launch/kernel_impl.hpp
void ref_acquire(const KernelImpl* impl) noexcept;
void ref_release(const KernelImpl* impl) noexcept;
}  // namespace detail

/// Offset and size in bytes of one kernel parameter (cuda.core's ParamInfo).
struct ParamInfo {
  std::size_t offset = 0;  ///< byte offset of the parameter in the parameter buffer
  std::size_t size = 0;    ///< size of the parameter in bytes
};

/// A launchable __global__ function; get one with ObjectCode::get_kernel().
class Kernel {
 public:
  /// Return the function attributes (registers, shared memory, ...) as accessors.
  KernelAttributes attributes() const;
  /// Return the occupancy calculator for this kernel, answering for the device whose
  /// context is current at each query (device 0 when none is; KernelOccupancy::device()
  /// says which).
  KernelOccupancy occupancy() const;
  /// Return the occupancy calculator for this kernel on `device` (its primary context),
  /// whatever context is current: what code working on several GPUs wants.
  KernelOccupancy occupancy(const Device& device) const;
  /// Return the number of parameters the kernel takes.
  std::size_t num_arguments() const;
  /// Return offset and size of every parameter, in order (cached, no driver call).
  std::span<const ParamInfo> arguments_info() const;
  /// Return the name the kernel was requested by (symbol or name expression).
  const std::string& name() const;
  /// Return the symbol name in the library (the lowered name for templates).
  const std::string& symbol() const;
  /// Return the kernel's CUfunction in `context` (cuKernelGetFunction, cached per
  /// context; the first call for a context loads the kernel there, with `context`
  /// current for that call only).
  ///
  /// The cache is keyed by the context's ID (cuCtxGetId, one driver call here), so a
  /// context created at a destroyed one's address never gets the destroyed one's
  /// function. Throws std::invalid_argument naming the kernel when `context` is null
  /// or no longer valid.
  CUfunction function(CUcontext context) const;
  /// Return the CUkernel handle (context-independent).
  CUkernel handle() const noexcept { return handle_; }

  /// Wrap an existing CUkernel without owning its library (non-owning).
  ///
  /// The caller keeps the library loaded while the Kernel is used. The parameter
  /// layout is queried here, once.
  static Kernel from_handle(CUkernel kernel, std::string name = "");

  /// Return the shared implementation (for launch and graph code in cuwrap).
  const detail::KernelImpl& impl() const noexcept { return *impl_; }

 private:
  friend class ObjectCode;
  explicit Kernel(detail::Ref<detail::KernelImpl> impl);

  detail::Ref<detail::KernelImpl> impl_;
  CUkernel handle_ = nullptr;
};

/// Function attributes of a Kernel (CUfunction_attribute), one accessor per attribute.
///
/// Each accessor exists twice: without argument it asks about the device of the
/// current context (device 0 when no context is current); with a Device it asks
/// about that device. Values come from cuKernelGetAttribute.
class KernelAttributes {
 public:
  /// Return the value of attribute `attribute` for the current (or default) device.
  int get(CUfunction_attribute attribute) const;
  /// Return the value of attribute `attribute` for `device`.
  int get(CUfunction_attribute attribute, const Device& device) const;

// Yes/no attributes (cache_mode_ca, cluster_size_must_be_set, ...) are bool, as cuda.core's.
#define CUWRAP_FUNCTION_ATTRIBUTE_TYPED(accessor, enumerator, type)    \
  /** Return enumerator for the current (or default) device. */        \
  type accessor() const { return static_cast<type>(get(enumerator)); } \
  /** Return enumerator for `device`. */                               \
  type accessor(const Device& device) const { return static_cast<type>(get(enumerator, device)); }
#include <cuwrap/detail/function_attributes.inc>
#undef CUWRAP_FUNCTION_ATTRIBUTE_TYPED

  /// \name Setters (cuKernelSetAttribute, cuKernelSetCacheConfig)
  /// Each exists twice, as the accessors: without a Device for the device of the current
  /// context (device 0 when none is current), with one for that device. A setting holds
  /// for that device in every context.
  /// @{
  /// Set the largest dynamic shared memory a launch may ask for
  /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; launch() raises it by itself when
  /// a LaunchConfig asks for more than 48 KiB). Throws std::invalid_argument when `bytes`
  /// is negative, DriverError when the device has less.
  void set_max_dynamic_shared_size_bytes(int bytes) const;
  /// As above, for `device`.
  void set_max_dynamic_shared_size_bytes(int bytes, const Device& device) const;
  /// Set the preferred share of the unified L1/shared memory used as shared memory, in
  /// percent (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT; a hint). Throws
  /// std::invalid_argument unless `percent` is -1 (the device's default) or 0..100.
  void set_preferred_shared_memory_carveout(int percent) const;
  /// As above, for `device`.
  void set_preferred_shared_memory_carveout(int percent, const Device& device) const;
  /// Set the preferred split of L1 and shared memory (cuKernelSetCacheConfig; a hint).
  void set_cache_config(CUfunc_cache config) const;
  /// As above, for `device`.
  void set_cache_config(CUfunc_cache config, const Device& device) const;
  /// Allow (or forbid) clusters larger than the portable 8 blocks
  /// (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED; sm_90 and newer).
  void set_non_portable_cluster_size_allowed(bool allowed) const;
  /// As above, for `device`.
  void set_non_portable_cluster_size_allowed(bool allowed, const Device& device) const;
  /// @}

 private:
  friend class Kernel;
  explicit KernelAttributes(detail::Ref<detail::KernelImpl> impl);

  detail::Ref<detail::KernelImpl> impl_;
};

/// Result of KernelOccupancy::max_potential_block_size().
struct MaxPotentialBlockSizeOccupancyResult {
  int min_grid_size = 0;   ///< smallest grid that reaches full occupancy
  int max_block_size = 0;  ///< block size that maximises occupancy
};

/// Occupancy queries of a Kernel (cuOccupancy*): the answers are for one device.
///
/// From Kernel::occupancy(device): that device, in its primary context, whatever is
/// current. From Kernel::occupancy(): the device of the context current on the calling
/// thread at each query; when none is current, device 0 (its primary context is made
/// current for the query only). device() says which device the next query answers for.
class KernelOccupancy {
 public:
  /// Return the device the queries answer for: the one given to Kernel::occupancy(device),
  /// else the current context's device, else device 0 (none current).
  Device device() const;

  /// Return how many blocks of `block_size` threads fit on one multiprocessor.
  int max_active_blocks_per_multiprocessor(int block_size,
                                           std::size_t dynamic_shared_memory_size) const;
  /// Return the block size that maximises occupancy and the grid size to reach it.
  ///
  /// `block_size_limit` 0 means no limit.
  MaxPotentialBlockSizeOccupancyResult max_potential_block_size(
      std::size_t dynamic_shared_memory_needed, int block_size_limit = 0) const;
  /// Like above, with dynamic shared memory given per block size by `smem_for_block`
  /// (a CUoccupancyB2DSize or a captureless lambda `[](int block) -> size_t {...}`).
  template <class Fn>
  requires(std::is_convertible_v<Fn, CUoccupancyB2DSize> &&
           !std::is_arithmetic_v<Fn>) MaxPotentialBlockSizeOccupancyResult
      max_potential_block_size(Fn smem_for_block, int block_size_limit = 0)
  const {
    return max_potential_block_size_with(static_cast<CUoccupancyB2DSize>(smem_for_block),
                                         block_size_limit);
  }
  /// Return max_potential_block_size() with dynamic shared memory `smem_for_block(block)`.
  MaxPotentialBlockSizeOccupancyResult max_potential_block_size_with(
      CUoccupancyB2DSize smem_for_block, int block_size_limit = 0) const;
  /// Return the dynamic shared memory available per block with that many blocks per SM.
  std::size_t available_dynamic_shared_memory_per_block(int num_blocks_per_multiprocessor,
                                                        int block_size) const;
  /// Return the largest cluster size `config` could use (grid and block considered).
  int max_potential_cluster_size(const LaunchConfig& config) const;
  /// Return the largest cluster size `config` could use when launched on `stream`, as
  /// cuda.core's max_potential_cluster_size(config, stream) (the query runs in the
  /// stream's context).
  int max_potential_cluster_size(const LaunchConfig& config, StreamRef stream) const;
  /// Return how many clusters of `config` can be co-resident on the device.
  ///
  /// Without config.cluster the driver answers for the kernel's own cluster size (one
  /// block where it has none), as cuda.core's max_active_clusters(config).
  int max_active_clusters(const LaunchConfig& config) const;
  /// Return how many clusters of `config` launched on `stream` can be co-resident, as
  /// cuda.core's max_active_clusters(config, stream) (the query runs in the stream's
  /// context).
  int max_active_clusters(const LaunchConfig& config, StreamRef stream) const;

 private:
  friend class Kernel;
  KernelOccupancy(detail::Ref<detail::KernelImpl> impl, int device_id);
  CUfunction function() const;
  int cluster_query(const LaunchConfig& config, CUstream stream, CUcontext context,
                    bool active) const;
  template <class Query>
  auto in_context(Query query) const;

  detail::Ref<detail::KernelImpl> impl_;
  int device_id_ = -1;  // -1: the current context's device (device 0 when none)
};

}  // namespace cuwrap
