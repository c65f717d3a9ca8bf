// pointer_attributes(): every field from one cuPointerGetAttributes call, and the
// context-dependent ones asked again in the memory's own context when another (or none)
// is current.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/pointer_attributes.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace cuwrap {
namespace {

// The context the memory belongs to: the one it was allocated in or registered with
// (CU_POINTER_ATTRIBUTE_CONTEXT) or, for memory that names none (pool and managed memory),
// its device's primary context; nullptr for memory of no device.
CUcontext own_context(const PointerAttributes& a) {
  if (a.context != nullptr) {
    return a.context;
  }
  return a.device ? detail::primary_context(a.device->device_id()) : nullptr;
}

// Ask the driver for the device and host addresses of `ptr` with `context` current: the
// driver answers CU_POINTER_ATTRIBUTE_DEVICE_POINTER for the current context ("kernels
// running in the current context"), so it is asked in the context the answer is for.
void ask_addresses_in(CUcontext context, CUdeviceptr ptr, PointerAttributes& result) {
  const detail::ScopedContext scope(context);
  CUdeviceptr device_pointer = 0;
  void* host_pointer = nullptr;
  std::array<CUpointer_attribute, 2> keys{CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                          CU_POINTER_ATTRIBUTE_HOST_POINTER};
  std::array<void*, 2> values{&device_pointer, &host_pointer};
  driver::cuPointerGetAttributes(static_cast<unsigned>(keys.size()), keys.data(), values.data(),
                                 ptr);
  result.device_pointer = device_pointer;
  result.host_pointer = host_pointer;
}

}  // namespace

PointerAttributes pointer_attributes(CUdeviceptr ptr) {
  detail::ensure_driver_initialized();
  // The driver writes each value at the width the attribute has (cuda.h documents them):
  // unsigned int for the memory type and flags, int for the ordinal, pointers, sizes.
  unsigned memory_type = 0;
  int ordinal = -1;
  CUdeviceptr base = 0;
  std::size_t range_size = 0;
  int is_managed = 0;
  int is_mapped = 0;
  CUmemoryPool pool = nullptr;
  CUcontext context = nullptr;
  CUdeviceptr device_pointer = 0;
  void* host_pointer = nullptr;
  unsigned long long buffer_id = 0;
  int sync_memops = 0;
  std::array<CUpointer_attribute, 12> keys{
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
      CU_POINTER_ATTRIBUTE_IS_MANAGED,       CU_POINTER_ATTRIBUTE_MAPPED,
      CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,   CU_POINTER_ATTRIBUTE_CONTEXT,
      CU_POINTER_ATTRIBUTE_DEVICE_POINTER,   CU_POINTER_ATTRIBUTE_HOST_POINTER,
      CU_POINTER_ATTRIBUTE_BUFFER_ID,        CU_POINTER_ATTRIBUTE_SYNC_MEMOPS};
  std::array<void*, 12> values{&memory_type,    &ordinal,      &base,      &range_size,
                               &is_managed,     &is_mapped,    &pool,      &context,
                               &device_pointer, &host_pointer, &buffer_id, &sync_memops};
  driver::cuPointerGetAttributes(static_cast<unsigned>(keys.size()), keys.data(), values.data(),
                                 ptr);
  PointerAttributes result;
  result.memory_type = static_cast<CUmemorytype>(memory_type);
  if (memory_type != 0 && ordinal >= 0) {
    result.device.emplace(ordinal);
  }
  result.base = base;
  result.range_size = range_size;
  result.is_managed = is_managed != 0;
  result.is_mapped = is_mapped != 0;
  result.pool = pool;
  result.context = context;
  result.device_pointer = device_pointer;
  result.host_pointer = host_pointer;
  result.buffer_id = buffer_id;
  result.sync_memops = sync_memops != 0;
  if (!result.is_cuda_memory()) {
    return result;
  }
  // The addresses were answered for the current context: right only when it is the
  // memory's own; otherwise (none, or another device's) they are asked again in that one.
  if (const CUcontext own = own_context(result); own == nullptr) {
    // No context to answer for: never another context's answer. Managed memory is reached
    // at its own address from every context (cuMemAllocManaged), whatever its device.
    result.device_pointer = result.is_managed ? ptr : 0;
  } else if (own != detail::current_context()) {
    ask_addresses_in(own, ptr, result);
  }
  return result;
}

PointerAttributes pointer_attributes(const void* ptr) {
  return pointer_attributes(reinterpret_cast<CUdeviceptr>(ptr));
}

}  // namespace cuwrap
