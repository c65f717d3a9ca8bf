// Memory resources and Buffer, mirroring cuda.core's test_memory.py: every resource
// allocates, copies (random data, every byte checked), fills and frees; host memory is
// written by the host and read by the device; from_handle never frees; move and close
// semantics; errors; and two threads allocating, copying and freeing concurrently.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::BufferRef;
using cuwrap::Device;
using cuwrap::DeviceMemoryResource;
using cuwrap::MemoryResource;
using cuwrap::Stream;
using cuwrap::StreamRef;
using cuwrap::testing::first_difference;
using cuwrap::testing::random_bytes;
using cuwrap::testing::read_back;
using cuwrap::testing::TestKernels;

static_assert(cuwrap::testing::NothrowMoveOnly<Buffer>);

std::uint64_t pool_used(CUmemoryPool pool) {
  cuuint64_t used = 0;
  cuwrap::driver::cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  return used;
}

class MemoryTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  // Round-trip random data through `buffer` from and to the host; check every byte.
  void expect_round_trip(BufferRef buffer, unsigned seed) const {
    const auto data = random_bytes(buffer.size(), seed);
    buffer.copy_from(std::span<const std::byte>(data), stream());
    const auto back = read_back(buffer, stream());
    EXPECT_EQ(first_difference(data, back), -1);
  }
};

// ---- DeviceMemoryResource and Buffer basics ------------------------------------------

TEST_F(MemoryTest, DeviceResourceProperties) {
  DeviceMemoryResource mr(device());
  EXPECT_TRUE(mr.is_device_accessible());
  EXPECT_FALSE(mr.is_host_accessible());
  EXPECT_EQ(mr.device_id(), 0);
  EXPECT_FALSE(mr.is_own_pool());
  EXPECT_EQ(mr.handle(), cuwrap::driver::cuDeviceGetDefaultMemPool(device().handle()));
  Buffer buffer = mr.allocate(1000, stream());
  EXPECT_EQ(buffer.size(), 1000u);
  EXPECT_NE(buffer.handle(), 0u);
  EXPECT_EQ(buffer.memory_resource(), &mr);
  EXPECT_EQ(buffer.device_id(), 0);
  EXPECT_TRUE(buffer.is_device_accessible());
  EXPECT_FALSE(buffer.is_host_accessible());
  EXPECT_THROW(static_cast<void>(buffer.host_span()), std::logic_error);
  buffer.close(stream());
}

TEST_F(MemoryTest, DefaultPoolKeepsFreedMemory) {
  // As cuda.core: the default pool's release threshold is raised from 0.
  DeviceMemoryResource mr(device());
  cuuint64_t threshold = 0;
  cuwrap::driver::cuMemPoolGetAttribute(mr.handle(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  EXPECT_GT(threshold, 0u);
}

TEST_F(MemoryTest, HostRoundTripEveryByte) {
  for (std::size_t size : {std::size_t{1}, std::size_t{4096}, std::size_t{(1 << 20) + 7}}) {
    Buffer buffer = device().allocate(size, stream());
    expect_round_trip(buffer, static_cast<unsigned>(size));
  }
}

TEST_F(MemoryTest, RangeOverloadsCopyTypedHostData) {
  std::vector<float> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = 0.5f + static_cast<float>(i) * 1.25f;
  }
  Buffer buffer = device().allocate(values.size() * sizeof(float), stream());
  buffer.copy_from(values, stream());
  std::vector<float> back(values.size(), -1.0f);
  buffer.copy_to(back, stream());
  stream().sync();
  EXPECT_EQ(values, back);
}

TEST_F(MemoryTest, DeviceToDeviceCopies) {
  const auto data = random_bytes(3 * 1024 * 1024 + 5, 11);
  Buffer a = device().allocate(data.size(), stream());
  Buffer b = device().allocate(data.size(), stream());
  Buffer c = device().allocate(data.size(), stream());
  a.copy_from(std::span<const std::byte>(data), stream());
  a.copy_to(b, stream());
  c.copy_from(b, stream());
  const auto back = read_back(c, stream());
  EXPECT_EQ(first_difference(data, back), -1);
}

TEST_F(MemoryTest, CopyBetweenDifferentSizesThrowsNamingBoth) {
  Buffer a = device().allocate(1024, stream());
  Buffer b = device().allocate(2048, stream());
  try {
    a.copy_to(b, stream());
    FAIL() << "copy between 1024 and 2048 bytes did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1024 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2048 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b.copy_from(a, stream()), std::invalid_argument);
  std::vector<std::byte> host(1000);
  EXPECT_THROW(a.copy_from(std::span<const std::byte>(host), stream()), std::invalid_argument);
}

TEST_F(MemoryTest, FillPatternsOf8And16And32Bits) {
  const std::size_t size = 4096 + 12;
  Buffer buffer = device().allocate(size, stream());
  std::vector<std::byte> back(size);

  buffer.fill(std::uint8_t{0xA7}, stream());
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_EQ(back[i], std::byte{0xA7}) << i;
  }

  buffer.fill(std::uint16_t{0xBEEF}, stream());
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  for (std::size_t i = 0; i < size; i += 2) {
    std::uint16_t word = 0;
    std::memcpy(&word, &back[i], 2);
    ASSERT_EQ(word, 0xBEEF) << i;
  }

  buffer.fill(std::uint32_t{0x12345678u}, stream());
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  for (std::size_t i = 0; i < size; i += 4) {
    std::uint32_t word = 0;
    std::memcpy(&word, &back[i], 4);
    ASSERT_EQ(word, 0x12345678u) << i;
  }

  buffer.fill(0x3C, 1, stream());  // the width said, as cuda.core's fill(value, width)
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_EQ(back[i], std::byte{0x3C}) << i;
  }
}

// cuda.core's fill(value) fills bytes: its example checks bytes([42]) * size.
TEST_F(MemoryTest, FillWithAnIntOrACharFillsBytes) {
  const std::size_t size = 1024 + 3;
  Buffer buffer = device().allocate(size, stream());
  std::vector<std::byte> back(size);
  buffer.fill(42, stream());
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_EQ(back[i], std::byte{42}) << i;
  }
  buffer.fill('b', stream());
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_EQ(back[i], std::byte{'b'}) << i;
  }
  buffer.fill(255, cuwrap::StreamRef(stream()));
  buffer.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  EXPECT_EQ(back.front(), std::byte{0xFF});
  EXPECT_EQ(back.back(), std::byte{0xFF});
  EXPECT_THROW(buffer.fill(256, stream()), std::invalid_argument);
}

TEST_F(MemoryTest, FillRejectsSizesThePatternDoesNotDivide) {
  Buffer odd = device().allocate(7, stream());
  EXPECT_THROW(odd.fill(std::uint16_t{1}, stream()), std::invalid_argument);
  EXPECT_THROW(odd.fill(std::uint32_t{1}, stream()), std::invalid_argument);
  Buffer six = device().allocate(6, stream());
  six.fill(std::uint16_t{1}, stream());
  EXPECT_THROW(six.fill(std::uint32_t{1}, stream()), std::invalid_argument);
  EXPECT_THROW(six.fill(300, 1, stream()), std::invalid_argument);
}

TEST_F(MemoryTest, ZeroByteBuffer) {
  Buffer empty = device().allocate(0, stream());
  EXPECT_EQ(empty.size(), 0u);
  empty.fill(std::uint8_t{1}, stream());
  empty.close(stream());
  EXPECT_FALSE(empty.is_open());
}

// ---- ownership: move, close, from_handle ------------------------------------------------

TEST_F(MemoryTest, MoveCloseAndDoubleCloseFreeExactlyOnce) {
  DeviceMemoryResource mr(device(), {.create_pool = true});
  EXPECT_TRUE(mr.is_own_pool());
  {
    Buffer a = mr.allocate(1 << 20, stream());
    stream().sync();
    EXPECT_GE(pool_used(mr.handle()), std::uint64_t{1} << 20);
    const CUdeviceptr ptr = a.handle();
    Buffer b = std::move(a);
    EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): that is the point
    EXPECT_THROW(static_cast<void>(a.handle()), std::logic_error);
    EXPECT_EQ(b.handle(), ptr);
    a.close();  // NOLINT(bugprone-use-after-move): closed, frees nothing
    Buffer c = mr.allocate(1 << 20, stream());
    c = std::move(b);  // c's memory is freed, b's taken over
    EXPECT_EQ(c.handle(), ptr);
    c.close(stream());
    c.close(stream());
    c.close();
    try {
      c.copy_to(std::span<std::byte>(), stream());
      FAIL() << "copy_to on a closed buffer did not throw";
    } catch (const std::logic_error& e) {
      EXPECT_EQ(std::string(e.what()), "Buffer::copy_to on a closed Buffer");
    }
  }
  stream().sync();
  EXPECT_EQ(pool_used(mr.handle()), 0u);
}

TEST_F(MemoryTest, DestructorFreesOnTheAllocationStream) {
  DeviceMemoryResource mr(device(), {.create_pool = true});
  {
    Buffer a = mr.allocate(4096, stream());
    Buffer b = mr.allocate(8192, cuwrap::kLegacyDefaultStream);
  }
  device().sync();
  EXPECT_EQ(pool_used(mr.handle()), 0u);
}

TEST_F(MemoryTest, FromHandleNeverFrees) {
  const CUdeviceptr raw = cuwrap::driver::cuMemAlloc(4096);
  {
    BufferRef wrapped = BufferRef::from_handle(raw, 4096);
    EXPECT_EQ(wrapped.handle(), raw);
    EXPECT_TRUE(wrapped.is_device_accessible());
    EXPECT_FALSE(wrapped.is_host_accessible());
    EXPECT_EQ(wrapped.device_id(), 0);
    expect_round_trip(wrapped, 21);
  }
  // The memory is still ours: usable, and freeing it succeeds (it was not freed).
  BufferRef again = BufferRef::from_handle(raw, 4096);
  expect_round_trip(again, 22);
  EXPECT_EQ(cuwrap::driver::raw::cuMemFree(raw), CUDA_SUCCESS);
}

TEST_F(MemoryTest, FromHandleOfHostMemory) {
  std::vector<std::byte> host(64, std::byte{1});
  BufferRef wrapped =
      BufferRef::from_handle(reinterpret_cast<CUdeviceptr>(host.data()), host.size());
  EXPECT_TRUE(wrapped.is_host_accessible());
  EXPECT_EQ(wrapped.host_span().data(), host.data());
}

TEST_F(MemoryTest, CustomResourceIsCalledThroughTheBuffer) {
  // A resource whose allocate() wraps raw memory with from_handle(ptr, size, this).
  struct RawResource : MemoryResource {
    Buffer allocate(std::size_t size, StreamRef s) override {
      ++allocations;
      return Buffer::adopt(cuwrap::driver::cuMemAlloc(size), size, this, s);
    }
    void deallocate(CUdeviceptr ptr, std::size_t, StreamRef s) override {
      ++deallocations;
      s.sync();
      cuwrap::driver::cuMemFree(ptr);
    }
    bool is_device_accessible() const override { return true; }
    bool is_host_accessible() const override { return false; }
    int allocations = 0;
    int deallocations = 0;
  } mr;
  {
    Buffer buffer = mr.allocate(10'000, stream());
    EXPECT_EQ(buffer.memory_resource(), &mr);
    EXPECT_EQ(buffer.device_id(), -1);  // the interface's default
    expect_round_trip(buffer, 31);
  }
  EXPECT_EQ(mr.allocations, 1);
  EXPECT_EQ(mr.deallocations, 1);
}

// ---- own pools ---------------------------------------------------------------------------

TEST_F(MemoryTest, OwnPoolWithMaxSizeRefusesMore) {
  DeviceMemoryResource mr(device(), {.max_size = 64u << 20});
  EXPECT_TRUE(mr.is_own_pool());
  EXPECT_NE(mr.handle(), cuwrap::driver::cuDeviceGetDefaultMemPool(device().handle()));
  Buffer fits = mr.allocate(16u << 20, stream());
  expect_round_trip(fits, 41);
  EXPECT_THROW(static_cast<void>(mr.allocate(128u << 20, stream())), cuwrap::DriverError);
}

TEST_F(MemoryTest, OwnPoolReleaseThreshold) {
  DeviceMemoryResource mr(device(), {.create_pool = true, .release_threshold = 1u << 20});
  cuuint64_t threshold = 0;
  cuwrap::driver::cuMemPoolGetAttribute(mr.handle(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  EXPECT_EQ(threshold, 1u << 20);
}

// ---- host-accessible resources ------------------------------------------------------------

// The host writes random bytes into `mr`'s memory; a kernel reads them on the device
// into device memory; the copy back must match every byte.
void expect_host_written_device_read(MemoryResource& mr, const Device& device, const Stream& stream,
                                     unsigned seed) {
  EXPECT_TRUE(mr.is_host_accessible());
  EXPECT_TRUE(mr.is_device_accessible());
  TestKernels kernels(device);
  const auto data = random_bytes((1 << 20) + 3, seed);
  Buffer host = mr.allocate(data.size(), stream);
  stream.sync();  // stream-ordered allocations are usable once the stream gets there
  ASSERT_TRUE(host.is_host_accessible());
  std::span<std::byte> span = host.host_span();
  ASSERT_EQ(span.size(), data.size());
  std::memcpy(span.data(), data.data(), data.size());
  Buffer on_device = device.allocate(data.size(), stream);
  kernels.copy_bytes(stream, host.handle(), on_device.handle(), data.size());
  const auto back = read_back(on_device, stream);
  EXPECT_EQ(first_difference(data, back), -1);
  // And the other way: a kernel adds 3 to every byte in place, the host reads the span.
  kernels.spin_then_add(stream, host.handle(), data.size(), 0, 3);
  stream.sync();
  const std::span<std::byte> after = host.host_span();
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(after[i], static_cast<std::byte>(static_cast<unsigned char>(data[i]) + 3)) << i;
  }
  host.close(stream);
}

TEST_F(MemoryTest, PinnedMemoryWrittenByHostReadByDevice) {
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::PinnedMemoryResource mr;
  expect_host_written_device_read(mr, device(), stream(), 51);
}

TEST_F(MemoryTest, LegacyPinnedMemoryWrittenByHostReadByDevice) {
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::LegacyPinnedMemoryResource mr;
  expect_host_written_device_read(mr, device(), stream(), 52);
}

TEST_F(MemoryTest, ManagedMemoryWrittenByHostReadByDevice) {
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::ManagedMemoryResource mr;
  expect_host_written_device_read(mr, device(), stream(), 53);
}

TEST_F(MemoryTest, PinnedToDeviceCopies) {
  cuwrap::PinnedMemoryResource pinned;
  const auto data = random_bytes(1 << 20, 54);
  Buffer staging = pinned.allocate(data.size(), stream());
  stream().sync();
  std::memcpy(staging.host_span().data(), data.data(), data.size());
  Buffer on_device = device().allocate(data.size(), stream());
  on_device.copy_from(staging, stream());
  Buffer back = pinned.allocate(data.size(), stream());
  back.copy_from(on_device, stream());
  stream().sync();
  const std::span<std::byte> span = back.host_span();
  EXPECT_EQ(first_difference(data, std::vector<std::byte>(span.begin(), span.end())), -1);
}

// Host spans copied into and out of host memory (the buffer is not device memory, so
// no DtoH/HtoD entry point fits it), ordered after device work on the same stream.
void expect_host_buffer_span_copies(MemoryResource& mr, const Device& device, const Stream& stream,
                                    unsigned seed) {
  const auto data = random_bytes((1 << 16) + 5, seed);
  Buffer host = mr.allocate(data.size(), stream);
  host.copy_from(std::span<const std::byte>(data), stream);
  stream.sync();
  const std::span<std::byte> span = host.host_span();
  EXPECT_EQ(first_difference(data, std::vector<std::byte>(span.begin(), span.end())), -1);
  // Device → host buffer → pageable span, no sync between: the last copy must see the first.
  const auto other = random_bytes(data.size(), seed + 1);
  Buffer on_device = device.allocate(data.size(), stream);
  on_device.copy_from(std::span<const std::byte>(other), stream);
  host.copy_from(on_device, stream);
  EXPECT_EQ(first_difference(other, read_back(host, stream)), -1);
}

TEST_F(MemoryTest, PinnedBufferCopiesToAndFromHostSpans) {
  cuwrap::PinnedMemoryResource mr;
  expect_host_buffer_span_copies(mr, device(), stream(), 55);
}

TEST_F(MemoryTest, LegacyPinnedBufferCopiesToAndFromHostSpans) {
  cuwrap::LegacyPinnedMemoryResource mr;
  expect_host_buffer_span_copies(mr, device(), stream(), 57);
}

TEST_F(MemoryTest, ManagedBufferCopiesToAndFromHostSpans) {
  cuwrap::ManagedMemoryResource mr;
  expect_host_buffer_span_copies(mr, device(), stream(), 59);
}

// ---- concurrency ----------------------------------------------------------------------

TEST_F(MemoryTest, TwoThreadsAllocateCopyAndFreeConcurrently) {
  DeviceMemoryResource mr(device(), {.create_pool = true});
  std::atomic<int> verified{0};
  std::atomic<int> failures{0};
  constexpr int kIterations = 200;
  auto worker = [&](unsigned seed) {
    Stream stream = device().create_stream();
    for (int i = 0; i < kIterations; ++i) {
      const std::size_t size = 1 + (seed * 7919u + static_cast<unsigned>(i) * 104729u) % 200'000;
      const auto data = random_bytes(size, seed * 1000u + static_cast<unsigned>(i));
      Buffer a = mr.allocate(size, stream);
      Buffer b = device().allocate(size, stream);
      a.copy_from(std::span<const std::byte>(data), stream);
      b.copy_from(a, stream);
      a.close(stream);
      std::vector<std::byte> back(size);
      b.copy_to(std::span<std::byte>(back), stream);
      b.close(stream);
      stream.sync();
      if (first_difference(data, back) == -1) {
        ++verified;
      } else {
        ++failures;
      }
    }
  };
  std::thread t1(worker, 1u);
  std::thread t2(worker, 2u);
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(verified.load(), 2 * kIterations);
  device().sync();
  EXPECT_EQ(pool_used(mr.handle()), 0u);
}

}  // namespace
