// Buffers without a GPU: a buffer that outlives its memory resource, fills that say
// their width, parts of a buffer (slice), allocate without a stream, and the compile-time
// traps (chains on a temporary GraphBuilder, fill with an int, peers by list).
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "fake_buffer.hpp"
#include "release_failures.hpp"

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::kLegacyDefaultStream;

constexpr CUdeviceptr kFakePointer = 0x1000;

// What a resource was asked to free, kept outside the resource (which may be gone).
struct Free {
  CUdeviceptr ptr;
  std::size_t size;
  CUstream stream;
  bool detached;
  bool operator==(const Free&) const = default;
};
std::vector<Free>& frees() {
  static std::vector<Free> list;
  return list;
}

// A user resource that allocates nothing real and records its frees.
class UserResource : public cuwrap::MemoryResource {
 public:
  Buffer allocate(std::size_t size, cuwrap::StreamRef stream) override {
    allocated_on.push_back(stream.handle());
    return Buffer::adopt(kFakePointer, size, this, stream);
  }
  void deallocate(CUdeviceptr ptr, std::size_t size, cuwrap::StreamRef stream) override {
    frees().push_back({ptr, size, stream.handle(), false});
  }
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return false; }

  std::vector<CUstream> allocated_on;
};

// A user resource whose free needs nothing from the object: its buffers outlive it.
class DetachableResource : public UserResource {
 public:
  DetachableResource() {
    set_detached_deallocate([](CUdeviceptr ptr, std::size_t size, const cuwrap::Stream& stream) {
      frees().push_back({ptr, size, stream.handle(), true});
    });
  }
};

using cuwrap::testing::ReleaseFailures;

// ---- a buffer that outlives its resource ----------------------------------------------

Buffer buffer_of_a_local_user_resource(std::size_t size) {
  UserResource local;
  return local.allocate(size, kLegacyDefaultStream);
}

// A kernel argument that is a closed Buffer's view refuses with std::logic_error, which
// reaches launch()'s caller (the conversion is not noexcept: it would end the program).
TEST(BufferLaunchArgument, AClosedBuffersViewThrowsLogicError) {
  const Buffer closed;
  const cuwrap::BufferRef& view = closed;
  EXPECT_THROW(static_cast<void>(cuwrap::detail::LaunchArgument<cuwrap::BufferRef>::convert(view)),
               std::logic_error);
  EXPECT_THROW(static_cast<void>(cuwrap::detail::LaunchArgument<Buffer>::convert(closed)),
               std::logic_error);
}

TEST(BufferOutlivesResource, UserResourceGoneReportsInsteadOfCallingThroughIt) {
  frees().clear();
  const ReleaseFailures failures;
  Buffer buffer = buffer_of_a_local_user_resource(24);
  ASSERT_TRUE(buffer.is_open());
  EXPECT_EQ(buffer.memory_resource(), nullptr);  // the resource is gone
  buffer.close();
  EXPECT_FALSE(buffer.is_open());
  EXPECT_TRUE(frees().empty());  // nothing called the destroyed resource's deallocate
  ASSERT_EQ(failures.reports.size(), 1u);
  EXPECT_EQ(failures.reports[0].code, CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(std::string(failures.reports[0].function), "MemoryResource::deallocate");
  EXPECT_NE(std::string(failures.reports[0].object).find("destroyed first"), std::string::npos)
      << failures.reports[0].object;
}

TEST(BufferOutlivesResource, TheDestructorReportsToo) {
  const ReleaseFailures failures;
  { const Buffer buffer = buffer_of_a_local_user_resource(8); }
  EXPECT_EQ(failures.reports.size(), 1u);
}

TEST(BufferOutlivesResource, CloseOnAStreamThrowsAndLeavesTheBufferClosed) {
  const ReleaseFailures failures;
  Buffer buffer = buffer_of_a_local_user_resource(40);
  try {
    buffer.close(kLegacyDefaultStream);
    FAIL() << "close(stream) after the resource was destroyed did not throw";
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("destroyed before the buffer"), std::string::npos) << what;
    EXPECT_NE(what.find("40 bytes"), std::string::npos) << what;
  }
  EXPECT_FALSE(buffer.is_open());  // nothing can free it: the destructor does not retry
  buffer.close();
  EXPECT_TRUE(failures.reports.empty());
}

TEST(BufferOutlivesResource, AliveResourceStillFreesThroughDeallocate) {
  frees().clear();
  UserResource mr;
  Buffer buffer = mr.allocate(16, kLegacyDefaultStream);
  EXPECT_EQ(buffer.memory_resource(), &mr);
  buffer.close();
  EXPECT_EQ(frees(), (std::vector<Free>{{kFakePointer, 16, CU_STREAM_LEGACY, false}}));
}

TEST(BufferOutlivesResource, DetachedDeallocateFreesOnTheBuffersStream) {
  frees().clear();
  const ReleaseFailures failures;
  Buffer buffer;
  Buffer other;
  {
    DetachableResource mr;
    buffer = mr.allocate(32, kLegacyDefaultStream);
    other = Buffer::adopt(kFakePointer + 64, 8, &mr);
  }
  EXPECT_EQ(buffer.memory_resource(), nullptr);
  buffer.close();
  other.close(cuwrap::kPerThreadDefaultStream);
  EXPECT_EQ(frees(), (std::vector<Free>{{kFakePointer, 32, CU_STREAM_LEGACY, true},
                                        {kFakePointer + 64, 8, CU_STREAM_PER_THREAD, true}}));
  EXPECT_TRUE(failures.reports.empty());
}

TEST(BufferOutlivesResource, ACopiedResourceKeepsItsOwnBuffers) {
  frees().clear();
  const ReleaseFailures failures;
  UserResource original;
  Buffer of_original = original.allocate(4, kLegacyDefaultStream);
  Buffer of_copy;
  {
    UserResource copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
    of_copy = copy.allocate(12, kLegacyDefaultStream);
    copy = original;  // assignment keeps the copy's link: its buffer stays its own
    EXPECT_EQ(of_copy.memory_resource(), &copy);
  }
  EXPECT_EQ(of_original.memory_resource(), &original);
  EXPECT_EQ(of_copy.memory_resource(), nullptr);
  of_copy.close();
  of_original.close();
  EXPECT_EQ(failures.reports.size(), 1u);  // of_copy's
  EXPECT_EQ(frees(), (std::vector<Free>{{kFakePointer, 4, CU_STREAM_LEGACY, false}}));
}

TEST(BufferOutlivesResource, MoveKeepsTheLinkAndReleaseDropsIt) {
  frees().clear();
  const ReleaseFailures failures;
  Buffer moved;
  {
    UserResource mr;
    Buffer buffer = mr.allocate(8, kLegacyDefaultStream);
    moved = std::move(buffer);
    EXPECT_EQ(moved.memory_resource(), &mr);
    Buffer released = mr.allocate(8, kLegacyDefaultStream);
    EXPECT_EQ(released.release(), kFakePointer);
    EXPECT_EQ(released.memory_resource(), nullptr);
  }
  moved.close();
  EXPECT_EQ(failures.reports.size(), 1u);  // the moved buffer's; the released one is the caller's
  EXPECT_TRUE(frees().empty());
}

TEST(BufferOutlivesResource, BuiltInResourcesLeaveAWayToFree) {
  // A zero-byte buffer's free needs no driver: what matters is that the built-in
  // resources leave a detached deallocate, so closing reports nothing.
  const ReleaseFailures failures;
  Buffer managed;
  Buffer legacy;
  {
    cuwrap::ManagedMemoryResource managed_mr;
    cuwrap::LegacyPinnedMemoryResource legacy_mr;
    managed = Buffer::adopt(0, 0, &managed_mr);
    legacy = Buffer::adopt(0, 0, &legacy_mr);
  }
  EXPECT_EQ(managed.memory_resource(), nullptr);
  managed.close();
  legacy.close();
  EXPECT_TRUE(failures.reports.empty());
}

// ---- allocate without a stream ----------------------------------------------------------

TEST(AllocateWithoutStream, OrdersOnTheLegacyDefaultStream) {
  frees().clear();
  UserResource mr;
  cuwrap::MemoryResource& base = mr;
  Buffer buffer = base.allocate(8);
  EXPECT_EQ(buffer.size(), 8u);
  ASSERT_EQ(mr.allocated_on.size(), 1u);
  EXPECT_EQ(mr.allocated_on[0], CU_STREAM_LEGACY);
  buffer.close();
  EXPECT_EQ(frees(), (std::vector<Free>{{kFakePointer, 8, CU_STREAM_LEGACY, false}}));
}

template <class Resource>
concept AllocatesWithoutStream = requires(Resource& mr) {
  mr.allocate(std::size_t{1});
};

// Every built-in resource and Device allocate without a stream (the legacy default one).
static_assert(AllocatesWithoutStream<cuwrap::DeviceMemoryResource>);
static_assert(AllocatesWithoutStream<cuwrap::PinnedMemoryResource>);
static_assert(AllocatesWithoutStream<cuwrap::LegacyPinnedMemoryResource>);
static_assert(AllocatesWithoutStream<cuwrap::ManagedMemoryResource>);
static_assert(AllocatesWithoutStream<cuwrap::GraphMemoryResource>);
static_assert(AllocatesWithoutStream<cuwrap::VirtualMemoryResource>);
static_assert(AllocatesWithoutStream<const cuwrap::Device>);
static_assert(AllocatesWithoutStream<cuwrap::MemoryResource>);
// The stream form stays as it was for a user resource.
static_assert(requires(UserResource & mr) { mr.allocate(std::size_t{1}, kLegacyDefaultStream); });

// ---- fill says its width ---------------------------------------------------------------

template <class T>
concept Fills = requires(Buffer& b, T value) {
  b.fill(value, kLegacyDefaultStream);
};

// Fills say their width: exactly the three widths' types, an int or a char (bytes, as
// cuda.core's fill(value)), or fill(value, width, stream).
static_assert(Fills<std::uint8_t>);
static_assert(Fills<std::uint16_t>);
static_assert(Fills<std::uint32_t>);
static_assert(Fills<int>);   // bytes: 0..255, any other int throws (below)
static_assert(Fills<char>);  // bytes: fill('b', s)
static_assert(!Fills<long>);
static_assert(!Fills<signed char>);
static_assert(!Fills<short>);
static_assert(!Fills<bool>);
static_assert(!Fills<std::uint64_t>);
static_assert(!Fills<std::byte>);
static_assert(!Fills<float>);
static_assert(requires(Buffer & b) { b.fill(1, 4, kLegacyDefaultStream); });

std::string invalid_argument_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

TEST(FillWidth, BadWidthValueOrSizeThrowsBeforeTheDriver) {
  Buffer six = cuwrap::testing::fake_buffer(kFakePointer, 6);
  for (const int width : {0, 3, 8, -1}) {
    const std::string what =
        invalid_argument_message([&] { six.fill(0, width, kLegacyDefaultStream); });
    EXPECT_NE(what.find("width " + std::to_string(width) + " is not 1, 2 or 4"), std::string::npos)
        << what;
  }
  std::string what = invalid_argument_message([&] { six.fill(0x10000, 2, kLegacyDefaultStream); });
  EXPECT_NE(what.find("value 65536 does not fit in 2 bytes"), std::string::npos) << what;
  what = invalid_argument_message([&] { six.fill(-1, 4, kLegacyDefaultStream); });
  EXPECT_NE(what.find("value -1"), std::string::npos) << what;
  what =
      invalid_argument_message([&] { six.fill(std::int64_t{1} << 32, 4, kLegacyDefaultStream); });
  EXPECT_NE(what.find("does not fit in 4 bytes"), std::string::npos) << what;
  what = invalid_argument_message([&] { six.fill(7, 4, kLegacyDefaultStream); });
  EXPECT_NE(what.find("multiple of 4"), std::string::npos) << what;
}

TEST(FillWidth, AnIntOutsideAByteThrowsNamingItBeforeTheDriver) {
  Buffer four = cuwrap::testing::fake_buffer(kFakePointer, 4);
  for (const int value : {256, -1, 0x12345678}) {
    const std::string what =
        invalid_argument_message([&] { four.fill(value, kLegacyDefaultStream); });
    EXPECT_NE(what.find("value " + std::to_string(value) + " is not a byte (0..255)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("fill(value, width, stream)"), std::string::npos) << what;
  }
}

// ---- part of a buffer --------------------------------------------------------------------

TEST(Slice, IsANonOwningViewOfTheRange) {
  frees().clear();
  UserResource mr;
  Buffer whole = mr.allocate(264, kLegacyDefaultStream);
  {
    const cuwrap::BufferRef part = whole.slice(256, 8);  // a view: nothing to free
    EXPECT_EQ(part.handle(), kFakePointer + 256);
    EXPECT_EQ(part.size(), 8u);
    const cuwrap::BufferRef empty_at_end = whole.slice(264, 0);
    EXPECT_EQ(empty_at_end.size(), 0u);
  }
  EXPECT_TRUE(frees().empty());  // a part never frees
  EXPECT_TRUE(whole.is_open());
}

TEST(Slice, ARangePastTheEndThrowsNamingIt) {
  const Buffer whole = cuwrap::testing::fake_buffer(kFakePointer, 264);
  std::string what = invalid_argument_message([&] { static_cast<void>(whole.slice(260, 8)); });
  EXPECT_NE(what.find("offset 260 and count 8"), std::string::npos) << what;
  EXPECT_NE(what.find("264 bytes"), std::string::npos) << what;
  what = invalid_argument_message([&] { static_cast<void>(whole.slice(265, 0)); });
  EXPECT_NE(what.find("offset 265"), std::string::npos) << what;
  // offset + count would wrap around: still refused.
  what = invalid_argument_message(
      [&] { static_cast<void>(whole.slice(8, std::numeric_limits<std::size_t>::max())); });
  EXPECT_NE(what.find("offset 8"), std::string::npos) << what;
  Buffer closed;
  EXPECT_THROW(static_cast<void>(closed.slice(0, 0)), std::logic_error);
}

TEST(Slice, CopiesBetweenPartsCheckTheirSizes) {
  Buffer a = cuwrap::testing::fake_buffer(kFakePointer, 16);
  Buffer b = cuwrap::testing::fake_buffer(kFakePointer + 64, 16);
  // A part is a temporary: copy_to accepts one as the destination.
  EXPECT_THROW(a.slice(0, 4).copy_to(b.slice(0, 8), kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(b.slice(0, 8).copy_from(a.slice(0, 4), kLegacyDefaultStream), std::invalid_argument);
  std::vector<std::uint32_t> host(3);
  EXPECT_THROW(a.slice(4, 8).copy_to(host, kLegacyDefaultStream), std::invalid_argument);
}

// The range forms reach the span forms (and their size check) for every contiguous range,
// those of a static extent too (a C array, std::array, std::span<T, N>): a static extent
// once picked the range template again, recursing until the stack ran out.
TEST(Slice, RangesOfAStaticExtentReachTheSizeCheck) {
  Buffer a = cuwrap::testing::fake_buffer(kFakePointer, 16);
  std::array<std::uint8_t, 8> array{};
  std::uint16_t c_array[3] = {};
  std::span<std::byte, 8> fixed(reinterpret_cast<std::byte*>(array.data()), 8);
  std::span<const std::byte, 8> fixed_const(fixed);
  EXPECT_THROW(a.copy_to(array, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(a.copy_from(array, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(a.copy_to(c_array, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(a.copy_from(c_array, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(a.copy_to(fixed, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(a.copy_from(fixed_const, kLegacyDefaultStream), std::invalid_argument);
}

// ---- chains on a temporary GraphBuilder -----------------------------------------------------

TEST(GraphBuilderChains, ATemporaryReturnsItselfByValue) {
  using cuwrap::GraphBuilder;
  // `auto& b = dev.create_graph_builder().begin_building();` would bind to a destroyed
  // builder: on a temporary both calls return the builder by value, so that does not
  // compile and `auto b = ...` owns it.
  static_assert(
      std::is_same_v<decltype(std::declval<GraphBuilder>().begin_building()), GraphBuilder>);
  static_assert(
      std::is_same_v<decltype(std::declval<GraphBuilder>().end_building()), GraphBuilder>);
  static_assert(
      std::is_same_v<decltype(std::declval<GraphBuilder&>().begin_building()), GraphBuilder&>);
  static_assert(
      std::is_same_v<decltype(std::declval<GraphBuilder&>().end_building()), GraphBuilder&>);
  static_assert(!std::is_constructible_v<GraphBuilder&, decltype(GraphBuilder().begin_building())>);
  EXPECT_THROW(static_cast<void>(GraphBuilder().begin_building()), std::logic_error);  // closed
}

// ---- peers by list, small asymmetries --------------------------------------------------------

TEST(PeersByList, DevicesOrdinalsAndEmptyListsCompile) {
  static_assert(requires(cuwrap::DeviceMemoryResource & mr, const cuwrap::Device& dev) {
    mr.set_peer_accessible_by({dev});
    mr.set_peer_accessible_by({dev, 1});
    mr.set_peer_accessible_by({1, 2});
    mr.set_peer_accessible_by({});
    mr.set_peer_accessible_by(std::vector<int>{1});
    mr.set_peer_accessible_by(std::vector<cuwrap::Device>{});
    mr.set_peer_accessible_by(std::span<const cuwrap::Device>());
  });
  EXPECT_EQ(cuwrap::DeviceOrOrdinal(3).device_id(), 3);
}

TEST(SmallAsymmetries, ManagedResourceCloses) {
  cuwrap::ManagedMemoryResource mr;
  EXPECT_TRUE(mr.is_open());
  mr.close();
  mr.close();  // idempotent
  EXPECT_FALSE(mr.is_open());
  try {
    static_cast<void>(mr.allocate(8, kLegacyDefaultStream));
    FAIL() << "allocate on a closed ManagedMemoryResource did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "ManagedMemoryResource::allocate on a closed ManagedMemoryResource");
  }
}

TEST(SmallAsymmetries, PinnedNegativeNumaIdThrowsBeforeTheDriver) {
  const std::string what = invalid_argument_message(
      [] { cuwrap::PinnedMemoryResource mr(cuwrap::PinnedMemoryResourceOptions{.numa_id = -2}); });
  EXPECT_NE(what.find("numa_id -2"), std::string::npos) << what;
}

// GraphMemoryResource has attributes() and close() as the other resources; numa_id() is an int.
static_assert(std::is_same_v<decltype(std::declval<const cuwrap::GraphMemoryResource&>()
                                          .attributes()
                                          .used_mem_current()),
                             std::uint64_t>);
static_assert(requires(cuwrap::GraphMemoryResource & mr) {
  mr.close();
  { mr.is_open() } -> std::same_as<bool>;
});
static_assert(
    std::is_same_v<decltype(std::declval<const cuwrap::PinnedMemoryResource&>().numa_id()), int>);

// Named ..._SUPPORTED in cuda.h, answered yes or no: bool, whatever the header's
// wording (HOST_MEMORY_POOLS_SUPPORTED's says "Device suports").
using Props = const cuwrap::DeviceProperties&;
#if CUDA_VERSION >= 13000  // not in the 12.4/12.6 headers
static_assert(std::is_same_v<decltype(std::declval<Props>().host_memory_pools_supported()), bool>);
#endif
static_assert(std::is_same_v<decltype(std::declval<Props>().memory_pools_supported()), bool>);
static_assert(std::is_same_v<decltype(std::declval<Props>().host_native_atomic_supported()), bool>);
static_assert(
    std::is_same_v<decltype(std::declval<Props>().timeline_semaphore_interop_supported()), bool>);
// A bit mask that only mentions "supported" stays an int.
static_assert(
    std::is_same_v<decltype(std::declval<Props>().mempool_supported_handle_types()), int>);

TEST(SmallAsymmetries, OnlyImportedBuffersAreMapped) {
  UserResource mr;
  Buffer buffer = mr.allocate(8, kLegacyDefaultStream);
  EXPECT_FALSE(buffer.is_mapped());
  EXPECT_FALSE(cuwrap::testing::fake_buffer(kFakePointer, 8).is_mapped());
  EXPECT_FALSE(Buffer().is_mapped());
}

}  // namespace
