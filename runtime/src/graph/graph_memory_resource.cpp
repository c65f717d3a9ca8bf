// GraphMemoryResource. See cuwrap/graph_memory_resource.hpp.
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/graph_memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>

#include "memory/stream_ordered.hpp"

namespace cuwrap {

namespace {

std::uint64_t graph_attribute(CUdevice device, CUgraphMem_attribute id) {
  cuuint64_t value = 0;
  driver::cuDeviceGetGraphMemAttribute(device, id, &value);
  return value;
}

void reset_graph_attribute(CUdevice device, CUgraphMem_attribute id) {
  cuuint64_t zero = 0;
  driver::cuDeviceSetGraphMemAttribute(device, id, &zero);
}

}  // namespace

std::uint64_t GraphMemoryAttributes::used_mem_current() const {
  return graph_attribute(device_, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
}
std::uint64_t GraphMemoryAttributes::used_mem_high() const {
  return graph_attribute(device_, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH);
}
std::uint64_t GraphMemoryAttributes::reserved_mem_current() const {
  return graph_attribute(device_, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
}
std::uint64_t GraphMemoryAttributes::reserved_mem_high() const {
  return graph_attribute(device_, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
}
void GraphMemoryAttributes::reset_used_mem_high() const {
  reset_graph_attribute(device_, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH);
}
void GraphMemoryAttributes::reset_reserved_mem_high() const {
  reset_graph_attribute(device_, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
}

GraphMemoryResource::GraphMemoryResource(const Device& device)
    : device_id_(device.device_id()), device_(device.handle()) {
  set_detached_deallocate([](CUdeviceptr ptr, std::size_t /*size*/, const Stream& stream) {
    detail::free_stream_ordered(ptr, stream);
  });
}

Buffer GraphMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("GraphMemoryResource", "allocate");
  const CUstreamCaptureStatus status = driver::cuStreamIsCapturing(stream.handle());
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    throw std::logic_error(
        "GraphMemoryResource::allocate on a stream that is not capturing (" +
        std::string(to_string(status)) +
        "): graph memory is allocated while a graph is built; call begin_building() first");
  }
  return detail::allocate_stream_ordered(size, stream, this);
}

void GraphMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  detail::free_stream_ordered(ptr, stream);
}

std::uint64_t GraphMemoryResource::used_mem_current() const {
  return attributes().used_mem_current();
}

std::uint64_t GraphMemoryResource::used_mem_high() const { return attributes().used_mem_high(); }

std::uint64_t GraphMemoryResource::reserved_mem_current() const {
  return attributes().reserved_mem_current();
}

std::uint64_t GraphMemoryResource::reserved_mem_high() const {
  return attributes().reserved_mem_high();
}

void GraphMemoryResource::reset_high_watermarks() {
  attributes().reset_used_mem_high();
  attributes().reset_reserved_mem_high();
}

void GraphMemoryResource::trim() { driver::cuDeviceGraphMemTrim(device_); }

}  // namespace cuwrap
