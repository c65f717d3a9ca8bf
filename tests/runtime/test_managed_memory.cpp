// Managed memory: locations map to and from the driver's CUmemLocation; batches are
// checked before the driver (no GPU needed); on a GPU every advice is read back through
// the typed range queries, prefetches (single and batched) are seen as the last prefetch
// location, and discards work or name CUDA 13 as what is missing.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Host;
using cuwrap::Location;
using cuwrap::ManagedBufferRef;
using cuwrap::testing::contains;

TEST(ManagedLocations, HostLocationsMapToTheDriverTypes) {
  EXPECT_EQ(cuwrap::detail::to_cu_location(Host{}).type, CU_MEM_LOCATION_TYPE_HOST);
  const CUmemLocation numa = cuwrap::detail::to_cu_location(Host::numa(3));
  EXPECT_EQ(numa.type, CU_MEM_LOCATION_TYPE_HOST_NUMA);
  EXPECT_EQ(numa.id, 3);
  EXPECT_EQ(cuwrap::detail::to_cu_location(Host::numa_current()).type,
            CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
  EXPECT_THROW(cuwrap::detail::to_cu_location(Host::numa(-1)), std::invalid_argument);
}

TEST(ManagedLocations, DriverHostTypesComeBackAsHosts) {
  EXPECT_EQ(cuwrap::detail::from_cu_location(CU_MEM_LOCATION_TYPE_HOST, 0), Location(Host{}));
  EXPECT_EQ(cuwrap::detail::from_cu_location(CU_MEM_LOCATION_TYPE_HOST_NUMA, 2),
            Location(Host::numa(2)));
  EXPECT_EQ(cuwrap::detail::from_cu_location(CU_MEM_LOCATION_TYPE_INVALID, 0), std::nullopt);
}

TEST(ManagedBatchChecks, LocationCountAndNullBuffers) {
  const Buffer a = cuwrap::testing::fake_buffer(0x1000, 64);
  const Buffer b = cuwrap::testing::fake_buffer(0x2000, 64);
  const std::vector<const Buffer*> two{&a, &b};
  const std::vector<Location> three{Host{}, Host{}, Host{}};
  try {
    cuwrap::managed_memory::prefetch_batch(two, three, cuwrap::kPerThreadDefaultStream);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "3 locations for 2 buffers")) << e.what();
  }
  // A list of one location for two buffers is not broadcast (cuda.core: lists of
  // different lengths are a ValueError); a single Location is.
  const std::vector<Location> one{Host{}};
  try {
    cuwrap::managed_memory::prefetch_batch(two, one, cuwrap::kPerThreadDefaultStream);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "1 locations for 2 buffers")) << e.what();
  }
  EXPECT_THROW(
      cuwrap::managed_memory::discard_prefetch_batch(two, one, cuwrap::kPerThreadDefaultStream),
      std::invalid_argument);
  const std::vector<const Buffer*> with_null{&a, nullptr};
  try {
    cuwrap::managed_memory::prefetch_batch(with_null, Location(Host{}),
                                           cuwrap::kPerThreadDefaultStream);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "buffers[1] is null")) << e.what();
  }
}

// cuda.core's advice table: accessed-by advice takes a device or the host as a whole.
// The check comes before any driver call, so it holds without a GPU; withdrawing a host
// NUMA node does nothing (it can never have been added).
TEST(ManagedBatchChecks, AccessedByRefusesHostNumaNodes) {
  cuwrap::ManagedBufferRef managed = cuwrap::ManagedBufferRef::from_handle(0x1000, 64);
  try {
    managed.add_accessed_by(Host::numa(0));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "host NUMA node")) << e.what();
  }
  EXPECT_THROW(managed.add_accessed_by(Host::numa_current()), std::invalid_argument);
  EXPECT_THROW(cuwrap::managed_memory::advise(cuwrap::testing::fake_buffer(0x1000, 64),
                                              CU_MEM_ADVISE_SET_ACCESSED_BY, Host::numa(1)),
               std::invalid_argument);
  EXPECT_THROW(cuwrap::managed_memory::advise(cuwrap::testing::fake_buffer(0x1000, 64),
                                              static_cast<CUmem_advise>(0), Host{}),
               std::invalid_argument);
  EXPECT_NO_THROW(managed.discard_accessed_by(Host::numa(0)));
  EXPECT_NO_THROW(managed.discard_accessed_by(Host::numa_current()));
}

TEST(ManagedBatchChecks, DiscardNamesCuda13WhenTheToolkitIsOlder) {
  if (cuwrap::bindings_version() >= 13000) {
    GTEST_SKIP() << "built against CUDA 13: the driver decides (checked on a GPU)";
  }
  const Buffer a = cuwrap::testing::fake_buffer(0x1000, 64);
  try {
    cuwrap::managed_memory::discard(a, cuwrap::kPerThreadDefaultStream);
    FAIL() << "no exception";
  } catch (const cuwrap::UnsupportedError& e) {
    EXPECT_EQ(e.required_version(), 13000);
    EXPECT_EQ(e.available_version(), cuwrap::bindings_version());
  }
}

// ---- GPU ---------------------------------------------------------------------------

class ManagedGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (device().attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) == 0) {
      GTEST_SKIP() << "device 0 has no concurrent managed access (needed for prefetch)";
    }
  }

  Buffer allocate(std::size_t size) { return resource_.allocate(size, stream()); }

  cuwrap::ManagedMemoryResource resource_;
};

TEST_F(ManagedGpu, ReadMostlyRoundTrips) {
  Buffer buf = allocate(1 << 16);
  ManagedBufferRef managed(buf);
  EXPECT_FALSE(managed.read_mostly());
  managed.set_read_mostly(true);
  EXPECT_TRUE(managed.read_mostly());
  managed.set_read_mostly(false);
  EXPECT_FALSE(managed.read_mostly());
}

TEST_F(ManagedGpu, PreferredLocationRoundTrips) {
  Buffer buf = allocate(1 << 16);
  ManagedBufferRef managed(buf);
  EXPECT_EQ(managed.preferred_location(), std::nullopt);
  managed.set_preferred_location(Location(device()));
  EXPECT_EQ(managed.preferred_location(), Location(device()));
  managed.set_preferred_location(Location(Host{}));
  const std::optional<Location> host = managed.preferred_location();
  ASSERT_TRUE(host.has_value());
  EXPECT_TRUE(std::holds_alternative<Host>(*host));
  managed.set_preferred_location(std::nullopt);
  EXPECT_EQ(managed.preferred_location(), std::nullopt);
}

TEST_F(ManagedGpu, AccessedByAddsAndDiscards) {
  Buffer buf = allocate(1 << 16);
  ManagedBufferRef managed(buf);
  EXPECT_TRUE(managed.accessed_by().empty());
  managed.add_accessed_by(device());
  EXPECT_EQ(managed.accessed_by(), std::vector<cuwrap::Device>{device()});
  managed.discard_accessed_by(device());
  EXPECT_TRUE(managed.accessed_by().empty());
}

TEST_F(ManagedGpu, PrefetchIsTheLastPrefetchLocationAndKeepsTheData) {
  Buffer buf = allocate(1 << 16);
  const auto data = cuwrap::testing::random_bytes(buf.size(), 5);
  std::copy(data.begin(), data.end(), buf.host_span().begin());
  ManagedBufferRef managed(buf);
  managed.prefetch(device(), stream());
  stream().sync();
  EXPECT_EQ(managed.last_prefetch_location(), Location(device()));
  managed.prefetch(Host{}, stream());
  stream().sync();
  const std::optional<Location> last = managed.last_prefetch_location();
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(std::holds_alternative<Host>(*last));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.host_span().begin()));
}

TEST_F(ManagedGpu, BatchPrefetchReachesEveryBuffer) {
  std::vector<Buffer> buffers;
  buffers.reserve(4);
  for (int i = 0; i < 4; ++i) {
    buffers.push_back(allocate(std::size_t{1} << (12 + i)));
  }
  std::vector<const Buffer*> pointers;
  pointers.reserve(buffers.size());
  for (const Buffer& b : buffers) {
    pointers.push_back(&b);
  }
  const Location to_device(device());  // one location for all
  cuwrap::managed_memory::prefetch_batch(pointers, to_device, stream());
  stream().sync();
  for (const Buffer& b : buffers) {
    EXPECT_EQ(ManagedBufferRef(b).last_prefetch_location(), Location(device()));
  }
  // One location per buffer: alternate host and device.
  std::vector<Location> alternating;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    alternating.push_back(i % 2 == 0 ? Location(Host{}) : Location(device()));
  }
  cuwrap::managed_memory::prefetch_batch(pointers, alternating, stream());
  stream().sync();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const std::optional<Location> last = ManagedBufferRef(buffers[i]).last_prefetch_location();
    ASSERT_TRUE(last.has_value()) << "buffer " << i;
    EXPECT_EQ(std::holds_alternative<Host>(*last), i % 2 == 0) << "buffer " << i;
  }
  // The legacy default stream, which the batch entry point refuses, goes through the loop.
  cuwrap::managed_memory::prefetch_batch(pointers, to_device, cuwrap::kLegacyDefaultStream);
  cuwrap::kLegacyDefaultStream.sync();
  for (const Buffer& b : buffers) {
    EXPECT_EQ(ManagedBufferRef(b).last_prefetch_location(), Location(device()));
  }
  EXPECT_EQ(cuwrap::managed_memory::has_native_prefetch_batch(),
            cuwrap::bindings_version() >= 13000 && cuwrap::driver_version() >= 13000);
}

TEST_F(ManagedGpu, DiscardWorksOrNamesCuda13) {
  Buffer buf = allocate(1 << 16);
  ManagedBufferRef managed(buf);
  const bool supported = cuwrap::bindings_version() >= 13000 && cuwrap::driver_version() >= 13000;
  if (!supported) {
    EXPECT_THROW(managed.discard(stream()), cuwrap::UnsupportedError);
    EXPECT_THROW(managed.discard_prefetch(device(), stream()), cuwrap::UnsupportedError);
    GTEST_SKIP() << "discard needs CUDA 13.0 headers and driver; these are "
                 << cuwrap::version_string(cuwrap::bindings_version()) << " and "
                 << cuwrap::version_string(cuwrap::driver_version())
                 << " (the refusal was checked)";
  }
  EXPECT_THROW(managed.discard(cuwrap::kLegacyDefaultStream), std::invalid_argument);
  EXPECT_NO_THROW(managed.discard(stream()));
  EXPECT_NO_THROW(managed.discard_prefetch(device(), stream()));
  const std::vector<const Buffer*> both{&buf, &buf};
  EXPECT_NO_THROW(cuwrap::managed_memory::discard_batch(std::span(both).first(1), stream()));
  stream().sync();
}

TEST_F(ManagedGpu, DeviceMemoryIsNotManaged) {
  Buffer buf = device().allocate(256, stream());
  EXPECT_THROW(ManagedBufferRef{buf}, std::invalid_argument);
}

}  // namespace
