// Peer access between devices and copies between their buffers. See cuwrap/peer.hpp
// and the peer-access members of cuwrap/device.hpp.
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/peer.hpp>

#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

// The (from, to) pairs whose access cuwrap enabled or found enabled. The driver has no
// query for a context's peer access short of trying to enable it, so this is the record.
class PeerAccessRecord {
 public:
  void set(int from, int to, bool enabled) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (enabled) {
      pairs_.emplace(from, to);
    } else {
      pairs_.erase({from, to});
    }
  }

  bool get(int from, int to) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return pairs_.contains({from, to});
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::pair<int, int>> pairs_;
};

PeerAccessRecord& peer_access_record() {
  static PeerAccessRecord record;
  return record;
}

std::string device_name(const Device& device) {
  return "device " + std::to_string(device.device_id());
}

// Return the device of `buffer` for a peer copy; `role` is "destination" or "source".
Device device_of(const Buffer& buffer, const char* role) {
  const int ordinal = buffer.device_id();
  if (ordinal < 0) {
    throw std::invalid_argument(std::string("copy_peer: the ") + role +
                                " buffer is host memory tied to no device; use "
                                "Buffer::copy_to / copy_from for host memory");
  }
  return Device(ordinal);
}

// Grant (`enabled`) or withdraw `accessor`'s read-write access to the memory pool of
// `owner.memory_resource()` (its default pool) with one cuMemPoolSetAccess entry: pool
// memory does not follow the contexts' peer access. Nothing to do where the owner has no
// memory pools (its memory_resource() cannot allocate there either).
void set_default_pool_access(const Device& owner, const Device& accessor, bool enabled) {
  if (owner.attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) == 0) {
    return;
  }
  DeviceMemoryResource* resource = &owner.memory_resource();
  if (!resource->is_open()) {
    return;
  }
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = accessor.device_id();
  desc.flags = enabled ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  const detail::ScopedContext scope(owner.device_id());
  driver::cuMemPoolSetAccess(resource->handle(), &desc, 1);
}

// Return the device whose memory `ref` is; `role` is "destination" or "source".
Device device_of(BufferRef ref, const char* role) {
  unsigned int memory_type = 0;
  detail::check(driver::raw::cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                   ref.handle()),
                "cuPointerGetAttribute");
  if (memory_type == CU_MEMORYTYPE_HOST) {
    throw std::invalid_argument(std::string("copy_peer: the ") + role +
                                " is host memory, not memory of a device; use "
                                "Buffer::copy_to / copy_from or copy() for host memory");
  }
  int ordinal = -1;
  detail::check(driver::raw::cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                   ref.handle()),
                "cuPointerGetAttribute");
  return Device(ordinal);
}

void check_sizes(std::size_t dst, std::size_t src) {
  if (dst != src) {
    throw std::invalid_argument("copy_peer: the destination has " + std::to_string(dst) +
                                " bytes but the source has " + std::to_string(src) +
                                "; sizes must match");
  }
}

}  // namespace

void Device::enable_peer_access(const Device& peer) const {
  if (peer == *this) {
    return;  // a device always accesses its own memory
  }
  if (!can_access_peer(peer)) {
    throw std::invalid_argument(device_name(*this) + " cannot access memory of " +
                                device_name(peer) +
                                ": the topology does not allow peer access between them "
                                "(cuDeviceCanAccessPeer is 0)");
  }
  const CUcontext peer_context = peer.context();
  const detail::ScopedContext scope(context());
  const CUresult status = driver::raw::cuCtxEnablePeerAccess(peer_context, 0);
  if (status != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    detail::check(status, "cuCtxEnablePeerAccess");
  }
  peer_access_record().set(ordinal_, peer.ordinal_, true);
  set_default_pool_access(peer, *this, true);
}

void Device::disable_peer_access(const Device& peer) const {
  if (peer == *this) {
    return;
  }
  if (can_access_peer(peer)) {  // else no pool could have granted access
    set_default_pool_access(peer, *this, false);
  }
  const CUcontext peer_context = peer.context();
  const detail::ScopedContext scope(context());
  const CUresult status = driver::raw::cuCtxDisablePeerAccess(peer_context);
  if (status != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) {
    detail::check(status, "cuCtxDisablePeerAccess");
  }
  peer_access_record().set(ordinal_, peer.ordinal_, false);
}

bool Device::peer_access_enabled(const Device& peer) const {
  return peer == *this || peer_access_record().get(ordinal_, peer.ordinal_);
}

void copy_peer(Buffer& dst, const Buffer& src, StreamRef stream) {
  if (!dst.is_open()) {
    throw std::logic_error("copy_peer: the destination Buffer is closed");
  }
  if (!src.is_open()) {
    throw std::logic_error("copy_peer: the source Buffer is closed");
  }
  if (dst.size() != src.size()) {
    throw std::invalid_argument("copy_peer: the destination buffer has " +
                                std::to_string(dst.size()) + " bytes but the source buffer has " +
                                std::to_string(src.size()) + "; sizes must match");
  }
  copy_peer(dst.handle(), device_of(dst, "destination"), src.handle(), device_of(src, "source"),
            src.size(), stream);
}

void copy_peer(BufferRef dst, const Device& dst_device, BufferRef src, const Device& src_device,
               StreamRef stream) {
  check_sizes(dst.size(), src.size());
  copy_peer(dst.handle(), dst_device, src.handle(), src_device, src.size(), stream);
}

void copy_peer(BufferRef dst, BufferRef src, StreamRef stream) {
  check_sizes(dst.size(), src.size());
  if (src.size() == 0) {
    return;
  }
  copy_peer(dst.handle(), device_of(dst, "destination"), src.handle(), device_of(src, "source"),
            src.size(), stream);
}

void copy_peer(CUdeviceptr dst, const Device& dst_device, CUdeviceptr src, const Device& src_device,
               std::size_t size, StreamRef stream) {
  if (size == 0) {
    return;
  }
  const CUstream handle = stream.handle();
  const CUcontext dst_context = dst_device.context();
  const CUcontext src_context = src_device.context();
  detail::check_on_stream(stream, "cuMemcpyPeerAsync", [&] {
    return driver::raw::cuMemcpyPeerAsync(dst, dst_context, src, src_context, size, handle);
  });
}

}  // namespace cuwrap
