// An owning Buffer over an address that nothing frees, for tests that need a Buffer
// (one that can be closed, moved, or listed for copy_batch) without a GPU: a view of
// foreign memory is a BufferRef, and only a memory resource makes a Buffer.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/memory_resource.hpp>

#include <cstddef>
#include <stdexcept>

namespace cuwrap::testing {

/// A memory resource that allocates nothing and frees nothing: the owner of fake buffers.
class NoFreeResource final : public MemoryResource {
 public:
  using MemoryResource::allocate;
  Buffer allocate(std::size_t /*size*/, StreamRef /*stream*/) override {
    throw std::logic_error("NoFreeResource allocates nothing");
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, StreamRef /*stream*/) override {}
};

/// Return the resource that owns every fake buffer (it is never destroyed).
inline NoFreeResource& no_free_resource() {
  static auto* resource = new NoFreeResource();  // NOLINT(cppcoreguidelines-owning-memory)
  return *resource;
}

/// Return an open Buffer of `size` bytes at `ptr` whose close() frees nothing.
inline Buffer fake_buffer(CUdeviceptr ptr, std::size_t size) {
  return Buffer::adopt(ptr, size, &no_free_resource());
}

/// The NoFreeResource of host memory the device cannot reach (pageable host memory).
class HostNoFreeResource final : public MemoryResource {
 public:
  using MemoryResource::allocate;
  Buffer allocate(std::size_t /*size*/, StreamRef /*stream*/) override {
    throw std::logic_error("HostNoFreeResource allocates nothing");
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, StreamRef /*stream*/) override {}
  bool is_device_accessible() const override { return false; }
  bool is_host_accessible() const override { return true; }
};

/// Return an open Buffer over host memory at `ptr` that the device cannot reach and whose
/// close() frees nothing.
inline Buffer fake_host_buffer(CUdeviceptr ptr, std::size_t size) {
  static auto* resource = new HostNoFreeResource();  // NOLINT(cppcoreguidelines-owning-memory)
  return Buffer::adopt(ptr, size, resource);
}

}  // namespace cuwrap::testing
