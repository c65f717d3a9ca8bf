// CcclResource: a cuwrap memory resource as a CCCL memory resource, so that
// cuda::mr resource references (and what takes them: CCCL containers, thrust and cub
// adaptors, a user's own code) allocate from cuwrap's pools.
//
// Needs CCCL's <cuda/memory_resource> and <cuda/stream_ref>: CUDA 12.x toolkits ship
// them in <cuda>/include, CUDA 13 in <cuda>/include/cccl. nvcc finds them by itself; for a
// host compiler add that directory to the include path (the cuwrap::cuwrap CMake target
// of a build tree does, when the toolkit has it). Kept out of <cuwrap/core.hpp> so that
// cuwrap's other headers never pull CCCL in.
#pragma once

#if !__has_include(<cuda/memory_resource>) || !__has_include(<cuda/stream_ref>)
#error \
    "<cuwrap/cccl_resource.hpp> needs CCCL (<cuda/memory_resource>): CUDA 12.x has it in <cuda>/include, CUDA 13 in <cuda>/include/cccl (add that directory to the include path; nvcc adds it itself)"
#endif

// CCCL declares cuda::mr only with this macro (CCCL 2.x and 3.x). Defined here unless the
// user did; a <cuda/memory_resource> included before without it left cuda::mr empty.
#if !defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE)
#if defined(_CUDA_MEMORY_RESOURCE) || defined(_CUDA__MEMORY_RESOURCE_RESOURCE_H)
#error \
    "<cuwrap/cccl_resource.hpp>: <cuda/memory_resource> was included before without LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE, so cuda::mr is empty; define that macro for the whole translation unit (or include this header first)"
#endif
#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#endif

#include <cuwrap/detail/resource_bytes.hpp>
#include <cuwrap/memory_resource.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <type_traits>

namespace cuwrap {

namespace detail {

/// Which memory a resource type gives out, known from its type alone (CCCL's
/// properties are compile-time): the built-in resources and classes derived from them.
template <class Resource>
struct ResourceAccess {
  static constexpr bool device = std::is_base_of_v<DeviceMemoryResource, Resource> ||
                                 std::is_base_of_v<PinnedMemoryResource, Resource> ||
                                 std::is_base_of_v<LegacyPinnedMemoryResource, Resource> ||
                                 std::is_base_of_v<ManagedMemoryResource, Resource>;
  static constexpr bool host = std::is_base_of_v<PinnedMemoryResource, Resource> ||
                               std::is_base_of_v<LegacyPinnedMemoryResource, Resource> ||
                               std::is_base_of_v<ManagedMemoryResource, Resource>;
};

template <class Property, class... Properties>
inline constexpr bool kHasProperty = (std::is_same_v<Property, Properties> || ...);

}  // namespace detail

/// A cuwrap memory resource as a CCCL (stream-ordered) memory resource: it satisfies
/// cuda::mr::async_resource and cuda::mr::resource of CCCL 2.x and 3.0, and
/// cuda::mr::resource and cuda::mr::synchronous_resource of CCCL 3.1+ (which renamed
/// them), so `cuda::mr::async_resource_ref<cuda::mr::device_accessible> ref{adaptor}`
/// (CCCL 3.1+: `cuda::mr::resource_ref<...>`) allocates from the cuwrap resource.
///
/// A cheap copyable view of `Resource`, which must outlive it and every reference made
/// from it. Two adaptors compare equal when they view the same resource object.
///
/// Properties (cuda::get_property): cuda::mr::device_accessible for the device, pinned,
/// legacy pinned and managed resources, cuda::mr::host_accessible for the pinned, legacy
/// pinned and managed ones, known from `Resource`'s type. Where the type does not say (a
/// MemoryResource&, such as Device::memory_resource(), or a user's resource), list them as
/// `Claimed`: the constructor checks each against is_device_accessible() /
/// is_host_accessible() and throws std::invalid_argument for a claim that does not hold.
///
/// Alignment: every allocation accepts a power of two up to kResourceAlignment (256,
/// what the device, pinned and managed resources guarantee); another alignment throws
/// std::invalid_argument naming the alignment asked for and the limit (CCCL's own
/// resources throw too), before any allocation. An address the resource returns
/// misaligned (only a user's resource can) is freed and std::logic_error names it.
/// Errors of the resource itself (DriverError, std::logic_error on a closed resource)
/// pass through.
///
/// Streams: the stream-ordered forms allocate and free ordered on the given
/// cuda::stream_ref; the synchronous forms use the legacy default stream (of the current
/// context) and synchronise it before returning.
///
/// Example:
/// \code
///   cuwrap::DeviceMemoryResource pool(device);
///   cuwrap::CcclResource adaptor(pool);
///   cuda::mr::async_resource_ref<cuda::mr::device_accessible> ref{adaptor};
///   void* p = ref.allocate_async(1024, 256, cuda::stream_ref(stream.handle()));
///   ref.deallocate_async(p, 1024, 256, cuda::stream_ref(stream.handle()));
/// \endcode
template <class Resource, class... Claimed>
class CcclResource {
  static_assert(std::is_base_of_v<MemoryResource, Resource>,
                "cuwrap::CcclResource: Resource must be a cuwrap::MemoryResource");
  static_assert(((std::is_same_v<Claimed, cuda::mr::device_accessible> ||
                  std::is_same_v<Claimed, cuda::mr::host_accessible>)&&...),
                "cuwrap::CcclResource: only cuda::mr::device_accessible and "
                "cuda::mr::host_accessible can be claimed");

 public:
  /// Whether the memory is device-accessible, by the type or a checked claim.
  static constexpr bool kDeviceAccessible =
      detail::ResourceAccess<Resource>::device ||
      detail::kHasProperty<cuda::mr::device_accessible, Claimed...>;
  /// Whether the memory is host-accessible, by the type or a checked claim.
  static constexpr bool kHostAccessible =
      detail::ResourceAccess<Resource>::host ||
      detail::kHasProperty<cuda::mr::host_accessible, Claimed...>;

  /// View `resource`, checking each `Claimed` property against it.
  ///
  /// Throws std::invalid_argument for a claim the resource does not satisfy.
  explicit CcclResource(Resource& resource) : resource_(&resource) {
    if constexpr (sizeof...(Claimed) != 0) {
      detail::require_access(
          resource, detail::kHasProperty<cuda::mr::device_accessible, Claimed...>,
          detail::kHasProperty<cuda::mr::host_accessible, Claimed...>, "cuwrap::CcclResource");
    }
  }

  /// Allocate `bytes` aligned to `alignment`, ordered on `stream` (CCCL 3.1+'s name).
  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment) {
    return detail::allocate_bytes(*resource_, bytes, alignment, stream.get(),
                                  "cuwrap::CcclResource::allocate");
  }
  /// Free `ptr` from allocate(), ordered on `stream` (CCCL 3.1+'s name).
  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t /*alignment*/) {
    detail::deallocate_bytes(*resource_, ptr, bytes, stream.get());
  }
  /// Allocate `bytes` aligned to `alignment`, usable on return (CCCL 3.1+'s name).
  void* allocate_sync(std::size_t bytes, std::size_t alignment) {
    return detail::allocate_bytes_sync(*resource_, bytes, alignment,
                                       "cuwrap::CcclResource::allocate_sync");
  }
  /// Free `ptr` from allocate_sync(), synchronously (CCCL 3.1+'s name).
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t /*alignment*/) {
    detail::deallocate_bytes_sync(*resource_, ptr, bytes);
  }

  /// Allocate `bytes` aligned to `alignment`, ordered on `stream` (CCCL 2.x/3.0's name).
  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    return detail::allocate_bytes(*resource_, bytes, alignment, stream.get(),
                                  "cuwrap::CcclResource::allocate_async");
  }
  /// Free `ptr` from allocate_async(), ordered on `stream` (CCCL 2.x/3.0's name).
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t /*alignment*/,
                        cuda::stream_ref stream) {
    detail::deallocate_bytes(*resource_, ptr, bytes, stream.get());
  }
  /// Allocate `bytes` aligned to `alignment`, usable on return (CCCL 2.x/3.0's name).
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return detail::allocate_bytes_sync(*resource_, bytes, alignment,
                                       "cuwrap::CcclResource::allocate");
  }
  /// Free `ptr` from allocate(bytes, alignment), synchronously (CCCL 2.x/3.0's name).
  void deallocate(void* ptr, std::size_t bytes, std::size_t /*alignment*/) {
    detail::deallocate_bytes_sync(*resource_, ptr, bytes);
  }

  /// Return the cuwrap resource this adaptor allocates from.
  Resource& resource() const noexcept { return *resource_; }

  /// Return whether both adaptors allocate from the same resource object.
  friend bool operator==(const CcclResource& a, const CcclResource& b) noexcept {
    return a.resource_ == b.resource_;
  }
  /// Declare cuda::mr::device_accessible (CCCL finds it by argument-dependent lookup).
  friend void get_property(const CcclResource& /*self*/,
                           cuda::mr::device_accessible) noexcept requires kDeviceAccessible {}
  /// Declare cuda::mr::host_accessible.
  friend void get_property(const CcclResource& /*self*/,
                           cuda::mr::host_accessible) noexcept requires kHostAccessible {}

 private:
  Resource* resource_;
};

/// Deduce CcclResource<Resource> from `CcclResource adaptor(pool);`.
template <class Resource>
CcclResource(Resource&) -> CcclResource<Resource>;

}  // namespace cuwrap
