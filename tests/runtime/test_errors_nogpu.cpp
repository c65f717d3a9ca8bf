// Error paths of Device, Stream and Buffer that need no GPU and no driver: closed
// objects, size mismatches and bad ordinals are rejected before any driver call, and
// a missing driver is a LoadError with advice, never a crash.
//
// Nothing here may load the driver, except MissingDriverIsLoadError, which points the
// loader at a library that does not exist first.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::kLegacyDefaultStream;

// Fake device addresses: never dereferenced, the driver is never asked about them.
constexpr CUdeviceptr kFakePointer = 0x7f0000001000ull;
constexpr CUdeviceptr kOtherFakePointer = 0x7f0000100000ull;

template <class F>
std::string logic_error_message(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "<no std::logic_error thrown>";
}

TEST(NoGpuBuffer, ClosedBufferOperationsThrowLogicError) {
  Buffer buffer = Buffer::from_handle(kFakePointer, 64);
  Buffer other = Buffer::from_handle(kOtherFakePointer, 64);
  EXPECT_TRUE(buffer.is_open());
  EXPECT_EQ(buffer.size(), 64u);
  EXPECT_EQ(buffer.handle(), kFakePointer);
  EXPECT_EQ(buffer.memory_resource(), nullptr);

  buffer.close();  // non-owning: frees nothing, touches no driver
  EXPECT_FALSE(buffer.is_open());
  buffer.close();  // idempotent
  buffer.close(kLegacyDefaultStream);

  std::vector<std::byte> host(64);
  EXPECT_EQ(logic_error_message([&] { static_cast<void>(buffer.size()); }),
            "Buffer::size on a closed Buffer");
  EXPECT_EQ(logic_error_message([&] { static_cast<void>(buffer.handle()); }),
            "Buffer::handle on a closed Buffer");
  EXPECT_EQ(logic_error_message([&] { buffer.copy_to(other, kLegacyDefaultStream); }),
            "Buffer::copy_to on a closed Buffer");
  EXPECT_EQ(logic_error_message([&] { buffer.copy_from(other, kLegacyDefaultStream); }),
            "Buffer::copy_from on a closed Buffer");
  EXPECT_EQ(logic_error_message(
                [&] { buffer.copy_from(std::span<const std::byte>(host), kLegacyDefaultStream); }),
            "Buffer::copy_from on a closed Buffer");
  EXPECT_EQ(logic_error_message(
                [&] { buffer.copy_to(std::span<std::byte>(host), kLegacyDefaultStream); }),
            "Buffer::copy_to on a closed Buffer");
  EXPECT_EQ(logic_error_message([&] { buffer.fill(std::uint8_t{1}, kLegacyDefaultStream); }),
            "Buffer::fill on a closed Buffer");
  EXPECT_EQ(logic_error_message([&] { static_cast<void>(buffer.host_span()); }),
            "Buffer::host_span on a closed Buffer");
  // A closed destination or source is named as such.
  EXPECT_NE(logic_error_message([&] {
              other.copy_to(buffer, kLegacyDefaultStream);
            }).find("destination Buffer is closed"),
            std::string::npos);
  EXPECT_NE(logic_error_message([&] {
              other.copy_from(buffer, kLegacyDefaultStream);
            }).find("source Buffer is closed"),
            std::string::npos);
}

TEST(NoGpuBuffer, MovedFromBufferIsClosed) {
  Buffer a = Buffer::from_handle(kFakePointer, 32);
  Buffer b = std::move(a);
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_TRUE(b.is_open());
  EXPECT_EQ(b.handle(), kFakePointer);
  EXPECT_THROW(static_cast<void>(a.handle()), std::logic_error);
  Buffer c = Buffer::from_handle(kOtherFakePointer, 16);
  c = std::move(b);
  EXPECT_EQ(c.handle(), kFakePointer);
  EXPECT_EQ(c.size(), 32u);
  EXPECT_FALSE(b.is_open());  // NOLINT(bugprone-use-after-move)
}

TEST(NoGpuBuffer, SizeMismatchThrowsInvalidArgumentBeforeAnyDriverCall) {
  Buffer small = Buffer::from_handle(kFakePointer, 100);
  Buffer large = Buffer::from_handle(kOtherFakePointer, 200);
  try {
    small.copy_to(large, kLegacyDefaultStream);
    FAIL() << "copy_to between different sizes did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("100 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("200 bytes"), std::string::npos) << what;
  }
  EXPECT_THROW(large.copy_from(small, kLegacyDefaultStream), std::invalid_argument);
  std::vector<std::byte> host(99);
  EXPECT_THROW(small.copy_from(std::span<const std::byte>(host), kLegacyDefaultStream),
               std::invalid_argument);
  EXPECT_THROW(small.copy_to(std::span<std::byte>(host), kLegacyDefaultStream),
               std::invalid_argument);
}

TEST(NoGpuBuffer, FillPatternNeedsMatchingSize) {
  Buffer odd = Buffer::from_handle(kFakePointer, 6);
  EXPECT_THROW(odd.fill(std::uint32_t{7}, kLegacyDefaultStream), std::invalid_argument);
  Buffer three = Buffer::from_handle(kFakePointer, 3);
  EXPECT_THROW(three.fill(std::uint16_t{7}, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(three.fill(256, 1, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(three.fill(-1, 1, kLegacyDefaultStream), std::invalid_argument);
}

// A resource that records what it is asked to free; allocates nothing real.
class RecordingResource : public cuwrap::MemoryResource {
 public:
  Buffer allocate(std::size_t size, const cuwrap::Stream& stream) override {
    return Buffer::from_handle(kFakePointer, size, this, stream);
  }
  void deallocate(CUdeviceptr ptr, std::size_t size, const cuwrap::Stream& /*stream*/) override {
    freed.emplace_back(ptr, size);
  }
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return false; }

  std::vector<std::pair<CUdeviceptr, std::size_t>> freed;
};

TEST(NoGpuBuffer, FromHandleWithResourceFreesExactlyOnce) {
  RecordingResource mr;
  {
    Buffer buffer = Buffer::from_handle(kFakePointer, 48, &mr);
    EXPECT_EQ(buffer.memory_resource(), &mr);
    EXPECT_TRUE(buffer.is_device_accessible());
    EXPECT_FALSE(buffer.is_host_accessible());
    EXPECT_THROW(static_cast<void>(buffer.host_span()), std::logic_error);
    Buffer moved = std::move(buffer);
    buffer.close();  // NOLINT(bugprone-use-after-move): closed, frees nothing
  }
  ASSERT_EQ(mr.freed.size(), 1u);
  EXPECT_EQ(mr.freed[0].first, kFakePointer);
  EXPECT_EQ(mr.freed[0].second, 48u);

  Buffer allocated = mr.allocate(8, kLegacyDefaultStream);
  allocated.close(kLegacyDefaultStream);
  allocated.close();
  EXPECT_EQ(mr.freed.size(), 2u);
}

// A resource whose free fails the way the driver's does.
class FailingResource : public RecordingResource {
 public:
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, const cuwrap::Stream& /*stream*/) override {
    throw cuwrap::DriverError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemFree");
  }
};

TEST(NoGpuBuffer, FailingFreeInCloseGoesToTheReleaseFailureHandler) {
  static std::vector<std::string> reports;
  reports.clear();
  auto previous = cuwrap::set_release_failure_handler([](const cuwrap::ReleaseFailure& failure) {
    reports.push_back(std::string(failure.function) + ' ' + failure.object + ' ' +
                      std::to_string(static_cast<int>(failure.code)));
  });
  FailingResource mr;
  {
    Buffer buffer = mr.allocate(8, kLegacyDefaultStream);
    EXPECT_THROW(buffer.close(kLegacyDefaultStream), cuwrap::DriverError);
    EXPECT_TRUE(buffer.is_open());  // nothing was freed: the destructor tries again
    EXPECT_TRUE(reports.empty());
  }  // the destructor's free fails too: reported, not thrown
  cuwrap::set_release_failure_handler(std::move(previous));
  EXPECT_EQ(reports, std::vector<std::string>{"cuMemFree Buffer " +
                                               std::to_string(static_cast<int>(CUDA_ERROR_OUT_OF_MEMORY))});
}

TEST(NoGpuStream, DefaultStreamConstantsNeedNoDriver) {
  EXPECT_EQ(cuwrap::kLegacyDefaultStream.handle(), CU_STREAM_LEGACY);
  EXPECT_EQ(cuwrap::kPerThreadDefaultStream.handle(), CU_STREAM_PER_THREAD);
  EXPECT_EQ(&cuwrap::legacy_default_stream(), &cuwrap::kLegacyDefaultStream);
  EXPECT_FALSE(cuwrap::kLegacyDefaultStream.is_owning());
  cuwrap::Stream legacy = cuwrap::Stream::from_handle(CU_STREAM_LEGACY);
  EXPECT_EQ(legacy.handle(), CU_STREAM_LEGACY);
  EXPECT_FALSE(legacy.is_owning());
}

TEST(NoGpuStream, ClosedStreamThrowsLogicError) {
  cuwrap::Stream stream = cuwrap::Stream::from_handle(CU_STREAM_PER_THREAD);
  stream.close();
  stream.close();  // idempotent
  EXPECT_EQ(logic_error_message([&] { stream.sync(); }), "Stream::sync on a closed Stream");
  EXPECT_EQ(logic_error_message([&] { static_cast<void>(stream.handle()); }),
            "Stream::handle on a closed Stream");
  EXPECT_THROW(static_cast<void>(stream.is_done()), std::logic_error);
  EXPECT_THROW(static_cast<void>(stream.record()), std::logic_error);
  // A buffer operation on a closed stream fails on the stream, before the driver.
  Buffer buffer = Buffer::from_handle(kFakePointer, 4);
  EXPECT_THROW(buffer.fill(std::uint8_t{1}, stream), std::logic_error);
}

TEST(NoGpuDevice, NegativeOrdinalThrowsInvalidArgument) {
  try {
    cuwrap::Device device(-1);
    FAIL() << "Device(-1) did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("device -1"), std::string::npos) << e.what();
  }
}

TEST(NoGpuDevice, MissingDriverIsLoadError) {
  // Point the loader at a driver that does not exist. This only works while the
  // driver has not been opened in this process (ctest runs each test on its own).
  ::setenv("CUWRAP_LIBCUDA", "/nonexistent/cuwrap-test/libcuda.so.1", 1);
  try {
    const int n = cuwrap::Device::count();
    GTEST_SKIP() << "the driver was already loaded in this process (" << n << " devices)";
  } catch (const cuwrap::LoadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("libcuda"), std::string::npos) << what;
    EXPECT_NE(what.find("CUWRAP_LIBCUDA"), std::string::npos) << what;
    EXPECT_TRUE(e.symbol().empty());
  }
  // Still a LoadError (not a crash, not a cached bogus count) on the next call.
  EXPECT_THROW(static_cast<void>(cuwrap::Device::count()), cuwrap::LoadError);
  EXPECT_THROW(cuwrap::Device device(0), cuwrap::LoadError);
  ::unsetenv("CUWRAP_LIBCUDA");
}

}  // namespace
