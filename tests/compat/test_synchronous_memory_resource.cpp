// SynchronousMemoryResource without a GPU: the process loads tests/compat/fake_libcuda.cpp
// as libcuda (one device). Allocation is cuMemAlloc in the device's primary context at
// once; a free syncs the buffer's stream, then calls cuMemFree; a zero-byte buffer makes
// no driver call; misuse is refused before the driver.
#include <gtest/gtest.h>
#include <cuwrap/buffer.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/synchronous_memory_resource.hpp>

#include "fake_driver.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

using cuwrap::Buffer;
using cuwrap::SynchronousMemoryResource;
using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

cuwrap::StreamRef fake_stream() {
  return cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5800)));
}

TEST(SynchronousMemoryResourceOnFakeDriver, AllocatesInThePrimaryContextAndFreesAfterASync) {
  ASSERT_TRUE(kFakeInstalled);
  SynchronousMemoryResource mr(0);
  EXPECT_EQ(mr.device_id(), 0);
  EXPECT_TRUE(mr.is_device_accessible());
  EXPECT_FALSE(mr.is_host_accessible());
  const cuwrap::StreamRef stream = fake_stream();
  const int allocs = fake_query<int>("cuwrap_fake_allocs");
  CUdeviceptr ptr = 0;
  {
    const Buffer buffer = mr.allocate(1000, stream);
    EXPECT_EQ(fake_query<int>("cuwrap_fake_allocs"), allocs + 1) << "not allocated at once";
    EXPECT_EQ(fake_query<CUcontext>("cuwrap_fake_alloc_context"),
              fake_query<CUcontext>("cuwrap_fake_context"))
        << "cuMemAlloc ran outside the device's primary context";
    EXPECT_NE(buffer.handle(), CUdeviceptr{0});
    EXPECT_EQ(buffer.size(), 1000U);
    EXPECT_EQ(buffer.memory_resource(), &mr);
    EXPECT_EQ(buffer.device_id(), 0);
    ptr = buffer.handle();
  }
  EXPECT_EQ(fake_query<CUdeviceptr>("cuwrap_fake_last_freed"), ptr);
  EXPECT_EQ(fake_query<CUstream>("cuwrap_fake_last_synced"), stream.handle());
  EXPECT_LT(fake_query<int>("cuwrap_fake_last_sync_sequence"),
            fake_query<int>("cuwrap_fake_last_free_sequence"))
      << "the memory was freed before its stream was synced";
}

TEST(SynchronousMemoryResourceOnFakeDriver, ZeroBytesMakeNoDriverCall) {
  ASSERT_TRUE(kFakeInstalled);
  SynchronousMemoryResource mr(0);
  const cuwrap::StreamRef stream = fake_stream();
  const int allocs = fake_query<int>("cuwrap_fake_allocs");
  const int frees = fake_query<int>("cuwrap_fake_last_free_sequence");
  {
    const Buffer buffer = mr.allocate(0, stream);
    EXPECT_EQ(buffer.handle(), CUdeviceptr{0});
    EXPECT_EQ(buffer.size(), 0U);
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_allocs"), allocs);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_last_free_sequence"), frees);
}

TEST(SynchronousMemoryResourceOnFakeDriver, BufferOutlivingTheResourceStillFrees) {
  ASSERT_TRUE(kFakeInstalled);
  const cuwrap::StreamRef stream = fake_stream();
  std::optional<Buffer> buffer;
  {
    SynchronousMemoryResource mr(0);
    buffer.emplace(mr.allocate(64, stream));
  }
  EXPECT_EQ(buffer->memory_resource(), nullptr);
  const CUdeviceptr ptr = buffer->handle();
  buffer.reset();
  EXPECT_EQ(fake_query<CUdeviceptr>("cuwrap_fake_last_freed"), ptr);
}

TEST(SynchronousMemoryResourceOnFakeDriver, ClosedResourceAndUnknownDevicesAreRefused) {
  ASSERT_TRUE(kFakeInstalled);
  SynchronousMemoryResource mr(0);
  EXPECT_TRUE(mr.is_open());
  mr.close();
  mr.close();  // idempotent
  EXPECT_FALSE(mr.is_open());
  const int allocs = fake_query<int>("cuwrap_fake_allocs");
  try {
    static_cast<void>(mr.allocate(16, fake_stream()));
    ADD_FAILURE() << "a closed SynchronousMemoryResource allocated";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_allocs"), allocs);
  for (const int ordinal : {-1, 1}) {  // the fake has one device
    try {
      const SynchronousMemoryResource other(ordinal);
      ADD_FAILURE() << "device " << ordinal << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("device " + std::to_string(ordinal)), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
