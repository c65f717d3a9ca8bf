// Private to memory/: the CUmemLocation of a device.
#pragma once

#include <cuda.h>

namespace cuwrap::detail {

/// The location of device `ordinal`'s memory.
inline CUmemLocation device_location(int ordinal) {
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = ordinal;
  return location;
}

}  // namespace cuwrap::detail
