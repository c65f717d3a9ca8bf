// Port of cuda.core's tests/memory/test_managed_ops.py: one TEST per Python test function
// (classes become fixtures of the same name; see README.md for those not ported and why).
//
// cuda.core's ManagedBuffer is cuwrap's ManagedBufferRef (a view of a Buffer's managed
// memory); cuda.core's managed memory resource is ManagedMemoryResource, its
// DummyUnifiedMemoryResource cuMemAllocManaged memory adopted by from_handle.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"

#include <cuda.h>

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Host;
using cuwrap::Location;
using cuwrap::ManagedBufferRef;
namespace managed_memory = cuwrap::managed_memory;
namespace driver = cuwrap::driver;

constexpr std::size_t kSize = 4096;

bool discard_supported() {
  return cuwrap::bindings_version() >= 13000 && cuwrap::driver_version() >= 13000;
}

// cuMemAllocManaged memory, freed at the end (cuda.core's DummyUnifiedMemoryResource).
class ExternalManaged {
 public:
  ExternalManaged() : ptr_(driver::cuMemAllocManaged(kSize, CU_MEM_ATTACH_GLOBAL)) {}
  ExternalManaged(const ExternalManaged&) = delete;
  ExternalManaged& operator=(const ExternalManaged&) = delete;
  ~ExternalManaged() { static_cast<void>(driver::raw::cuMemFree(ptr_)); }
  ManagedBufferRef ref() const { return ManagedBufferRef::from_handle(ptr_, kSize); }
  CUdeviceptr handle() const { return ptr_; }

 private:
  CUdeviceptr ptr_;
};

// Device 0 with managed memory (cuda.core's skip_if_managed_memory_unsupported), and with
// concurrent managed access where `location_ops` (the advice and prefetch locations).
class ManagedTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  void require(bool location_ops, bool discard = false) {
    if (!device().properties().managed_memory()) {
      GTEST_SKIP() << "the device does not support managed memory";
    }
    if (location_ops && !device().properties().concurrent_managed_access()) {
      GTEST_SKIP() << "the device has no concurrent managed access";
    }
    if (discard && !discard_supported()) {
      GTEST_SKIP() << "discard needs CUDA 13 bindings and driver";
    }
    if (discard) {
      for (const Device& each : Device::all()) {
        if (!each.properties().concurrent_managed_access()) {
          GTEST_SKIP() << "discard-prefetch needs concurrent managed access on every device";
        }
      }
    }
  }
  Buffer allocate() { return resource_.allocate(kSize, stream()); }
  std::vector<Buffer> allocate_n(std::size_t n) {
    std::vector<Buffer> buffers;
    for (std::size_t i = 0; i < n; ++i) {
      buffers.push_back(allocate());
    }
    return buffers;
  }
  static std::vector<const Buffer*> pointers(const std::vector<Buffer>& buffers) {
    std::vector<const Buffer*> out;
    for (const Buffer& buffer : buffers) {
      out.push_back(&buffer);
    }
    return out;
  }
  Location here() const { return Location(device()); }
  // Prefetch `managed` to `location` and wait for it.
  void prefetch_and_sync(const ManagedBufferRef& managed, const Location& location) {
    managed.prefetch(location, stream());
    stream().sync();
  }
  // Prefetch `managed` to `location`, wait, and check the last prefetch location.
  void expect_prefetched(const ManagedBufferRef& managed, const Location& location) {
    prefetch_and_sync(managed, location);
    EXPECT_EQ(managed.last_prefetch_location(), location);
  }
  // Prefetch `buffers` to `locations` with one prefetch_batch and wait for it.
  void prefetch_batch_and_sync(const std::vector<Buffer>& buffers,
                               const std::vector<Location>& locations) {
    managed_memory::prefetch_batch(pointers(buffers), locations, stream());
    stream().sync();
  }
  // Check that this device is the last prefetch location of every one of `buffers`.
  void expect_all_prefetched_here(const std::vector<Buffer>& buffers) const {
    for (const Buffer& buffer : buffers) {
      EXPECT_EQ(ManagedBufferRef(buffer).last_prefetch_location(), here());
    }
  }
  // Prefetch `managed` to the host, discard-prefetch it to this device, and check that
  // this device is the last prefetch location.
  void expect_discard_prefetched_here(const ManagedBufferRef& managed) {
    prefetch_and_sync(managed, Location(Host{}));
    managed.discard_prefetch(here(), stream());
    stream().sync();
    EXPECT_EQ(managed.last_prefetch_location(), here());
  }

  cuwrap::ManagedMemoryResource resource_;
};

class test_managed_ops : public ManagedTest {};

TEST_F(test_managed_ops, test_managed_memory_prefetch_supports_managed_pool_allocations) {
  require(true);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  const ManagedBufferRef managed(buffer);
  expect_prefetched(managed, Location(Host{}));
  expect_prefetched(managed, here());
}

TEST_F(test_managed_ops, test_managed_memory_advise_supports_external_managed_allocations) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  managed.set_read_mostly(true);
  EXPECT_TRUE(managed.read_mostly());
  managed.set_preferred_location(Location(Host{}));
  EXPECT_EQ(managed.preferred_location(), Location(Host{}));
}

TEST_F(test_managed_ops, test_managed_memory_prefetch_supports_external_managed_allocations) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  const ManagedBufferRef managed = plain.ref();
  expect_prefetched(managed, here());
}

TEST_F(test_managed_ops, test_managed_memory_discard_prefetch_supports_managed_pool_allocations) {
  require(true, true);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  const ManagedBufferRef managed(buffer);
  expect_discard_prefetched_here(managed);
}

TEST_F(test_managed_ops,
       test_managed_memory_discard_prefetch_supports_external_managed_allocations) {
  require(true, true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  const ManagedBufferRef managed = plain.ref();
  expect_discard_prefetched_here(managed);
}

// Device memory is no managed memory: a ManagedBufferRef of a Buffer refuses it at
// once; one made by from_handle (no driver query) refuses each operation.
TEST_F(test_managed_ops, test_managed_memory_operations_reject_non_managed_allocations) {
  Buffer plain = device().allocate(kSize, stream());
  stream().sync();
  EXPECT_THROW(ManagedBufferRef{plain}, std::invalid_argument);
  ManagedBufferRef managed = ManagedBufferRef::from_handle(plain.handle(), plain.size());
  EXPECT_THROW(managed.set_read_mostly(true), std::invalid_argument);
  EXPECT_THROW(managed.prefetch(here(), stream()), std::invalid_argument);
  if (discard_supported()) {
    EXPECT_THROW(managed.discard_prefetch(here(), stream()), std::invalid_argument);
  }
}

// cuda.core: prefetch(None) and accessed_by host_numa are ValueErrors. No location does
// not compile here (a Location is required); a NUMA host is refused.
TEST_F(test_managed_ops, test_managed_memory_operation_validation) {
  static_assert(!std::is_convertible_v<std::nullopt_t, Location>);
  require(false);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  ManagedBufferRef managed(buffer);
  EXPECT_THROW(managed.add_accessed_by(Host::numa(0)), std::invalid_argument);
}

TEST_F(test_managed_ops, test_managed_memory_advise_location_validation) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  EXPECT_NO_THROW(managed.set_read_mostly(true));
  EXPECT_NO_THROW(managed.set_preferred_location(here()));
  EXPECT_NO_THROW(managed.set_preferred_location(Location(Host{})));
  EXPECT_THROW(managed.add_accessed_by(Host::numa(0)), std::invalid_argument);
  EXPECT_THROW(managed.add_accessed_by(Host::numa_current()), std::invalid_argument);
  EXPECT_NO_THROW(managed.set_preferred_location(Location(Host{})));
  EXPECT_NO_THROW(managed.set_preferred_location(Location(Device(0))));
}

// ---- TestHost (no GPU) ----

TEST(TestHost, test_default) {
  const Host host{};
  EXPECT_FALSE(host.numa_id.has_value());
  EXPECT_FALSE(host.current_numa);
}

TEST(TestHost, test_numa) {
  const Host host = Host::numa(3);
  EXPECT_EQ(host.numa_id, 3);
  EXPECT_FALSE(host.current_numa);
}

TEST(TestHost, test_numa_current) {
  const Host host = Host::numa_current();
  EXPECT_TRUE(host.current_numa);
  EXPECT_FALSE(host.numa_id.has_value());
}

// cuda.core refuses Host(numa_id=-1) when made; cuwrap's Host is an aggregate, refused
// where it becomes a driver location.
TEST(TestHost, test_invalid_numa_id) {
  EXPECT_THROW(static_cast<void>(cuwrap::detail::to_cu_location(Host::numa(-1))),
               std::invalid_argument);
}

TEST(TestHost, test_eq_hash) {
  EXPECT_EQ(Host{}, Host{});
  EXPECT_EQ(Host::numa(1), Host::numa(1));
  EXPECT_NE(Host{}, Host::numa(0));
  EXPECT_NE(Host::numa_current(), Host{});
}

// ---- TestLocationCoerce: cuda.core's _coerce_location is cuwrap's to_cu_location ----

class TestLocationCoerce : public cuwrap::testing::DeviceTest {};

TEST_F(TestLocationCoerce, test_device_passthrough) {
  const CUmemLocation spec = cuwrap::detail::to_cu_location(Location(device()));
  EXPECT_EQ(spec.type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(spec.id, device().handle());
}

TEST(TestLocationCoerce_cpu, test_host_passthrough) {
  EXPECT_EQ(cuwrap::detail::to_cu_location(Host{}).type, CU_MEM_LOCATION_TYPE_HOST);
}

TEST(TestLocationCoerce_cpu, test_host_numa_passthrough) {
  const CUmemLocation spec = cuwrap::detail::to_cu_location(Host::numa(3));
  EXPECT_EQ(spec.type, CU_MEM_LOCATION_TYPE_HOST_NUMA);
  EXPECT_EQ(spec.id, 3);
}

TEST(TestLocationCoerce_cpu, test_host_numa_current_passthrough) {
  EXPECT_EQ(cuwrap::detail::to_cu_location(Host::numa_current()).type,
            CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
}

// Where a location is required, no location does not compile; where it is optional
// (the preferred location), std::nullopt says none.
template <class T>
concept Prefetchable = requires(const ManagedBufferRef& managed, T location,
                                cuwrap::StreamRef stream) {
  managed.prefetch(location, stream);
};
template <class T>
concept Preferable = requires(ManagedBufferRef& managed, T location) {
  managed.set_preferred_location(location);
};
TEST(TestLocationCoerce_cpu, test_none_when_disallowed) {
  EXPECT_FALSE(Prefetchable<std::nullopt_t>);
  EXPECT_FALSE(Prefetchable<std::nullptr_t>);
  EXPECT_TRUE(Prefetchable<Host>);
}

TEST(TestLocationCoerce_cpu, test_none_when_allowed) {
  EXPECT_TRUE(Preferable<std::nullopt_t>);
  EXPECT_TRUE(Preferable<Location>);
}

TEST(TestLocationCoerce_cpu, test_int_rejected) {
  EXPECT_FALSE((std::is_convertible_v<int, Location>));
  EXPECT_FALSE(Prefetchable<int>);
}

TEST(TestLocationCoerce_cpu, test_bad_type) {
  EXPECT_FALSE((std::is_convertible_v<std::string, Location>));
  EXPECT_FALSE(Prefetchable<const char*>);
}

// ---- batches ----

template <class T>
concept BatchOf = requires(cuwrap::StreamRef stream, T buffers) {
  managed_memory::discard_batch(buffers, stream);
};

class TestPrefetchBatch : public ManagedTest {};

TEST_F(TestPrefetchBatch, test_same_location) {
  require(false);
  if (IsSkipped())
    return;
  const std::vector<Buffer> buffers = allocate_n(3);
  const std::vector<Location> locations(3, here());
  prefetch_batch_and_sync(buffers, locations);
  expect_all_prefetched_here(buffers);
}

TEST_F(TestPrefetchBatch, test_per_buffer_location) {
  require(false);
  if (IsSkipped())
    return;
  const std::vector<Buffer> buffers = allocate_n(2);
  const std::vector<Location> locations{Location(Host{}), here()};
  prefetch_batch_and_sync(buffers, locations);
  EXPECT_EQ(ManagedBufferRef(buffers[0]).last_prefetch_location(), Location(Host{}));
  EXPECT_EQ(ManagedBufferRef(buffers[1]).last_prefetch_location(), here());
}

TEST_F(TestPrefetchBatch, test_length_mismatch) {
  require(false);
  if (IsSkipped())
    return;
  const std::vector<Buffer> buffers = allocate_n(2);
  const std::vector<Location> one{Location(Host{})};
  EXPECT_THROW(managed_memory::prefetch_batch(pointers(buffers), one, stream()),
               std::invalid_argument);
}

// cuda.core: a single Buffer for the sequence is a TypeError; it does not compile here.
TEST(TestPrefetchBatch_cpu, test_rejects_single_buffer) {
  EXPECT_FALSE(BatchOf<const Buffer&>);
  EXPECT_FALSE(BatchOf<const Buffer*>);
  EXPECT_TRUE(BatchOf<std::span<const Buffer* const>>);
}

class TestDiscardBatch : public ManagedTest {};

TEST_F(TestDiscardBatch, test_basic) {
  require(false, true);
  if (IsSkipped())
    return;
  const std::vector<Buffer> buffers = allocate_n(3);
  const std::vector<Location> locations(3, here());
  prefetch_batch_and_sync(buffers, locations);
  EXPECT_NO_THROW(managed_memory::discard_batch(pointers(buffers), stream()));
  stream().sync();
}

TEST(TestDiscardBatch_cpu, test_rejects_single_buffer) {
  EXPECT_FALSE(BatchOf<const Buffer&>);
  EXPECT_FALSE(BatchOf<Buffer>);
}

class TestDiscardPrefetchBatch : public ManagedTest {};

TEST_F(TestDiscardPrefetchBatch, test_same_location) {
  require(false, true);
  if (IsSkipped())
    return;
  const std::vector<Buffer> buffers = allocate_n(2);
  prefetch_batch_and_sync(buffers, std::vector<Location>(2, Location(Host{})));
  managed_memory::discard_prefetch_batch(pointers(buffers), std::vector<Location>(2, here()),
                                         stream());
  stream().sync();
  expect_all_prefetched_here(buffers);
}

TEST_F(TestDiscardPrefetchBatch, test_length_mismatch) {
  require(false);
  if (IsSkipped())
    return;
  const std::vector<Buffer> buffers = allocate_n(2);
  const std::vector<Location> one{Location(Host{})};
  EXPECT_THROW(managed_memory::discard_prefetch_batch(pointers(buffers), one, stream()),
               std::invalid_argument);
}

template <class T>
concept DiscardPrefetchBatchOf = requires(cuwrap::StreamRef stream, T buffers,
                                          std::span<const Location> locations) {
  managed_memory::discard_prefetch_batch(buffers, locations, stream);
};
TEST(TestDiscardPrefetchBatch_cpu, test_rejects_single_buffer) {
  EXPECT_FALSE(DiscardPrefetchBatchOf<const Buffer&>);
  EXPECT_TRUE(DiscardPrefetchBatchOf<std::span<const Buffer* const>>);
}

// ---- TestManagedBuffer ----

class TestManagedBuffer : public ManagedTest {};

TEST_F(TestManagedBuffer, test_allocate_returns_managed_buffer) {
  require(false);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  const ManagedBufferRef managed(buffer);
  EXPECT_EQ(managed.handle(), buffer.handle());
  EXPECT_EQ(managed.size(), buffer.size());
}

TEST_F(TestManagedBuffer, test_from_handle) {
  require(false);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  const ManagedBufferRef managed = plain.ref();
  EXPECT_EQ(managed.size(), kSize);
  EXPECT_EQ(managed.handle(), plain.handle());
}

TEST_F(TestManagedBuffer, test_read_mostly_roundtrip) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  EXPECT_FALSE(managed.read_mostly());
  managed.set_read_mostly(true);
  EXPECT_TRUE(managed.read_mostly());
  managed.set_read_mostly(false);
  EXPECT_FALSE(managed.read_mostly());
}

TEST_F(TestManagedBuffer, test_preferred_location_roundtrip) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  managed.set_preferred_location(here());
  EXPECT_EQ(managed.preferred_location(), here());
  managed.set_preferred_location(Location(Host{}));
  EXPECT_EQ(managed.preferred_location(), Location(Host{}));
  managed.set_preferred_location(std::nullopt);
  EXPECT_EQ(managed.preferred_location(), std::nullopt);
}

TEST_F(TestManagedBuffer, test_preferred_location_roundtrip_host_numa) {
  require(true);
  if (IsSkipped())
    return;
  if (cuwrap::bindings_version() < 13000) {
    GTEST_SKIP() << "Host::numa(N) round-trips with CUDA 13 bindings";
  }
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  try {
    managed.set_preferred_location(Location(Host::numa(0)));
  } catch (const cuwrap::DriverError& e) {
    GTEST_SKIP() << "the driver refuses a NUMA host preferred location: " << e.what();
  }
  const std::optional<Location> got = managed.preferred_location();
  if (!got || *got != Location(Host::numa(0))) {
    GTEST_SKIP() << "the driver or hardware does not keep a NUMA host preferred location";
  }
  EXPECT_EQ(*got, Location(Host::numa(0)));
}

TEST_F(TestManagedBuffer, test_accessed_by_add_discard) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  const auto has_device = [&] {
    const std::vector<Device> by = managed.accessed_by();
    return std::find(by.begin(), by.end(), device()) != by.end();
  };
  EXPECT_FALSE(has_device());
  managed.add_accessed_by(here());
  EXPECT_TRUE(has_device());
  managed.discard_accessed_by(here());
  EXPECT_FALSE(has_device());
}

// cuda.core's AccessedBySet (len, iteration, equality) is a std::vector<Device> here.
TEST_F(TestManagedBuffer, test_accessed_by_read_methods) {
  require(true);
  if (IsSkipped())
    return;
  const ExternalManaged plain;
  ManagedBufferRef managed = plain.ref();
  EXPECT_TRUE(managed.accessed_by().empty());
  managed.add_accessed_by(here());
  EXPECT_EQ(managed.accessed_by(), std::vector<Device>{device()});
  EXPECT_EQ(managed.accessed_by(), managed.accessed_by());
}

TEST_F(TestManagedBuffer, test_instance_prefetch) {
  require(false);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  const ManagedBufferRef managed(buffer);
  expect_prefetched(managed, here());
}

TEST_F(TestManagedBuffer, test_instance_discard) {
  require(false, true);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  const ManagedBufferRef managed(buffer);
  prefetch_and_sync(managed, here());
  EXPECT_NO_THROW(managed.discard(stream()));
  stream().sync();
}

TEST_F(TestManagedBuffer, test_instance_discard_prefetch) {
  require(true, true);
  if (IsSkipped())
    return;
  const Buffer buffer = allocate();
  const ManagedBufferRef managed(buffer);
  expect_discard_prefetched_here(managed);
}

}  // namespace
