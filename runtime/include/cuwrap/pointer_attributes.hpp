// pointer_attributes(): what the driver knows about an address (cuPointerGetAttributes).
//
// One driver call answers every field, for any address (two where the device address must
// be asked in the memory's own context): device memory (from cuMemAlloc
// or a pool), managed memory, page-locked host memory (allocated or registered, mapped
// or not) and plain host memory the driver does not know, for which the call succeeds
// and memory_type is 0 (is_cuda_memory() false).
#pragma once

#include <cuwrap/device.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace cuwrap {

/// What the driver knows about one address (CUpointer_attribute values).
///
/// Fields of memory the driver does not know (plain host memory) are zero, false or
/// empty.
struct PointerAttributes {
  /// Where the memory is: CU_MEMORYTYPE_DEVICE (device and managed memory) or
  /// CU_MEMORYTYPE_HOST (page-locked host memory); 0 for memory CUDA does not know.
  CUmemorytype memory_type{};
  /// The device the memory was allocated on or registered with; empty for memory CUDA
  /// does not know (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).
  std::optional<Device> device{};
  /// The start of the allocation the address lies in (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR).
  CUdeviceptr base = 0;
  /// The size of that allocation in bytes (CU_POINTER_ATTRIBUTE_RANGE_SIZE).
  std::size_t range_size = 0;
  /// Whether it is managed memory (cuMemAllocManaged, __managed__).
  bool is_managed = false;
  /// Whether the address lies in a mapped address range (CU_POINTER_ATTRIBUTE_MAPPED;
  /// the virtual memory API's cuMemMap).
  bool is_mapped = false;
  /// The memory pool it came from; null when not from a pool (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE).
  CUmemoryPool pool = nullptr;
  /// The context the memory belongs to; null for managed and pool memory and for memory
  /// CUDA does not know (CU_POINTER_ATTRIBUTE_CONTEXT).
  CUcontext context = nullptr;
  /// The address kernels of the memory's own context use for it
  /// (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, asked with that context current: `context`, or
  /// the device's primary context for memory that names none); 0 when that device cannot
  /// access it, or when the memory names neither a context nor a device (managed memory
  /// then gives its own address, which every context uses).
  CUdeviceptr device_pointer = 0;
  /// The address the host uses for it (CU_POINTER_ATTRIBUTE_HOST_POINTER, asked with
  /// device_pointer); null when the host cannot access it.
  void* host_pointer = nullptr;
  /// An ID unique to the allocation in this process (CU_POINTER_ATTRIBUTE_BUFFER_ID);
  /// 0 for memory CUDA does not know.
  std::uint64_t buffer_id = 0;
  /// Whether synchronous memory operations on it always synchronise
  /// (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS).
  bool sync_memops = false;

  /// Return whether the driver knows the memory (memory_type is not 0).
  bool is_cuda_memory() const noexcept { return memory_type != CUmemorytype{}; }
};

/// Return what the driver knows about the address `ptr`, in one cuPointerGetAttributes call.
///
/// Any address is accepted: memory the driver does not know gives is_cuda_memory() false.
/// The driver answers the device address for the current context; when that is not the
/// memory's own (none is current, or another device's), a second call asks in the
/// memory's own context, made current for that call only, so that device_pointer never
/// depends on what the caller has current. Initialises the driver. Throws LoadError when
/// there is no driver, DriverError when a call fails.
///
/// Example:
/// \code
///   cuwrap::PointerAttributes a = cuwrap::pointer_attributes(buffer.handle());
///   if (a.memory_type == CU_MEMORYTYPE_DEVICE && !a.is_managed) { ... }
/// \endcode
PointerAttributes pointer_attributes(CUdeviceptr ptr);
/// Return what the driver knows about the host or device address `ptr`; as above.
PointerAttributes pointer_attributes(const void* ptr);

}  // namespace cuwrap
