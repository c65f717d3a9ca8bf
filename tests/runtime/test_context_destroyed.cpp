// Objects whose context was destroyed under them, on a GPU: the next call throws
// ContextDestroyedError naming the object and its context (never a stale handle used),
// and the destructor neither throws nor reports. Contexts destroyed by cuwrap (a green
// Context whose last owner let go) and outside it (cuCtxDestroy, cuGreenCtxDestroy).
// The record and the translation themselves are tested without a GPU in
// test_context_registry_nogpu.cpp.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "release_failures.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using cuwrap::ContextDestroyedError;
using cuwrap::DriverError;
using cuwrap::Event;
using cuwrap::Stream;
namespace driver = cuwrap::driver;

constexpr int kGreenStreamDriver = 12050;  // streams in green contexts

// Expect `call` to throw ContextDestroyedError (caught as a DriverError) for an object of
// kind `object` bound to the context with ID `id`, in `operation`.
void expect_destroyed(const std::function<void()>& call, const std::string& object,
                      unsigned long long id, const std::string& operation) {
  try {
    call();
    ADD_FAILURE() << operation << ": no error";
  } catch (const DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_CONTEXT_IS_DESTROYED) << e.what();
    const auto* destroyed = dynamic_cast<const ContextDestroyedError*>(&e);
    ASSERT_NE(destroyed, nullptr) << "not a ContextDestroyedError: " << e.what();
    EXPECT_EQ(destroyed->object().rfind(object + " 0x", 0), 0U) << e.what();
    EXPECT_EQ(destroyed->context_id(), id) << e.what();
    EXPECT_EQ(e.function(), operation) << e.what();
    EXPECT_NE(std::string(e.what()).find("(id " + std::to_string(id) + ") was destroyed"),
              std::string::npos)
        << e.what();
  }
}

std::string first_report(const cuwrap::testing::ReleaseFailures& failures) {
  if (failures.reports.empty()) {
    return "none";
  }
  const cuwrap::ReleaseFailure& f = failures.reports.front();
  return std::string(f.object) + ": " + f.function + " " + std::string(cuwrap::to_string(f.code));
}

// A context of its own on device 0 (cuCtxCreate), current on this thread.
CUcontext create_context(CUdevice device) {
#if CUDA_VERSION >= 12050
  return driver::cuCtxCreate(nullptr, 0, device);
#else
  return driver::cuCtxCreate(0, device);
#endif
}

class ContextDestroyedTest : public cuwrap::testing::DeviceTest {};

TEST_F(ContextDestroyedTest, StreamEventAndBufferOfARawContextThrowAfterCuCtxDestroy) {
  cuwrap::testing::ReleaseFailures failures;
  const CUcontext context = create_context(device().handle());
  const unsigned long long id = driver::cuCtxGetId(context);
  const CUstream raw_stream = driver::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  {
    Stream stream = Stream::from_handle(raw_stream);
    Event event = stream.record();
    stream.sync();
    driver::cuCtxDestroy(context);  // the stream and the event go with it
    device().set_current();

    // The first call finds out from the driver's error, the later ones from the record.
    expect_destroyed([&] { stream.sync(); }, "Stream", id, "Stream::sync");
    expect_destroyed([&] { event.sync(); }, "Event", id, "Event::sync");
    expect_destroyed([&] { static_cast<void>(event.is_done()); }, "Event", id, "Event::is_done");
    expect_destroyed([&] { static_cast<void>(event.handle()); }, "Event", id, "Event::handle");
    expect_destroyed([&] { static_cast<void>(stream.record()); }, "Stream", id, "Stream::record");
    expect_destroyed([&] { static_cast<void>(stream.priority()); }, "Stream", id,
                     "Stream::priority");
    Stream other = device().create_stream();
    expect_destroyed([&] { other.wait(event); }, "Event", id, "Stream::wait");
    expect_destroyed([&] { other.wait(stream); }, "Stream", id, "Stream::wait (the stream waited for)");
    std::vector<std::byte> host(16);
    Stream alive = device().create_stream();
    cuwrap::Buffer buffer = device().allocate(host.size(), alive);
    alive.sync();
    expect_destroyed([&] { buffer.copy_to(host, stream); }, "Stream", id, "Buffer::copy_to");
  }  // destructors: the event's release is skipped, nothing throws
  EXPECT_TRUE(failures.reports.empty()) << first_report(failures);
}

// A buffer whose deallocation stream went with its context: its destructor does not use
// the stream, and reports once that its memory is not freed.
TEST_F(ContextDestroyedTest, BufferFreedOnAStreamOfADestroyedContextReportsOnce) {
  cuwrap::testing::ReleaseFailures failures;
  const CUcontext context = create_context(device().handle());
  const unsigned long long id = driver::cuCtxGetId(context);
  {
    Stream stream = Stream::from_handle(driver::cuStreamCreate(CU_STREAM_NON_BLOCKING));
    cuwrap::Buffer buffer = device().allocate(256, stream);
    stream.sync();
    driver::cuCtxDestroy(context);
    device().set_current();
    expect_destroyed([&] { buffer.fill(std::uint8_t{1}, stream); }, "Stream", id,
                     "Buffer::fill");
  }
  ASSERT_EQ(failures.reports.size(), 1U) << first_report(failures);
  EXPECT_EQ(failures.reports[0].code, CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_STREQ(failures.reports[0].function, "Buffer::close");
}

TEST_F(ContextDestroyedTest, LaunchOnAStreamOfARawContextThrowsAfterCuCtxDestroy) {
  cuwrap::Program program(R"(extern "C" __global__ void nothing() {})", cuwrap::CodeType::Cxx);
  const cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
  const cuwrap::Kernel kernel = code.get_kernel("nothing");
  const CUcontext context = create_context(device().handle());
  const unsigned long long id = driver::cuCtxGetId(context);
  Stream stream = Stream::from_handle(driver::cuStreamCreate(CU_STREAM_NON_BLOCKING));
  // Launched while the context lives: caches the kernel's function there.
  ASSERT_NO_THROW(cuwrap::launch(stream, {.grid = 1, .block = 1}, kernel));
  stream.sync();
  driver::cuCtxDestroy(context);
  device().set_current();
  expect_destroyed([&] { cuwrap::launch(stream, {.grid = 1, .block = 1}, kernel); }, "Stream",
                   id, "launch");
  // Recorded now: the next launch throws before any driver call.
  expect_destroyed([&] { cuwrap::launch(stream, {.grid = 1, .block = 1}, kernel); }, "Stream",
                   id, "launch");
}

class GreenContextDestroyedTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (cuwrap::driver_version() < kGreenStreamDriver) {
      GTEST_SKIP() << "green-context streams need a CUDA 12.5 driver; this one is "
                   << cuwrap::version_string(cuwrap::driver_version());
    }
  }

  cuwrap::Context create_green() {
    const cuwrap::SMResource all = device().resources().sm();
    const cuwrap::SMResourceSplit split = all.split({.count = {all.min_partition_size()}});
    return device().create_context({.resources = {split.groups[0]}});
  }
};

TEST_F(GreenContextDestroyedTest, EventThrowsAfterCuwrapDestroysItsGreenContext) {
  cuwrap::testing::ReleaseFailures failures;
  std::optional<cuwrap::Context> green(create_green());
  const unsigned long long id = driver::cuCtxGetId(green->handle());
  std::optional<Stream> stream(green->create_stream());
  Event event = stream->record();
  stream->sync();
  stream.reset();
  green.reset();  // the last owners: cuwrap destroys the green context
  expect_destroyed([&] { event.sync(); }, "Event", id, "Event::sync");
  expect_destroyed([&] { static_cast<void>(event.is_done()); }, "Event", id, "Event::is_done");
  Stream other = device().create_stream();
  expect_destroyed([&] { other.record(event); }, "Event", id, "Stream::record");
  event.close();  // skipped: the event went with the context
  EXPECT_FALSE(event.is_open());
  EXPECT_TRUE(failures.reports.empty()) << first_report(failures);
}

TEST_F(GreenContextDestroyedTest, ContextAndItsStreamThrowAfterRawCuGreenCtxDestroy) {
  cuwrap::testing::ReleaseFailures failures;
  {
    cuwrap::Context green = create_green();
    const unsigned long long id = driver::cuCtxGetId(green.handle());
    Stream stream = green.create_stream();
    stream.sync();
    driver::cuGreenCtxDestroy(green.green_handle());
    expect_destroyed([&] { stream.sync(); }, "Stream", id, "Stream::sync");
    expect_destroyed([&] { static_cast<void>(green.create_stream()); }, "Context", id,
                     "Context::create_stream");
    expect_destroyed([&] { static_cast<void>(green.handle()); }, "Context", id,
                     "Context::handle");
  }  // destructors: the stream's and the context's releases are skipped
  EXPECT_TRUE(failures.reports.empty()) << first_report(failures);
}

}  // namespace
