// Device: a GPU, identified by its ordinal (cuda.core's Device), and its properties.
#pragma once

#include <cuwrap/detail/hash.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuwrap {

class Buffer;
class Context;
class ContextRef;
class DeviceProperties;
class DeviceResources;
class GraphBuilder;
class DeviceMemoryResource;
class MemoryResource;
class PitchedBuffer;
struct ContextOptions;

/// A compute capability, e.g. {9, 0} for sm_90.
struct ComputeCapability {
  int major = 0;  ///< major revision
  int minor = 0;  ///< minor revision
  /// Compare major, then minor.
  friend constexpr auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

/// Free and total device memory, in bytes, as cuMemGetInfo reports them.
struct MemoryInfo {
  std::size_t free = 0;   ///< bytes free on the device
  std::size_t total = 0;  ///< bytes the device has
};

/// Print a compute capability as "major.minor".
std::ostream& operator<<(std::ostream& os, const ComputeCapability& cc);

/// A CUDA device: a cheap copyable value identified by its ordinal.
///
/// Operations that need a context use the device's primary context, retained once per
/// process; set_current() makes it current on the calling thread.
///
/// Example:
/// \code
///   cuwrap::Device dev(0);
///   dev.set_current();
///   cuwrap::Stream s = dev.create_stream();
///   cuwrap::Buffer b = dev.allocate(1 << 20, s);
/// \endcode
class Device {
 public:
  /// Refer to device `ordinal` (0 by default).
  ///
  /// Throws std::invalid_argument when no such device exists ("device 3 does not exist:
  /// 1 CUDA device present"), LoadError when the driver cannot be loaded.
  explicit Device(int ordinal = 0);

  /// Return the number of CUDA devices (0 when the driver reports none).
  ///
  /// Throws LoadError, with what to do, when the driver library cannot be loaded.
  static int count();
  /// Return every CUDA device, in ordinal order.
  static std::vector<Device> all();
  /// Return the device of the context current on the calling thread.
  ///
  /// Throws std::logic_error when no context is current (a thread that never called
  /// set_current() or made a context current): cuwrap does not pick device 0 for it, since
  /// a silent device 0 is the wrong device in a thread that works on another. current_if()
  /// is the form that does not throw.
  static Device current();
  /// Return the device of the context current on the calling thread, or std::nullopt
  /// when none is current: current() without the exception.
  static std::optional<Device> current_if();
  /// Return the device with PCI bus id `pci_bus_id` ("0000:3b:00.0", as pci_bus_id()
  /// returns; the driver's formats "bus:device.function" and "domain:bus:device").
  ///
  /// Throws std::invalid_argument naming the id when it is empty or names no device.
  static Device from_pci_bus_id(std::string_view pci_bus_id);

  /// Make the primary context of this device current on the calling thread.
  void set_current() const;
  /// Block until all work on this device (in its primary context) is done.
  void sync() const;
  /// Create a stream on this device.
  Stream create_stream(const StreamOptions& options = {}) const;
  /// Return the legacy default stream (CU_STREAM_LEGACY) as a StreamRef.
  ///
  /// The default stream belongs to whichever context is current where it is used;
  /// when no context is current on this thread, this device's primary context is made
  /// current (and stays current). That is the one case where it changes the current
  /// context, and it must: CU_STREAM_LEGACY is no stream of its own but "the current
  /// context's", so work queued on the returned StreamRef later (also by another library)
  /// would fail with no context current. When a context is current, it is left as it is.
  /// Work on it synchronises with the context's other blocking streams.
  StreamRef default_stream() const;
  /// Create an event on this device.
  Event create_event(const EventOptions& options = {}) const;
  /// Return this device's process-wide DeviceMemoryResource (its default memory pool),
  /// typed, so that its pool settings (set_release_threshold, trim_to, attributes) need
  /// no cast.
  ///
  /// Created on first use (thread-safe) and alive until the process exits. Its first use
  /// raises the default pool's release threshold from 0 to UINT64_MAX, as cuda.core does
  /// (a threshold of 0 returns all free memory to the system at every synchronisation,
  /// which makes the next allocation slow). The pool is the process's: code of the same
  /// process that allocates from the device's default pool through the runtime API
  /// (cudaMallocAsync) sees the new threshold too. Set it back with
  /// `memory_resource().set_release_threshold(0)`, or give memory back with `trim_to`.
  DeviceMemoryResource& memory_resource() const;
  /// Allocate `size` bytes from memory_resource(), ordered on `stream`.
  ///
  /// On a stream that is capturing a graph (a GraphBuilder) the memory is the graph's
  /// (cuMemAllocAsync, an allocation node), as a GraphMemoryResource gives; the
  /// DeviceMemoryResource itself refuses a capturing stream, as cuda.core's.
  Buffer allocate(std::size_t size, StreamRef stream) const;
  /// Allocate `height` rows of `width_bytes` bytes, each row aligned by the driver
  /// (cuMemAllocPitch): PitchedBuffer::allocate(device_id(), ...). Defined with
  /// PitchedBuffer (include <cuwrap/pitched_buffer.hpp> to use the result).
  PitchedBuffer allocate_pitched(std::size_t width_bytes, std::size_t height,
                                 unsigned element_size_bytes = 16) const;
  /// Allocate `size` bytes from memory_resource(), ordered on default_stream() (the
  /// legacy default stream), as cuda.core's allocate without a stream.
  Buffer allocate(std::size_t size) const;
  /// Return a graph builder capturing on a new stream of this device (defined with Graph).
  GraphBuilder create_graph_builder() const;
  /// Return whether this device can access memory of `peer` directly (true for itself).
  bool can_access_peer(const Device& peer) const;
  /// Let this device access memory of `peer`: `peer`'s cuMemAlloc memory
  /// (cuCtxEnablePeerAccess) and the memory of `peer.memory_resource()`, its default
  /// pool (read-write, cuMemPoolSetAccess), so `peer.allocate()` buffers work here too.
  ///
  /// Pools the user creates grant access themselves
  /// (DeviceMemoryResource::set_peer_accessible_by); docs/multi-gpu.md. Idempotent:
  /// access already enabled, and access to itself, are not errors. Access is one-way;
  /// call peer.enable_peer_access(*this) for the other direction. Throws
  /// std::invalid_argument naming both devices when the topology does not allow it
  /// (can_access_peer() is false). Defined in peer.cpp.
  void enable_peer_access(const Device& peer) const;
  /// Withdraw this device's access to memory of `peer`: its cuMemAlloc memory
  /// (cuCtxDisablePeerAccess) and its default pool's (cuMemPoolSetAccess, no access).
  ///
  /// Idempotent: access not enabled, and access to itself, are not errors.
  void disable_peer_access(const Device& peer) const;
  /// Return whether this device's primary context may access memory of `peer` now.
  ///
  /// True for itself; otherwise whether access was enabled (through enable_peer_access,
  /// or found already enabled by it) and not disabled since, as cuwrap saw it. Access
  /// enabled directly through cuCtxEnablePeerAccess is seen once enable_peer_access
  /// finds it enabled.
  bool peer_access_enabled(const Device& peer) const;
  /// Return the SM (and future) resources of this device, for green contexts.
  ///
  /// Needs CUDA 12.4 (toolkit and driver); throws UnsupportedError otherwise. Defined in
  /// runtime/src/execution/context.cpp.
  DeviceResources resources() const;
  /// Create a green context over `options.resources` (groups of SMResource::split).
  ///
  /// Needs CUDA 12.4 (toolkit and driver). Throws std::invalid_argument for no
  /// resources, a resource of another device or one from a dry-run split; DriverError
  /// from cuDevResourceGenerateDesc / cuGreenCtxCreate. Defined in
  /// runtime/src/execution/context.cpp.
  ///
  /// With empty resources, a regular context (cuCtxCreate with options.flags), which is
  /// not made current.
  Context create_context(const ContextOptions& options) const;
  /// Create a regular context on this device (cuCtxCreate, no flags), not made current:
  /// create_context(ContextOptions{}).
  Context create_context() const;

  /// Return the device ordinal.
  int device_id() const noexcept { return ordinal_; }
  /// Return the device name, e.g. "NVIDIA H100 80GB HBM3".
  std::string name() const;
  /// Return the compute capability, e.g. {9, 0}.
  ComputeCapability compute_capability() const;
  /// Return the architecture number as NVRTC's sm_XX wants it: "90" for sm_90.
  std::string arch() const;
  /// Return the PCI bus id, e.g. "0000:3B:00.0".
  std::string pci_bus_id() const;
  /// Return the UUID as cuda.core's Device.uuid: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
  ///
  /// Lowercase hex digits, without the "GPU-" prefix that nvidia-smi writes (cuwrap
  /// before this release wrote it; checkpoint restore accepts both forms).
  std::string uuid() const;
  /// Return the value of one device attribute.
  int attribute(CUdevice_attribute attribute) const;
  /// Return every device attribute as named accessors.
  DeviceProperties properties() const;
  /// Return the primary context of this device (retained once per process).
  CUcontext context() const;
  /// Return the primary context of this device as a ContextRef (its limits, cache
  /// config, make_current...). Defined in device_settings.cpp.
  ContextRef primary_context() const;
  /// Return the free and total memory of this device (cuMemGetInfo in the current
  /// context when it is one of this device's, else in its primary context; the caller's
  /// current context is left as it was).
  MemoryInfo memory_info() const;
  /// Return a P2P attribute between this device (the source) and `peer`
  /// (cuDeviceGetP2PAttribute).
  ///
  /// Throws std::invalid_argument when `peer` is this device (the driver has no answer).
  int p2p_attribute(CUdevice_P2PAttribute attribute, const Device& peer) const;
  /// Set the flags of this device's primary context (cuDevicePrimaryCtxSetFlags:
  /// scheduling, CU_CTX_LMEM_RESIZE_TO_MAX...). The driver applies them to an active
  /// primary context from CUDA 11.7 on.
  ///
  /// Throws std::invalid_argument for bits that are no CU_CTX_* flag.
  void set_primary_context_flags(unsigned flags) const;
  /// Return the flags of this device's primary context (cuDevicePrimaryCtxGetState).
  unsigned primary_context_flags() const;
  /// Destroy every allocation and all state of this device's primary context
  /// (cuDevicePrimaryCtxReset), after waiting for its work.
  ///
  /// The primary context stays usable (the driver re-creates its state on next use),
  /// but every cuwrap object made in it before (streams, events, buffers, kernels
  /// loaded in it) throws ContextDestroyedError from then on. Other libraries sharing
  /// the primary context lose their objects too: call it only when no one uses them.
  void reset() const;
  /// Return the driver's device handle.
  CUdevice handle() const noexcept { return device_; }

  /// Compare by ordinal.
  friend bool operator==(const Device& a, const Device& b) noexcept {
    return a.ordinal_ == b.ordinal_;
  }

 private:
  int ordinal_ = 0;
  CUdevice device_ = 0;
};

/// Print a device as "<Device 0 (NVIDIA H100 80GB HBM3)>", as cuda.core does.
std::ostream& operator<<(std::ostream& os, const Device& device);
/// Write a list of devices, e.g. DeviceMemoryResource::peer_accessible_by():
/// "[<Device 1 (...)>, <Device 2 (...)>]", "[]" when empty.
std::ostream& operator<<(std::ostream& os, const std::vector<Device>& devices);

/// Every CUdevice_attribute of a device as a named accessor, read from the driver.
///
/// The accessors are generated from the CUdevice_attribute enum: each
/// CU_DEVICE_ATTRIBUTE_X becomes x() (multiprocessor_count(), max_threads_per_block(),
/// warp_size(), memory_pools_supported(), ...). Each returns the attribute's value as
/// cuDeviceGetAttribute reports it (flags are 0 or 1); a value the driver does not
/// know (an attribute newer than the driver) throws DriverError.
class DeviceProperties {
 public:
  /// Refer to the properties of `device`.
  explicit DeviceProperties(const Device& device) : device_(device.handle()) {}

#define CUWRAP_DEVICE_ATTRIBUTE_TYPED(accessor, enumerator, type) \
  type accessor() const { return static_cast<type>(get(enumerator)); }
#include <cuwrap/detail/device_attributes.inc>
#undef CUWRAP_DEVICE_ATTRIBUTE_TYPED

  /// Return the value of `attribute` (the same as Device::attribute).
  int get(CUdevice_attribute attribute) const;

 private:
  CUdevice device_;
};

}  // namespace cuwrap

/// Hash a Device by its ordinal, so that devices key unordered containers.
template <>
struct std::hash<cuwrap::Device> {
  /// Return the hash of the device's ordinal.
  std::size_t operator()(const cuwrap::Device& device) const noexcept {
    return cuwrap::detail::hash_bits(static_cast<std::uint64_t>(device.device_id()));
  }
};
