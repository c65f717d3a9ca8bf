// Objects whose context was destroyed under them, on a GPU: the next call throws
// ContextDestroyedError naming the object and its context (never a stale handle used),
// and the destructor neither throws nor reports: a green Context destroyed by cuwrap
// when its last owner let go. (A context destroyed outside cuwrap, by cuCtxDestroy or
// cuGreenCtxDestroy, leaves handles the driver does not check: on driver 580 the next
// call on them crashes in the driver, so no test can use them; docs/errors.md says so.)
// The record and the translation themselves are tested without a GPU in
// test_context_registry_nogpu.cpp.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "release_failures.hpp"

#include <functional>
#include <optional>
#include <string>

namespace {

using cuwrap::ContextDestroyedError;
using cuwrap::DriverError;
using cuwrap::Event;
using cuwrap::Stream;
namespace driver = cuwrap::driver;

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

class GreenContextDestroyedTest : public cuwrap::testing::GreenStreamTest {
 protected:
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

}  // namespace
