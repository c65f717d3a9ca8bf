// pointer_attributes(): every field from one cuPointerGetAttributes call.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/pointer_attributes.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace cuwrap {

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
  return result;
}

PointerAttributes pointer_attributes(const void* ptr) {
  return pointer_attributes(reinterpret_cast<CUdeviceptr>(ptr));
}

}  // namespace cuwrap
