// GraphMemoryResource: memory allocated inside a CUDA graph while it is captured, as
// cuda.core's GraphMemoryResource.
//
//   cuwrap::GraphMemoryResource graph_memory(device);
//   builder.begin_building();
//   cuwrap::Buffer scratch = graph_memory.allocate(bytes, builder);   // an allocation node
//   cuwrap::launch(builder, config, kernel, scratch, n);
//   scratch.close(builder);                                           // a free node
//   cuwrap::Graph graph = builder.end_building().complete();
//
// Graph allocations come from the device's graph memory pool, a per-device singleton
// the driver keeps; this class is the interface to it (allocation, free, its usage
// counters and trim()).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/memory_resource.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cuwrap {

class Device;
class StreamRef;

/// The usage counters of a device's graph memory pool, read live (cuda.core's
/// GraphMemoryResourceAttributes), as MemoryPoolAttributes are a pool's.
class GraphMemoryAttributes {
 public:
  /// View the graph memory pool of `device`.
  explicit GraphMemoryAttributes(CUdevice device) noexcept : device_(device) {}

  /// Return the bytes of graph memory in use now (CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT).
  std::uint64_t used_mem_current() const;
  /// Return the high watermark of used_mem_current() (CU_GRAPH_MEM_ATTR_USED_MEM_HIGH).
  std::uint64_t used_mem_high() const;
  /// Return the bytes the pool holds from the OS (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT).
  std::uint64_t reserved_mem_current() const;
  /// Return the high watermark of reserved_mem_current() (CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH).
  std::uint64_t reserved_mem_high() const;
  /// Reset used_mem_high() to zero (the only value the driver accepts).
  void reset_used_mem_high() const;
  /// Reset reserved_mem_high() to zero.
  void reset_reserved_mem_high() const;

 private:
  CUdevice device_;
};

/// Allocate memory inside graphs being captured, from the device's graph memory pool.
///
/// allocate() must be given a capturing stream (a GraphBuilder that is building, or its
/// stream): the allocation becomes a node of the graph, and the memory exists while the
/// graph runs, from that node until it is freed. deallocate() (and Buffer::close on a
/// capturing stream) adds the matching free node; closing the buffer on a stream that is
/// not capturing frees the memory of the last launch, ordered on that stream, as
/// cuMemFreeAsync does. A buffer that outlives the resource object still frees this way.
class GraphMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): the legacy default stream never captures
  /// Use `device`'s graph memory pool.
  explicit GraphMemoryResource(const Device& device);
  GraphMemoryResource(const GraphMemoryResource&) = delete;
  GraphMemoryResource& operator=(const GraphMemoryResource&) = delete;
  ~GraphMemoryResource() override = default;

  /// Allocate `size` bytes in the graph `stream` is capturing (cuMemAllocAsync).
  ///
  /// Throws std::logic_error when `stream` is not capturing (cuda.core raises too) or
  /// the resource is closed.
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Free `ptr`, ordered on `stream` (cuMemFreeAsync): a free node while capturing.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

  /// Return the device whose graph memory pool this is.
  int device_id() const override { return device_id_; }

  /// Return the pool's usage counters (the same values as the accessors below).
  GraphMemoryAttributes attributes() const { return GraphMemoryAttributes(device_); }

  /// Return the bytes of graph memory in use now (CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT).
  std::uint64_t used_mem_current() const;
  /// Return the high watermark of used_mem_current() (CU_GRAPH_MEM_ATTR_USED_MEM_HIGH).
  std::uint64_t used_mem_high() const;
  /// Return the bytes the pool holds from the OS (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT).
  std::uint64_t reserved_mem_current() const;
  /// Return the high watermark of reserved_mem_current() (CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH).
  std::uint64_t reserved_mem_high() const;
  /// Reset used_mem_high() and reserved_mem_high() to zero (the only value they accept).
  void reset_high_watermarks();
  /// Give memory the pool holds but no graph uses back to the OS (cuDeviceGraphMemTrim).
  void trim();

 private:
  int device_id_ = 0;
  CUdevice device_ = 0;
};

}  // namespace cuwrap
