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

#include "fake_buffer.hpp"

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
constexpr CUdeviceptr kNoGpuFakePointer = 0x7f0000001000ull;
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
  Buffer buffer = cuwrap::testing::fake_buffer(kNoGpuFakePointer, 64);
  Buffer other = cuwrap::testing::fake_buffer(kOtherFakePointer, 64);
  EXPECT_TRUE(buffer.is_open());
  EXPECT_EQ(buffer.size(), 64u);
  EXPECT_EQ(buffer.handle(), kNoGpuFakePointer);
  EXPECT_EQ(buffer.memory_resource(), &cuwrap::testing::no_free_resource());

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
  Buffer a = cuwrap::testing::fake_buffer(kNoGpuFakePointer, 32);
  Buffer b = std::move(a);
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_TRUE(b.is_open());
  EXPECT_EQ(b.handle(), kNoGpuFakePointer);
  EXPECT_THROW(static_cast<void>(a.handle()), std::logic_error);
  Buffer c = cuwrap::testing::fake_buffer(kOtherFakePointer, 16);
  c = std::move(b);
  EXPECT_EQ(c.handle(), kNoGpuFakePointer);
  EXPECT_EQ(c.size(), 32u);
  EXPECT_FALSE(b.is_open());  // NOLINT(bugprone-use-after-move)
}

TEST(NoGpuBuffer, SizeMismatchThrowsInvalidArgumentBeforeAnyDriverCall) {
  Buffer small = cuwrap::testing::fake_buffer(kNoGpuFakePointer, 100);
  Buffer large = cuwrap::testing::fake_buffer(kOtherFakePointer, 200);
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
  Buffer odd = cuwrap::testing::fake_buffer(kNoGpuFakePointer, 6);
  EXPECT_THROW(odd.fill(std::uint32_t{7}, kLegacyDefaultStream), std::invalid_argument);
  Buffer three = cuwrap::testing::fake_buffer(kNoGpuFakePointer, 3);
  EXPECT_THROW(three.fill(std::uint16_t{7}, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(three.fill(256, 1, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(three.fill(-1, 1, kLegacyDefaultStream), std::invalid_argument);
}

// A resource that records what it is asked to free; allocates nothing real.
class RecordingResource : public cuwrap::MemoryResource {
 public:
  Buffer allocate(std::size_t size, cuwrap::StreamRef stream) override {
    return Buffer::adopt(kNoGpuFakePointer, size, this, stream);
  }
  void deallocate(CUdeviceptr ptr, std::size_t size, cuwrap::StreamRef /*stream*/) override {
    freed.emplace_back(ptr, size);
  }
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return false; }

  std::vector<std::pair<CUdeviceptr, std::size_t>> freed;
};

TEST(NoGpuBuffer, FromHandleWithResourceFreesExactlyOnce) {
  RecordingResource mr;
  {
    Buffer buffer = Buffer::adopt(kNoGpuFakePointer, 48, &mr);
    EXPECT_EQ(buffer.memory_resource(), &mr);
    EXPECT_TRUE(buffer.is_device_accessible());
    EXPECT_FALSE(buffer.is_host_accessible());
    EXPECT_THROW(static_cast<void>(buffer.host_span()), std::logic_error);
    Buffer moved = std::move(buffer);
    buffer.close();  // NOLINT(bugprone-use-after-move): closed, frees nothing
  }
  ASSERT_EQ(mr.freed.size(), 1u);
  EXPECT_EQ(mr.freed[0].first, kNoGpuFakePointer);
  EXPECT_EQ(mr.freed[0].second, 48u);

  Buffer allocated = mr.allocate(8, kLegacyDefaultStream);
  allocated.close(kLegacyDefaultStream);
  allocated.close();
  EXPECT_EQ(mr.freed.size(), 2u);
}

// A resource whose free fails the way the driver's does.
class FailingResource : public RecordingResource {
 public:
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/,
                  cuwrap::StreamRef /*stream*/) override {
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
  cuwrap::set_release_failure_handler(previous);
  EXPECT_EQ(reports,
            std::vector<std::string>{"cuMemFree Buffer " +
                                     std::to_string(static_cast<int>(CUDA_ERROR_OUT_OF_MEMORY))});
}

// A user resource whose deallocate throws `make()`'s exception.
template <class Make>
class ThrowingResource : public RecordingResource {
 public:
  explicit ThrowingResource(Make make) : make_(make) {}
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/,
                  cuwrap::StreamRef /*stream*/) override {
    make_();
  }

 private:
  Make make_;
};

// What a handler saw, copied (the failure's pointers live only during the call).
struct SeenFailure {
  CUresult code;
  std::string function;
  std::string object;
  cuwrap::ReleaseFailureKind kind;
  int status;
  std::string message;  // "<null>" for a nullptr message
};

std::vector<SeenFailure>& seen_failures() {
  static std::vector<SeenFailure> seen;
  return seen;
}

// Record every report while alive; restores the previous handler.
class RecordReleaseFailures {
 public:
  RecordReleaseFailures() {
    seen_failures().clear();
    previous_ = cuwrap::set_release_failure_handler([](const cuwrap::ReleaseFailure& f) {
      seen_failures().push_back({f.code, f.function, f.object, f.kind, f.status,
                                 f.message != nullptr ? f.message : "<null>"});
    });
  }
  RecordReleaseFailures(const RecordReleaseFailures&) = delete;
  RecordReleaseFailures& operator=(const RecordReleaseFailures&) = delete;
  ~RecordReleaseFailures() { cuwrap::set_release_failure_handler(previous_); }

 private:
  cuwrap::ReleaseFailureHandler previous_;
};

// Close a buffer of a resource whose deallocate throws what `make` throws; return the
// reports (close() and the destructor must not throw).
template <class Make>
std::vector<SeenFailure> reports_of_throwing_deallocate(Make make) {
  const RecordReleaseFailures record;
  ThrowingResource<Make> mr(make);
  {
    Buffer closed = mr.allocate(8, kLegacyDefaultStream);
    static_assert(noexcept(closed.close()));
    closed.close();
    EXPECT_FALSE(closed.is_open());
    Buffer destroyed = mr.allocate(8, kLegacyDefaultStream);
  }  // the destructor reports too
  return seen_failures();
}

TEST(NoGpuReleaseFailure, UserResourceExceptionIsReportedWithItsMessage) {
  const auto reports =
      reports_of_throwing_deallocate([] { throw std::runtime_error("pool is corrupt"); });
  ASSERT_EQ(reports.size(), 2u);  // close() and the destructor
  for (const SeenFailure& r : reports) {
    EXPECT_EQ(r.code, CUDA_ERROR_UNKNOWN);
    EXPECT_EQ(r.function, "MemoryResource::deallocate");
    EXPECT_EQ(r.object, "Buffer");
    EXPECT_EQ(r.kind, cuwrap::ReleaseFailureKind::Exception);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.message, "pool is corrupt");
  }
}

TEST(NoGpuReleaseFailure, LoadErrorIsReportedAsNotFound) {
  const auto reports = reports_of_throwing_deallocate([] {
    throw cuwrap::LoadError("libcuda.so.1", "cuMemFreeAsync", "libcuda.so.1 lacks cuMemFreeAsync");
  });
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].code, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(reports[0].function, "cuMemFreeAsync");  // the missing entry point
  EXPECT_EQ(reports[0].object, "Buffer");
  EXPECT_EQ(reports[0].kind, cuwrap::ReleaseFailureKind::Load);
  EXPECT_EQ(reports[0].message, "libcuda.so.1 lacks cuMemFreeAsync");

  const auto no_library = reports_of_throwing_deallocate(
      [] { throw cuwrap::LoadError("libcuda.so.1", "", "no libcuda.so.1"); });
  ASSERT_EQ(no_library.size(), 2u);
  EXPECT_EQ(no_library[0].function, "MemoryResource::deallocate");  // no symbol to name
  EXPECT_EQ(no_library[0].message, "no libcuda.so.1");
}

TEST(NoGpuReleaseFailure, NvrtcErrorAndUnknownExceptionsAreReported) {
  const auto nvrtc = reports_of_throwing_deallocate(
      [] { throw cuwrap::NvrtcError(NVRTC_ERROR_INVALID_PROGRAM, "nvrtcDestroyProgram"); });
  ASSERT_EQ(nvrtc.size(), 2u);
  EXPECT_EQ(nvrtc[0].kind, cuwrap::ReleaseFailureKind::Nvrtc);
  EXPECT_EQ(nvrtc[0].status, static_cast<int>(NVRTC_ERROR_INVALID_PROGRAM));
  EXPECT_EQ(nvrtc[0].code, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(nvrtc[0].function, "nvrtcDestroyProgram");
  EXPECT_NE(nvrtc[0].message.find("NVRTC_ERROR_INVALID_PROGRAM"), std::string::npos)
      << nvrtc[0].message;

  const auto unknown = reports_of_throwing_deallocate([] { throw 42; });
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0].kind, cuwrap::ReleaseFailureKind::Exception);
  EXPECT_EQ(unknown[0].code, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(unknown[0].message, "unknown exception");
}

TEST(NoGpuReleaseFailure, DriverErrorKeepsItsStatusAndNoMessage) {
  const auto reports = reports_of_throwing_deallocate(
      [] { throw cuwrap::DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, "cuMemFreeAsync"); });
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].code, CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(reports[0].function, "cuMemFreeAsync");
  EXPECT_EQ(reports[0].kind, cuwrap::ReleaseFailureKind::Driver);
  EXPECT_EQ(reports[0].message, "<null>");
  // The driver shutting down at exit is not a failure worth reporting.
  EXPECT_TRUE(reports_of_throwing_deallocate([] {
                throw cuwrap::DriverError(CUDA_ERROR_DEINITIALIZED, "cuMemFreeAsync");
              }).empty());
}

TEST(NoGpuReleaseFailure, LibraryStatusesAreReportedWithTheirNames) {
  const RecordReleaseFailures record;
  cuwrap::detail::report_release_failure(NVRTC_SUCCESS, "nvrtcDestroyProgram", "Program");
  EXPECT_TRUE(seen_failures().empty());
  cuwrap::detail::report_release_failure(NVRTC_ERROR_INVALID_INPUT, "nvrtcDestroyProgram",
                                         "Program");
  ASSERT_EQ(seen_failures().size(), 1u);
  EXPECT_EQ(seen_failures()[0].kind, cuwrap::ReleaseFailureKind::Nvrtc);
  EXPECT_EQ(seen_failures()[0].status, static_cast<int>(NVRTC_ERROR_INVALID_INPUT));
  EXPECT_EQ(seen_failures()[0].object, "Program");
  EXPECT_EQ(
      seen_failures()[0].message.rfind("nvrtcDestroyProgram failed: NVRTC_ERROR_INVALID_INPUT", 0),
      0u)
      << seen_failures()[0].message;
#if CUWRAP_HAS_NVJITLINK
  cuwrap::detail::report_release_failure(NVJITLINK_SUCCESS, "nvJitLinkDestroy", "Linker");
  EXPECT_EQ(seen_failures().size(), 1u);
  cuwrap::detail::report_release_failure(NVJITLINK_ERROR_INTERNAL, "nvJitLinkDestroy", "Linker");
  ASSERT_EQ(seen_failures().size(), 2u);
  EXPECT_EQ(seen_failures()[1].kind, cuwrap::ReleaseFailureKind::NvJitLink);
  EXPECT_EQ(seen_failures()[1].status, static_cast<int>(NVJITLINK_ERROR_INTERNAL));
  EXPECT_NE(seen_failures()[1].message.find("NVJITLINK_ERROR_INTERNAL"), std::string::npos);
#endif
  // Outside a catch block there is no exception to name: reported, not terminated.
  cuwrap::detail::report_current_exception("Example::close", "Example");
  ASSERT_FALSE(seen_failures().empty());
  EXPECT_EQ(seen_failures().back().message, "unknown exception");
  EXPECT_EQ(seen_failures().back().function, "Example::close");
}

TEST(NoGpuReleaseFailure, StatefulHandlerCountsEveryReport) {
  int count = 0;
  auto previous = cuwrap::set_release_failure_handler(
      {[](const cuwrap::ReleaseFailure&, void* n) { ++*static_cast<int*>(n); }, &count});
  {
    const auto throwing = [] { throw std::runtime_error("no"); };
    ThrowingResource<decltype(throwing)> mr(throwing);
    Buffer a = mr.allocate(8, kLegacyDefaultStream);
    Buffer b = mr.allocate(8, kLegacyDefaultStream);
    a.close();
    EXPECT_EQ(count, 1);
  }
  cuwrap::set_release_failure_handler(previous);
  EXPECT_EQ(count, 2);  // b's destructor; a, closed, reports nothing more
}

TEST(NoGpuReleaseFailure, DefaultHandlerPrintsTheMessage) {
  auto previous = cuwrap::set_release_failure_handler({});  // the default
  testing::internal::CaptureStderr();
  {
    const auto throwing = [] { throw std::runtime_error("pool is corrupt"); };
    ThrowingResource<decltype(throwing)> mr(throwing);
    Buffer buffer = mr.allocate(8, kLegacyDefaultStream);
  }
  cuwrap::detail::report_release_failure(NVRTC_ERROR_INVALID_INPUT, "nvrtcDestroyProgram",
                                         "Program");
  const std::string printed = testing::internal::GetCapturedStderr();
  cuwrap::set_release_failure_handler(previous);
  EXPECT_NE(printed.find("cuwrap: warning: releasing Buffer: MemoryResource::deallocate failed: "
                         "pool is corrupt\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("cuwrap: warning: releasing Program: nvrtcDestroyProgram failed: "
                         "NVRTC_ERROR_INVALID_INPUT"),
            std::string::npos)
      << printed;
}

TEST(NoGpuStream, DefaultStreamConstantsNeedNoDriver) {
  EXPECT_EQ(cuwrap::kLegacyDefaultStream.handle(), CU_STREAM_LEGACY);
  EXPECT_EQ(cuwrap::kPerThreadDefaultStream.handle(), CU_STREAM_PER_THREAD);
  EXPECT_EQ(&cuwrap::kLegacyDefaultStream, &cuwrap::kLegacyDefaultStream);
  cuwrap::StreamRef legacy = cuwrap::StreamRef::from_handle(CU_STREAM_LEGACY);
  EXPECT_EQ(legacy.handle(), CU_STREAM_LEGACY);
}

TEST(NoGpuStream, ClosedStreamThrowsLogicError) {
  cuwrap::Stream stream;  // default-constructed: closed
  stream.close();
  stream.close();  // idempotent
  EXPECT_EQ(logic_error_message([&] { stream.sync(); }), "Stream::sync on a closed Stream");
  EXPECT_EQ(logic_error_message([&] { static_cast<void>(stream.handle()); }),
            "Stream::handle on a closed Stream");
  EXPECT_THROW(static_cast<void>(stream.is_done()), std::logic_error);
  EXPECT_THROW(static_cast<void>(stream.record()), std::logic_error);
  // A buffer operation on a closed stream fails on the stream, before the driver.
  Buffer buffer = cuwrap::testing::fake_buffer(kNoGpuFakePointer, 4);
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

// Every library's exception type derives from StatusError, which keeps the status, its
// name, the call and the log; one catch handles any library's failure.
TEST(StatusErrors, EveryLibraryErrorIsAStatusErrorWithItsKindAndStatus) {
  try {
    throw cuwrap::NvrtcError(NVRTC_ERROR_COMPILATION, "nvrtcCompileProgram", "line 1: error");
  } catch (const cuwrap::StatusError& e) {
    EXPECT_EQ(e.library(), cuwrap::ReleaseFailureKind::Nvrtc);
    EXPECT_EQ(e.status(), static_cast<int>(NVRTC_ERROR_COMPILATION));
    EXPECT_EQ(e.name(), "NVRTC_ERROR_COMPILATION");
    EXPECT_EQ(e.function(), "nvrtcCompileProgram");
    EXPECT_EQ(e.log(), "line 1: error");
    EXPECT_NE(std::string(e.what()).find("nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("\nline 1: error"), std::string::npos) << e.what();
  }
  const cuwrap::DriverError driver =
      cuwrap::DriverError::with_error_log(CUDA_ERROR_INVALID_PTX, "cuModuleLoadDataEx", "ptxas");
  const cuwrap::StatusError& base = driver;
  EXPECT_EQ(base.library(), cuwrap::ReleaseFailureKind::Driver);
  EXPECT_EQ(driver.code(), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(driver.error_log(), "ptxas");
  EXPECT_EQ(base.log(), "ptxas");
#if CUWRAP_HAS_NVJITLINK
  const cuwrap::NvJitLinkError jit(NVJITLINK_ERROR_PTX_COMPILE, "nvJitLinkComplete");
  EXPECT_EQ(static_cast<const cuwrap::StatusError&>(jit).library(),
            cuwrap::ReleaseFailureKind::NvJitLink);
  EXPECT_EQ(jit.code(), NVJITLINK_ERROR_PTX_COMPILE);
  EXPECT_EQ(jit.log(), "");
#endif
}

}  // namespace
