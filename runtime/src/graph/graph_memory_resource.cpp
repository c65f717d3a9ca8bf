// GraphMemoryResource. See cuwrap/graph_memory_resource.hpp.
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/graph_memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>

namespace cuwrap {

namespace {

// cuMemFreeAsync: a free node while capturing. Needs nothing from the resource object.
void free_graph_memory(CUdeviceptr ptr, StreamRef stream) {
  if (ptr != 0) {
    const CUstream handle = stream.handle();
    detail::check_on_stream(stream, "cuMemFreeAsync",
                            [&] { return driver::raw::cuMemFreeAsync(ptr, handle); });
  }
}

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
    free_graph_memory(ptr, stream);
  });
}

Buffer GraphMemoryResource::do_allocate(std::size_t size, StreamRef stream) {
  if (closed_) [[unlikely]] {
    throw std::logic_error("GraphMemoryResource::allocate on a closed GraphMemoryResource");
  }
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

void GraphMemoryResource::do_deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  free_graph_memory(ptr, stream);
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
