// CcclResource and StreamOrderedAllocator: cuwrap memory resources as CCCL memory
// resources (concepts and properties checked at compile time, allocation through a
// cuda::mr resource reference at run time) and as a standard allocator.
//
// Compiled by the host compiler: CCCL's <cuda/memory_resource> works in host C++. A
// toolkit without CCCL (the 12.x header sets without it) leaves one skipped test.
#if __has_include(<cuda/memory_resource>)
#include <cuwrap/buffer.hpp>
#include <cuwrap/cccl_resource.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/stream_allocator.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "release_failures.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuda::mr::device_accessible;
using cuda::mr::host_accessible;
using cuwrap::CcclResource;
using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

// CCCL 3.1 renamed the concepts and references (stream-ordered is the default name);
// these aliases let one test check both generations.
#if CCCL_VERSION >= 3001000
template <class Resource, class... Properties>
concept StreamOrderedResourceWith = cuda::mr::resource_with<Resource, Properties...>;
template <class Resource, class... Properties>
concept SynchronousResourceWith = cuda::mr::synchronous_resource_with<Resource, Properties...>;
template <class... Properties>
using StreamOrderedRef = cuda::mr::resource_ref<Properties...>;
template <class... Properties>
using SynchronousRef = cuda::mr::synchronous_resource_ref<Properties...>;
template <class Ref>
void* ordered_allocate(Ref& ref, std::size_t bytes, std::size_t alignment, cuda::stream_ref s) {
  return ref.allocate(s, bytes, alignment);
}
template <class Ref>
void ordered_deallocate(Ref& ref, void* p, std::size_t bytes, std::size_t alignment,
                        cuda::stream_ref s) {
  ref.deallocate(s, p, bytes, alignment);
}
template <class Ref>
void* sync_allocate(Ref& ref, std::size_t bytes, std::size_t alignment) {
  return ref.allocate_sync(bytes, alignment);
}
template <class Ref>
void sync_deallocate(Ref& ref, void* p, std::size_t bytes, std::size_t alignment) {
  ref.deallocate_sync(p, bytes, alignment);
}
#else
template <class Resource, class... Properties>
concept StreamOrderedResourceWith = cuda::mr::async_resource_with<Resource, Properties...>;
template <class Resource, class... Properties>
concept SynchronousResourceWith = cuda::mr::resource_with<Resource, Properties...>;
template <class... Properties>
using StreamOrderedRef = cuda::mr::async_resource_ref<Properties...>;
template <class... Properties>
using SynchronousRef = cuda::mr::resource_ref<Properties...>;
template <class Ref>
void* ordered_allocate(Ref& ref, std::size_t bytes, std::size_t alignment, cuda::stream_ref s) {
  return ref.allocate_async(bytes, alignment, s);
}
template <class Ref>
void ordered_deallocate(Ref& ref, void* p, std::size_t bytes, std::size_t alignment,
                        cuda::stream_ref s) {
  ref.deallocate_async(p, bytes, alignment, s);
}
template <class Ref>
void* sync_allocate(Ref& ref, std::size_t bytes, std::size_t alignment) {
  return ref.allocate(bytes, alignment);
}
template <class Ref>
void sync_deallocate(Ref& ref, void* p, std::size_t bytes, std::size_t alignment) {
  ref.deallocate(p, bytes, alignment);
}
#endif

// ---- Compile time: the concepts and properties of each adaptor ---------------------------

using DeviceAdaptor = CcclResource<cuwrap::DeviceMemoryResource>;
using PinnedAdaptor = CcclResource<cuwrap::PinnedMemoryResource>;
using LegacyPinnedAdaptor = CcclResource<cuwrap::LegacyPinnedMemoryResource>;
using ManagedAdaptor = CcclResource<cuwrap::ManagedMemoryResource>;
using BaseAdaptor = CcclResource<cuwrap::MemoryResource>;

static_assert(StreamOrderedResourceWith<DeviceAdaptor, device_accessible>);
static_assert(SynchronousResourceWith<DeviceAdaptor, device_accessible>);
static_assert(!cuda::has_property<DeviceAdaptor, host_accessible>,
              "device memory is not host-accessible");
static_assert(StreamOrderedResourceWith<PinnedAdaptor, device_accessible, host_accessible>);
static_assert(StreamOrderedResourceWith<LegacyPinnedAdaptor, device_accessible, host_accessible>);
static_assert(StreamOrderedResourceWith<ManagedAdaptor, device_accessible, host_accessible>);
// A MemoryResource& says nothing about its memory at compile time: no property unless
// claimed (and then checked when the adaptor is made).
static_assert(StreamOrderedResourceWith<BaseAdaptor>);
static_assert(!cuda::has_property<BaseAdaptor, device_accessible>);
static_assert(!cuda::has_property<BaseAdaptor, host_accessible>);
static_assert(StreamOrderedResourceWith<CcclResource<cuwrap::MemoryResource, device_accessible>,
                                        device_accessible>);
static_assert(
    !cuda::has_property<CcclResource<cuwrap::MemoryResource, device_accessible>, host_accessible>);
// A class derived from a built-in resource keeps its properties.
class CountingDeviceResource : public cuwrap::DeviceMemoryResource {
  using DeviceMemoryResource::DeviceMemoryResource;
};
static_assert(StreamOrderedResourceWith<CcclResource<CountingDeviceResource>, device_accessible>);
// The references CCCL builds from them.
static_assert(std::is_constructible_v<StreamOrderedRef<device_accessible>, DeviceAdaptor&>);
static_assert(!std::is_constructible_v<StreamOrderedRef<host_accessible>, DeviceAdaptor&>);
static_assert(
    std::is_constructible_v<StreamOrderedRef<device_accessible, host_accessible>, PinnedAdaptor&>);
static_assert(std::is_constructible_v<SynchronousRef<host_accessible>, ManagedAdaptor&>);
static_assert(!std::is_constructible_v<StreamOrderedRef<device_accessible>, BaseAdaptor&>);

// ---- Without a GPU: a host-memory resource of the test's own ------------------------------

// Host memory from the C heap, handed out `offset` bytes into a 512-aligned block (a
// nonzero offset makes a misaligned resource). Records what it is asked to do.
class HostResource : public cuwrap::MemoryResource {
 public:
  using MemoryResource::allocate;
  explicit HostResource(std::size_t offset = 0) : offset_(offset) {}

  cuwrap::Buffer allocate(std::size_t size, cuwrap::StreamRef stream) override {
    void* block = std::aligned_alloc(512, round_up(size + offset_));
    if (block == nullptr) {
      throw std::bad_alloc();
    }
    ++allocations;
    last_stream = stream.handle();
    const auto ptr = reinterpret_cast<CUdeviceptr>(block) + offset_;
    return cuwrap::Buffer::adopt(ptr, size, this, stream);
  }
  void deallocate(CUdeviceptr ptr, std::size_t size, cuwrap::StreamRef stream) override {
    if (fail_deallocate) {
      throw std::runtime_error("HostResource: deallocate fails on purpose");
    }
    ++deallocations;
    last_size = size;
    last_stream = stream.handle();
    std::free(reinterpret_cast<void*>(ptr - offset_));
  }
  bool is_device_accessible() const override { return false; }
  bool is_host_accessible() const override { return true; }

  int allocations = 0;
  int deallocations = 0;
  std::size_t last_size = 0;
  CUstream last_stream = nullptr;
  bool fail_deallocate = false;

 private:
  static std::size_t round_up(std::size_t n) { return (n + 511) / 512 * 512 + 512; }
  std::size_t offset_;
};

TEST(CcclResourceHost, AllocatesThroughAResourceRefOnTheGivenStream) {
  HostResource host;
  CcclResource<cuwrap::MemoryResource, host_accessible> adaptor(host);
  StreamOrderedRef<host_accessible> ref{adaptor};
  const cuda::stream_ref stream{};  // the null stream: no driver call to name it
  void* p = ordered_allocate(ref, 1000, 64, stream);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0U);
  std::memset(p, 0xab, 1000);  // host memory: usable right away
  EXPECT_EQ(host.allocations, 1);
  // A null stream_ref is the legacy default stream, as in the runtime API: it reaches the
  // resource as CU_STREAM_LEGACY.
  EXPECT_EQ(host.last_stream, CU_STREAM_LEGACY);
  ordered_deallocate(ref, p, 1000, 64, stream);
  EXPECT_EQ(host.deallocations, 1);
  EXPECT_EQ(host.last_size, 1000U);
}

TEST(CcclResourceHost, RejectsAnAlignmentAboveTheGuaranteeNamingBoth) {
  HostResource host;
  BaseAdaptor adaptor(host);
  const std::string message = thrown_message<std::invalid_argument>(
      [&] { adaptor.allocate_async(64, 512, cuda::stream_ref{}); });
  EXPECT_TRUE(contains(message, "alignment 512")) << message;
  EXPECT_TRUE(contains(message, "256")) << message;
  EXPECT_EQ(host.allocations, 0) << "checked before allocating";
}

TEST(CcclResourceHost, RejectsAnAlignmentThatIsNoPowerOfTwo) {
  HostResource host;
  BaseAdaptor adaptor(host);
  for (const std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{48}}) {
    const std::string message = thrown_message<std::invalid_argument>(
        [&] { adaptor.allocate(cuda::stream_ref{}, 64, alignment); });
    EXPECT_TRUE(contains(message, "alignment " + std::to_string(alignment))) << message;
    EXPECT_TRUE(contains(message, "power of two")) << message;
  }
  EXPECT_EQ(host.allocations, 0);
}

TEST(CcclResourceHost, EveryPowerOfTwoUpToTheGuaranteeIsAccepted) {
  HostResource host;
  BaseAdaptor adaptor(host);
  for (std::size_t alignment = 1; alignment <= cuwrap::kResourceAlignment; alignment *= 2) {
    void* p = adaptor.allocate(cuda::stream_ref{}, 16, alignment);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0U) << alignment;
    adaptor.deallocate(cuda::stream_ref{}, p, 16, alignment);
  }
  EXPECT_EQ(host.allocations, 9);
  EXPECT_EQ(host.deallocations, 9);
}

TEST(CcclResourceHost, MemoryReturnedMisalignedIsFreedAndNamed) {
  HostResource misaligned(8);  // 8 bytes past a 512-byte boundary
  BaseAdaptor adaptor(misaligned);
  void* p = adaptor.allocate_async(64, 8, cuda::stream_ref{});  // 8 is met
  adaptor.deallocate_async(p, 64, 8, cuda::stream_ref{});
  const std::string message =
      thrown_message<std::logic_error>([&] { adaptor.allocate_async(64, 16, cuda::stream_ref{}); });
  EXPECT_TRUE(contains(message, "not aligned to the 16 bytes")) << message;
  EXPECT_EQ(misaligned.allocations, 2);
  EXPECT_EQ(misaligned.deallocations, 2) << "the misaligned memory is given back";
}

TEST(CcclResourceHost, AClaimedPropertyIsCheckedAgainstTheResource) {
  HostResource host;  // host memory only
  const std::string message = thrown_message<std::invalid_argument>(
      [&] { CcclResource<cuwrap::MemoryResource, device_accessible> adaptor(host); });
  EXPECT_TRUE(contains(message, "cuda::mr::device_accessible")) << message;
  EXPECT_NO_THROW((CcclResource<cuwrap::MemoryResource, host_accessible>(host)));
}

TEST(CcclResourceHost, AdaptorsAndRefsCompareByResourceObject) {
  HostResource a;
  HostResource b;
  CcclResource<cuwrap::MemoryResource, host_accessible> adaptor_a(a);
  CcclResource<cuwrap::MemoryResource, host_accessible> adaptor_a2(a);
  CcclResource<cuwrap::MemoryResource, host_accessible> adaptor_b(b);
  EXPECT_TRUE(adaptor_a == adaptor_a2);
  EXPECT_FALSE(adaptor_a == adaptor_b);
  EXPECT_EQ(&adaptor_a.resource(), &a);
  StreamOrderedRef<host_accessible> ref_a{adaptor_a};
  StreamOrderedRef<host_accessible> ref_a2{adaptor_a2};
  StreamOrderedRef<host_accessible> ref_b{adaptor_b};
  EXPECT_TRUE(ref_a == ref_a2);
  EXPECT_FALSE(ref_a == ref_b);
}

TEST(CcclResourceHost, ErrorsOfTheResourcePassThrough) {
  HostResource host;
  host.fail_deallocate = true;
  BaseAdaptor adaptor(host);
  void* p = adaptor.allocate_async(32, 8, cuda::stream_ref{});
  EXPECT_THROW(adaptor.deallocate_async(p, 32, 8, cuda::stream_ref{}), std::runtime_error);
  host.fail_deallocate = false;
  adaptor.deallocate_async(p, 32, 8, cuda::stream_ref{});
  EXPECT_EQ(host.deallocations, 1);
}

// ---- StreamOrderedAllocator -----------------------------------------------------------------

TEST(StreamOrderedAllocatorHost, AllocatesElementsFromTheResourceOnItsStream) {
  HostResource host;
  const cuwrap::StreamRef stream = cuwrap::kLegacyDefaultStream;  // no driver call to name it
  cuwrap::StreamOrderedAllocator<double> alloc(host, stream);
  double* p = alloc.allocate(10);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(double), 0U);
  p[9] = 1.5;  // host memory
  EXPECT_EQ(host.last_stream, stream.handle());
  alloc.deallocate(p, 10);
  EXPECT_EQ(host.deallocations, 1);
  EXPECT_EQ(host.last_size, 10 * sizeof(double));
}

TEST(StreamOrderedAllocatorHost, AnOverflowingCountThrowsBeforeAllocating) {
  HostResource host;
  cuwrap::StreamOrderedAllocator<std::uint64_t> alloc(host, cuwrap::kLegacyDefaultStream);
  EXPECT_THROW(static_cast<void>(alloc.allocate(std::numeric_limits<std::size_t>::max() / 4)),
               std::bad_array_new_length);
  EXPECT_EQ(host.allocations, 0);
}

TEST(StreamOrderedAllocatorHost, AFailingFreeIsReportedNotThrown) {
  HostResource host;
  cuwrap::StreamOrderedAllocator<char> alloc(host, cuwrap::kLegacyDefaultStream);
  char* p = alloc.allocate(8);
  host.fail_deallocate = true;
  {
    cuwrap::testing::ReleaseFailures failures;
    alloc.deallocate(p, 8);  // noexcept: reports instead
    ASSERT_EQ(failures.reports.size(), 1U);
    EXPECT_STREQ(failures.reports[0].object, "StreamOrderedAllocator");
  }
  host.fail_deallocate = false;
  alloc.deallocate(p, 8);
  EXPECT_EQ(host.deallocations, 1);
}

TEST(StreamOrderedAllocatorHost, EqualityFollowsResourceAndStreamAcrossRebinding) {
  HostResource a;
  HostResource b;
  const cuwrap::StreamOrderedAllocator<int> on_a(a, cuwrap::kLegacyDefaultStream);
  const cuwrap::StreamOrderedAllocator<char> rebound(on_a);
  EXPECT_TRUE(rebound == on_a);
  EXPECT_TRUE(on_a == cuwrap::StreamOrderedAllocator<int>(a, cuwrap::kLegacyDefaultStream));
  EXPECT_FALSE(on_a == cuwrap::StreamOrderedAllocator<int>(b, cuwrap::kLegacyDefaultStream));
  EXPECT_FALSE(on_a == cuwrap::StreamOrderedAllocator<int>(a, cuwrap::kPerThreadDefaultStream));
}

// ---- With a GPU: the built-in resources ----------------------------------------------------

class CcclResourceGpu : public cuwrap::testing::DeviceStreamTest {};

// Fill `bytes` at `p` with `value` on `stream`, copy them back and return them.
std::vector<unsigned char> fill_and_read(void* p, std::size_t bytes, unsigned char value,
                                         const cuwrap::Stream& stream) {
  const auto ptr = reinterpret_cast<CUdeviceptr>(p);
  cuwrap::driver::cuMemsetD8Async(ptr, value, bytes, stream.handle());
  std::vector<unsigned char> back(bytes);
  // cuMemcpyAsync infers both sides (pinned pool memory is not device memory to DtoH).
  cuwrap::driver::cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back.data()), ptr, bytes,
                                stream.handle());
  stream.sync();
  return back;
}

TEST_F(CcclResourceGpu, DevicePoolMemoryThroughAStreamOrderedRef) {
  cuwrap::DeviceMemoryResource pool(device(), {.create_pool = true});
  CcclResource adaptor(pool);
  StreamOrderedRef<device_accessible> ref{adaptor};
  const cuda::stream_ref on(stream().handle());
  constexpr std::size_t kBytes = 1 << 20;
  void* p = ordered_allocate(ref, kBytes, 256, on);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0U);
  EXPECT_GE(pool.attributes().used_mem_current(), kBytes) << "from cuwrap's pool";
  const std::vector<unsigned char> back = fill_and_read(p, kBytes, 0x5a, stream());
  EXPECT_EQ(back.front(), 0x5a);
  EXPECT_EQ(back.back(), 0x5a);
  ordered_deallocate(ref, p, kBytes, 256, on);
  stream().sync();
  EXPECT_EQ(pool.attributes().used_mem_current(), 0U) << "given back to the pool";
}

TEST_F(CcclResourceGpu, DevicePoolMemoryThroughASynchronousRef) {
  cuwrap::DeviceMemoryResource pool(device(), {.create_pool = true});
  CcclResource adaptor(pool);
  SynchronousRef<device_accessible> ref{adaptor};
  void* p = sync_allocate(ref, 4096, 128);
  EXPECT_GE(pool.attributes().used_mem_current(), 4096U);
  EXPECT_EQ(fill_and_read(p, 4096, 0x11, stream()).back(), 0x11);
  sync_deallocate(ref, p, 4096, 128);
  EXPECT_EQ(pool.attributes().used_mem_current(), 0U);
}

TEST_F(CcclResourceGpu, DeviceMemoryResourceOfTheDeviceWithAClaimedProperty) {
  CcclResource<cuwrap::MemoryResource, device_accessible> adaptor(device().memory_resource());
  StreamOrderedRef<device_accessible> ref{adaptor};
  const cuda::stream_ref on(stream().handle());
  void* p = ordered_allocate(ref, 512, 256, on);
  EXPECT_EQ(fill_and_read(p, 512, 0x22, stream()).front(), 0x22);
  ordered_deallocate(ref, p, 512, 256, on);
  EXPECT_THROW((CcclResource<cuwrap::MemoryResource, host_accessible>(device().memory_resource())),
               std::invalid_argument);
}

TEST_F(CcclResourceGpu, PinnedAndManagedMemoryIsUsableFromTheHost) {
  cuwrap::PinnedMemoryResource pinned;
  cuwrap::LegacyPinnedMemoryResource legacy;
  cuwrap::ManagedMemoryResource managed;
  CcclResource pinned_adaptor(pinned);
  CcclResource legacy_adaptor(legacy);
  CcclResource managed_adaptor(managed);
  SynchronousRef<host_accessible, device_accessible> refs[] = {
      SynchronousRef<host_accessible, device_accessible>{pinned_adaptor},
      SynchronousRef<host_accessible, device_accessible>{legacy_adaptor},
      SynchronousRef<host_accessible, device_accessible>{managed_adaptor}};
  for (auto& ref : refs) {
    auto* p = static_cast<unsigned char*>(sync_allocate(ref, 1024, 256));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0U);
    const std::vector<unsigned char> back = fill_and_read(p, 1024, 0x33, stream());
    EXPECT_EQ(back[512], 0x33);
    EXPECT_EQ(p[512], 0x33) << "the host reads what the device wrote";
    sync_deallocate(ref, p, 1024, 256);
  }
}

TEST_F(CcclResourceGpu, ClosedResourceErrorsPassThrough) {
  cuwrap::DeviceMemoryResource pool(device(), {.create_pool = true});
  CcclResource adaptor(pool);
  pool.close();
  EXPECT_THROW(adaptor.allocate_async(64, 256, cuda::stream_ref(stream().handle())),
               std::logic_error);
}

TEST_F(CcclResourceGpu, AllocatorTakesPoolMemoryOnItsStream) {
  cuwrap::DeviceMemoryResource pool(device(), {.create_pool = true});
  cuwrap::StreamOrderedAllocator<float> alloc(pool, stream());
  float* p = alloc.allocate(1000);
  EXPECT_GE(pool.attributes().used_mem_current(), 1000 * sizeof(float));
  EXPECT_EQ(fill_and_read(p, 4000, 0x44, stream())[3999], 0x44);
  alloc.deallocate(p, 1000);
  stream().sync();
  EXPECT_EQ(pool.attributes().used_mem_current(), 0U);
}

}  // namespace

#else  // no CCCL

#include <gtest/gtest.h>

TEST(CcclResourceHost, NeedsCccl) {
  GTEST_SKIP() << "the toolkit has no CCCL (<cuda/memory_resource>): CcclResource is not built";
}

#endif
