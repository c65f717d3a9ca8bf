// ContextRef, ScopedCurrentContext, the hashes and the argument checks of the context,
// device and stream settings that refuse before any driver call: run without a GPU (the
// handles are made up and never reach the driver).
#include <cuwrap/buffer.hpp>
#include <cuwrap/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace {

template <class T>
T fake_handle(std::uintptr_t bits) {
  return reinterpret_cast<T>(bits);
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

TEST(ContextRefNoGpu, RefusesANullContext) {
  try {
    const cuwrap::ContextRef ref(static_cast<CUcontext>(nullptr));
    FAIL() << "a null CUcontext was accepted: " << ref.handle();
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "null")) << e.what();
  }
}

TEST(ContextRefNoGpu, IsATriviallyCopyableHandle) {
  EXPECT_TRUE(std::is_trivially_copyable_v<cuwrap::ContextRef>);
  EXPECT_EQ(sizeof(cuwrap::ContextRef), sizeof(CUcontext));
  const auto handle = fake_handle<CUcontext>(0x1000);
  const cuwrap::ContextRef ref(handle);
  EXPECT_EQ(ref.handle(), handle);
  // A Context is a ContextRef; ScopedCurrentContext is move-only.
  EXPECT_TRUE((std::is_base_of_v<cuwrap::ContextRef, cuwrap::Context>));
  EXPECT_FALSE(std::is_copy_constructible_v<cuwrap::ScopedCurrentContext>);
  EXPECT_TRUE(std::is_move_constructible_v<cuwrap::ScopedCurrentContext>);
}

TEST(ContextRefNoGpu, EqualityAndHashFollowTheHandle) {
  const cuwrap::ContextRef a(fake_handle<CUcontext>(0x1000));
  const cuwrap::ContextRef same(fake_handle<CUcontext>(0x1000));
  const cuwrap::ContextRef other(fake_handle<CUcontext>(0x2000));
  EXPECT_EQ(a, same);
  EXPECT_NE(a, other);
  EXPECT_EQ(std::hash<cuwrap::ContextRef>{}(a), std::hash<cuwrap::ContextRef>{}(same));
  std::unordered_map<cuwrap::ContextRef, int> counts;
  ++counts[a];
  ++counts[same];
  ++counts[other];
  EXPECT_EQ(counts.size(), 2U);
  EXPECT_EQ(counts.at(a), 2);
}

TEST(StreamRefNoGpu, EqualityAndHashKeyUnorderedContainers) {
  const cuwrap::StreamRef a(fake_handle<CUstream>(0x3000));
  const cuwrap::StreamRef same(fake_handle<CUstream>(0x3000));
  std::unordered_set<cuwrap::StreamRef> set{a, same, cuwrap::kLegacyDefaultStream,
                                            cuwrap::kPerThreadDefaultStream};
  EXPECT_EQ(set.size(), 3U);
  EXPECT_EQ(set.count(cuwrap::StreamRef(fake_handle<CUstream>(0x3000))), 1U);
  EXPECT_EQ(set.count(cuwrap::StreamRef(fake_handle<CUstream>(0x4000))), 0U);
}

TEST(EventRefNoGpu, EqualityAndHashKeyUnorderedContainers) {
  const cuwrap::EventRef a(fake_handle<CUevent>(0x5000));
  const cuwrap::EventRef b(fake_handle<CUevent>(0x6000));
  std::unordered_set<cuwrap::EventRef> set{a, b, cuwrap::EventRef(fake_handle<CUevent>(0x5000))};
  EXPECT_EQ(set.size(), 2U);
  EXPECT_EQ(set.count(a), 1U);
}

TEST(DeviceNoGpu, FromPciBusIdRefusesAnEmptyIdBeforeTheDriver) {
  try {
    static_cast<void>(cuwrap::Device::from_pci_bus_id(""));
    FAIL() << "an empty PCI bus id was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "pci_bus_id")) << e.what();
  }
  EXPECT_THROW(static_cast<void>(cuwrap::Device::from_pci_bus_id(std::string("00\0:1", 5))),
               std::invalid_argument);
}

TEST(StreamRefNoGpu, SynchronizationPolicyOutsideTheEnumIsRefused) {
  const cuwrap::StreamRef stream(fake_handle<CUstream>(0x3000));
  try {
    stream.set_synchronization_policy(static_cast<CUsynchronizationPolicy>(0));
    FAIL() << "policy 0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "policy 0")) << e.what();
  }
}

TEST(StreamRefNoGpu, AccessPolicyWindowArgumentsAreCheckedBeforeTheDriver) {
  const cuwrap::StreamRef stream(fake_handle<CUstream>(0x3000));
  const cuwrap::BufferRef window(0x10000, 4096);
  EXPECT_THROW(stream.set_access_policy_window(cuwrap::BufferRef(0, 0), 1.0F),
               std::invalid_argument);
  for (const float ratio : {-0.5F, 1.5F, std::numeric_limits<float>::quiet_NaN()}) {
    try {
      stream.set_access_policy_window(window, ratio);
      FAIL() << "hit_ratio " << ratio << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "hit_ratio")) << e.what();
    }
  }
  try {
    stream.set_access_policy_window(window, 0.5F, CU_ACCESS_PROPERTY_PERSISTING,
                                    CU_ACCESS_PROPERTY_PERSISTING);
    FAIL() << "a persisting miss property was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "miss")) << e.what();
  }
  // 3: within the enum's range (0..3), yet no CU_ACCESS_PROPERTY_* value.
  EXPECT_THROW(stream.set_access_policy_window(window, 0.5F, static_cast<CUaccessProperty>(3)),
               std::invalid_argument);
}

}  // namespace
