// Device and DeviceProperties, mirroring cuda.core's test_device.py: identity,
// names and ids agree with the driver, properties agree with attribute(), contexts,
// peers, the per-device memory resource, and every device (not only device 0).
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "gpu.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <cstdio>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Device;

static_assert(std::is_trivially_copyable_v<Device>, "Device is a cheap value");
static_assert(std::is_copy_constructible_v<Device> && std::is_copy_assignable_v<Device>);

TEST(Device, CountMatchesDriver) {
  CUWRAP_REQUIRE_GPU();
  EXPECT_EQ(Device::count(), cuwrap::driver::cuDeviceGetCount());
  EXPECT_GE(Device::count(), 1);
}

TEST(Device, AllListsEveryOrdinalInOrder) {
  CUWRAP_REQUIRE_GPU();
  const std::vector<Device> all = Device::all();
  ASSERT_EQ(static_cast<int>(all.size()), Device::count());
  for (int i = 0; i < static_cast<int>(all.size()); ++i) {
    EXPECT_EQ(all[static_cast<std::size_t>(i)].device_id(), i);
    EXPECT_EQ(all[static_cast<std::size_t>(i)], Device(i));
  }
}

TEST(Device, DefaultIsDeviceZero) {
  CUWRAP_REQUIRE_GPU();
  EXPECT_EQ(Device().device_id(), 0);
  EXPECT_EQ(Device(), Device(0));
  EXPECT_EQ(Device(0).handle(), cuwrap::driver::cuDeviceGet(0));
}

TEST(Device, OrdinalOutOfRangeThrowsWithOrdinalAndCount) {
  CUWRAP_REQUIRE_GPU();
  const int n = Device::count();
  try {
    Device device(n);
    FAIL() << "Device(" << n << ") did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device " + std::to_string(n) + " does not exist"), std::string::npos)
        << what;
    EXPECT_NE(what.find(std::to_string(n) + " CUDA device"), std::string::npos) << what;
  }
  EXPECT_THROW(Device(-1), std::invalid_argument);
  EXPECT_THROW(Device(n + 100), std::invalid_argument);
}

TEST(Device, NameMatchesDriver) {
  CUWRAP_REQUIRE_GPU();
  for (const Device& device : Device::all()) {
    const std::string name = device.name();
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name, cuwrap::driver::cuDeviceGetName(device.handle()));
  }
}

TEST(Device, ComputeCapabilityAndArch) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  const cuwrap::ComputeCapability cc = device.compute_capability();
  EXPECT_EQ(cc.major, device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  EXPECT_EQ(cc.minor, device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  EXPECT_GE(cc.major, 5);
  EXPECT_EQ(device.arch(), std::to_string(cc.major) + std::to_string(cc.minor));
  EXPECT_EQ(cc, (cuwrap::ComputeCapability{cc.major, cc.minor}));
  EXPECT_NE(cc, (cuwrap::ComputeCapability{cc.major + 1, cc.minor}));
  EXPECT_LT(cc, (cuwrap::ComputeCapability{cc.major + 1, 0}));
  std::ostringstream os;
  os << cc;
  EXPECT_EQ(os.str(), std::to_string(cc.major) + "." + std::to_string(cc.minor));
}

TEST(Device, UuidIsFormattedAsCudaCoreDoes) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  const std::string uuid = device.uuid();
  EXPECT_TRUE(std::regex_match(
      uuid, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")))
      << uuid;
  // The hex digits are the driver's bytes, in order.
  const CUuuid raw = cuwrap::driver::cuDeviceGetUuid(device.handle());
  std::string hex;
  for (char byte : raw.bytes) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(static_cast<unsigned char>(byte)));
    hex += two;
  }
  std::string digits = uuid;
  std::erase(digits, '-');
  EXPECT_EQ(digits, hex);
  if (Device::count() > 1) {
    EXPECT_NE(Device(0).uuid(), Device(1).uuid());
  }
}

TEST(Device, PciBusIdMatchesAttributes) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  const std::string id = device.pci_bus_id();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      id, m, std::regex("([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\\.([0-9a-fA-F])")))
      << id;
  EXPECT_EQ(std::stoi(m[1].str(), nullptr, 16),
            device.attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
  EXPECT_EQ(std::stoi(m[2].str(), nullptr, 16), device.attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID));
  EXPECT_EQ(std::stoi(m[3].str(), nullptr, 16),
            device.attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
}

TEST(Device, PropertiesAgreeWithAttribute) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  const cuwrap::DeviceProperties props = device.properties();
  EXPECT_EQ(props.warp_size(), 32);
  EXPECT_EQ(props.multiprocessor_count(),
            device.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  EXPECT_GT(props.multiprocessor_count(), 0);
  EXPECT_EQ(props.max_threads_per_block(),
            device.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  EXPECT_GE(props.max_threads_per_block(), 512);
  EXPECT_EQ(props.memory_pools_supported(),
            device.attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED));
  EXPECT_EQ(props.compute_capability_major(), device.compute_capability().major);

  // Every generated accessor reads its own attribute. Attributes newer than the
  // driver fail the same way through both paths.
  int compared = 0;
#define CUWRAP_DEVICE_ATTRIBUTE(accessor, enumerator)        \
  {                                                          \
    int via_accessor = -1;                                   \
    int via_attribute = -2;                                  \
    bool accessor_threw = false;                             \
    bool attribute_threw = false;                            \
    try {                                                    \
      via_accessor = props.accessor();                       \
    } catch (const cuwrap::DriverError&) {                   \
      accessor_threw = true;                                 \
    }                                                        \
    try {                                                    \
      via_attribute = device.attribute(enumerator);          \
    } catch (const cuwrap::DriverError&) {                   \
      attribute_threw = true;                                \
    }                                                        \
    EXPECT_EQ(accessor_threw, attribute_threw) << #accessor; \
    if (!accessor_threw && !attribute_threw) {               \
      EXPECT_EQ(via_accessor, via_attribute) << #accessor;   \
      ++compared;                                            \
    }                                                        \
  }
#include <cuwrap/detail/device_attributes.inc>
#undef CUWRAP_DEVICE_ATTRIBUTE
  EXPECT_GT(compared, 100);
}

TEST(Device, SetCurrentMakesPrimaryContextCurrent) {
  CUWRAP_REQUIRE_GPU();
  for (const Device& device : Device::all()) {
    device.set_current();
    const CUcontext current = cuwrap::driver::cuCtxGetCurrent();
    EXPECT_EQ(current, device.context());
    EXPECT_EQ(cuwrap::driver::cuCtxGetDevice(), device.handle());
    // The primary context is retained once per process, not once per call.
    EXPECT_EQ(device.context(), cuwrap::detail::primary_context(device.device_id()));
  }
  Device(0).set_current();
}

TEST(Device, OperationsUseTheDevicesContextWhateverIsCurrent) {
  CUWRAP_REQUIRE_GPU();
  // No context current on this fresh thread: operations still work.
  std::thread([] {
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
    const Device device(0);
    cuwrap::Stream stream = device.create_stream();
    EXPECT_EQ(stream.device(), device);
    cuwrap::Buffer buffer = device.allocate(256, stream);
    buffer.fill(std::uint8_t{0x5a}, stream);
    std::vector<std::byte> host(256);
    buffer.copy_to(std::span<std::byte>(host), stream);
    stream.sync();
    for (std::byte b : host) {
      ASSERT_EQ(b, std::byte{0x5a});
    }
  }).join();
}

TEST(Device, CanAccessPeerAgreesWithDriver) {
  CUWRAP_REQUIRE_GPU();
  for (const Device& a : Device::all()) {
    EXPECT_TRUE(a.can_access_peer(a));
    for (const Device& b : Device::all()) {
      if (a != b) {
        EXPECT_EQ(a.can_access_peer(b),
                  cuwrap::driver::cuDeviceCanAccessPeer(a.handle(), b.handle()) != 0);
      }
    }
  }
}

TEST(Device, SyncWaitsForQueuedWork) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  const Device device(0);
  device.set_current();
  cuwrap::testing::TestKernels kernels(device);
  cuwrap::Stream stream = device.create_stream({.nonblocking = false});
  cuwrap::Buffer buffer = device.allocate(4096, stream);
  buffer.fill(std::uint8_t{1}, stream);
  kernels.spin_then_add(stream, buffer.handle(), buffer.size(), 20'000'000, 1);
  device.sync();
  EXPECT_TRUE(stream.is_done());
}

TEST(Device, EqualityAndPrinting) {
  CUWRAP_REQUIRE_GPU();
  const Device a(0);
  const Device b = a;
  EXPECT_EQ(a, b);
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), "<Device 0 (" + a.name() + ")>");
  if (Device::count() > 1) {
    EXPECT_NE(Device(0), Device(1));
  }
}

TEST(Device, MemoryResourceIsOnePerDeviceAndThreadSafe) {
  CUWRAP_REQUIRE_GPU();
  std::vector<std::thread> threads;
  std::vector<const cuwrap::MemoryResource*> seen(8, nullptr);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &Device(0).memory_resource(); });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto* mr : seen) {
    EXPECT_EQ(mr, &Device(0).memory_resource());
  }
  const auto* dmr = dynamic_cast<const cuwrap::DeviceMemoryResource*>(seen[0]);
  ASSERT_NE(dmr, nullptr);
  EXPECT_EQ(dmr->device_id(), 0);
  EXPECT_EQ(dmr->handle(), cuwrap::driver::cuDeviceGetDefaultMemPool(Device(0).handle()));
  for (const Device& device : Device::all()) {
    EXPECT_EQ(device.memory_resource().device_id(), device.device_id());
  }
}

TEST(Device, EveryDeviceAllocatesCopiesAndFills) {
  CUWRAP_REQUIRE_GPU();
  for (const Device& device : Device::all()) {
    cuwrap::Stream stream = device.create_stream();
    EXPECT_EQ(stream.device(), device);
    const auto data =
        cuwrap::testing::random_bytes(100'003, 17u + static_cast<unsigned>(device.device_id()));
    cuwrap::Buffer buffer = device.allocate(data.size(), stream);
    EXPECT_EQ(buffer.device_id(), device.device_id());
    buffer.copy_from(std::span<const std::byte>(data), stream);
    const auto back = cuwrap::testing::read_back(buffer, stream);
    EXPECT_EQ(cuwrap::testing::first_difference(data, back), -1) << "device " << device;
    cuwrap::Event event = device.create_event();
    stream.record(event);
    event.sync();
    EXPECT_EQ(event.device(), device);
  }
}

}  // namespace
