// detail::ResourceLink: what a memory resource shares with the buffers it allocated, so
// that a buffer outliving its resource object neither calls through a dead object nor
// leaks silently (see MemoryResource in cuwrap/memory_resource.hpp).
#pragma once

#include <cuwrap/memory_resource.hpp>

#include "base/ref_counted.hpp"

namespace cuwrap::detail {

/// Shared by a MemoryResource (one reference) and each buffer it owns memory of.
struct ResourceLink : RefCounted {
  explicit ResourceLink(MemoryResource* owner) noexcept : resource(owner) {}

  /// Return the resource, or nullptr once it was destroyed.
  MemoryResource* alive() const noexcept { return __atomic_load_n(&resource, __ATOMIC_ACQUIRE); }
  /// Mark the resource destroyed (its destructor).
  void detach() noexcept { __atomic_store_n(&resource, nullptr, __ATOMIC_RELEASE); }

  MemoryResource* resource;
  /// How buffers free their memory once the resource is gone (nullptr: they cannot).
  MemoryResource::DetachedDeallocate detached_deallocate = nullptr;
};

}  // namespace cuwrap::detail
