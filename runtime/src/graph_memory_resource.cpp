// GraphMemoryResource. See cuwrap/graph_memory_resource.hpp.
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/graph_memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>

namespace cuwrap {

GraphMemoryResource::GraphMemoryResource(const Device& device)
    : device_id_(device.device_id()), device_(device.handle()) {}

Buffer GraphMemoryResource::allocate(std::size_t size, const Stream& stream) {
  const CUstreamCaptureStatus status = driver::cuStreamIsCapturing(stream.handle());
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    throw std::logic_error(
        "GraphMemoryResource::allocate on a stream that is not capturing (" +
        std::string(to_string(status)) +
        "): graph memory is allocated while a graph is built; call begin_building() first");
  }
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const CUstream handle = stream.handle();
    detail::check_on_stream(stream, "cuMemAllocAsync",
                            [&] { return driver::raw::cuMemAllocAsync(&ptr, size, handle); });
  }
  return Buffer::from_handle(ptr, size, this, stream);
}

void GraphMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/, const Stream& stream) {
  if (ptr != 0) {
    const CUstream handle = stream.handle();
    detail::check_on_stream(stream, "cuMemFreeAsync",
                            [&] { return driver::raw::cuMemFreeAsync(ptr, handle); });
  }
}

std::uint64_t GraphMemoryResource::attribute(CUgraphMem_attribute id) const {
  cuuint64_t value = 0;
  driver::cuDeviceGetGraphMemAttribute(device_, id, &value);
  return value;
}

std::uint64_t GraphMemoryResource::used_mem_current() const {
  return attribute(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
}

std::uint64_t GraphMemoryResource::used_mem_high() const {
  return attribute(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH);
}

std::uint64_t GraphMemoryResource::reserved_mem_current() const {
  return attribute(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
}

std::uint64_t GraphMemoryResource::reserved_mem_high() const {
  return attribute(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
}

void GraphMemoryResource::reset_high_watermarks() {
  cuuint64_t zero = 0;
  driver::cuDeviceSetGraphMemAttribute(device_, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero);
  driver::cuDeviceSetGraphMemAttribute(device_, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero);
}

void GraphMemoryResource::trim() { driver::cuDeviceGraphMemTrim(device_); }

}  // namespace cuwrap
