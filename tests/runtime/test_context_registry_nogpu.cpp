// What cuwrap does with objects whose context was destroyed, without a GPU: the record
// of destroyed context IDs, the entry-point check (ContextUse) that throws
// ContextDestroyedError naming the object, and the translation of a failing driver call
// made while a ContextUse is active. The GPU side (real contexts destroyed under real
// objects) is tests/runtime/test_context_destroyed.cpp.
#include <cuwrap/error.hpp>

#include <gtest/gtest.h>

#include "base/context_registry.hpp"  // runtime/src

#include <atomic>
#include <string>

namespace {

using cuwrap::ContextDestroyedError;
using cuwrap::DriverError;
namespace detail = cuwrap::detail;

// IDs no real context in this process has; each test uses its own.
constexpr unsigned long long kIdBase = 0xC0DE'0000'0000ULL;
// A context handle that is never dereferenced: only recorded IDs are looked at with it.
const CUcontext kFakeContext = reinterpret_cast<CUcontext>(0x1000);
const void* const kFakeHandle = reinterpret_cast<const void*>(0xabc0);

TEST(ContextDestroyedError, IsADriverErrorNamingTheObjectTheContextAndTheOperation) {
  const ContextDestroyedError error("Stream 0xabc0", 7, "Stream::sync",
                                    "cuStreamSynchronize answered CUDA_ERROR_INVALID_CONTEXT");
  const DriverError& as_driver_error = error;
  EXPECT_EQ(as_driver_error.code(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(as_driver_error.name(), "CUDA_ERROR_CONTEXT_IS_DESTROYED");
  EXPECT_EQ(as_driver_error.function(), "Stream::sync");
  EXPECT_EQ(error.object(), "Stream 0xabc0");
  EXPECT_EQ(error.context_id(), 7U);
  EXPECT_EQ(std::string(error.what()),
            "Stream 0xabc0: its context (id 7) was destroyed (Stream::sync; "
            "cuStreamSynchronize answered CUDA_ERROR_INVALID_CONTEXT)");
  EXPECT_EQ(std::string(ContextDestroyedError("Event 0x1", 9, "Event::sync").what()),
            "Event 0x1: its context (id 9) was destroyed (Event::sync)");
}

TEST(ContextRegistry, RecordsEachDestroyedIdOnceAndIgnoresZero) {
  const unsigned long long id = kIdBase + 1;
  EXPECT_FALSE(detail::context_recorded_destroyed(id));
  const unsigned long long before = detail::g_destroyed_context_count.load();
  detail::note_context_destroyed(id);
  EXPECT_TRUE(detail::context_recorded_destroyed(id));
  EXPECT_FALSE(detail::context_recorded_destroyed(id + 1000)) << "only the ID noted";
  EXPECT_EQ(detail::g_destroyed_context_count.load(), before + 1);
  detail::note_context_destroyed(id);  // noted twice: counted once
  EXPECT_EQ(detail::g_destroyed_context_count.load(), before + 1);
  detail::note_context_destroyed(0);  // an unknown ID
  EXPECT_EQ(detail::g_destroyed_context_count.load(), before + 1);
  EXPECT_FALSE(detail::context_recorded_destroyed(0));
}

TEST(ContextRegistry, ContextIsGoneWhenRecordedWithoutAskingTheDriver) {
  const unsigned long long id = kIdBase + 2;
  detail::note_context_destroyed(id);
  // kFakeContext is no context: a driver call with it would fail differently.
  EXPECT_TRUE(detail::context_is_gone(kFakeContext, id));
  EXPECT_FALSE(detail::context_is_gone(kFakeContext, 0)) << "ID 0: unknown, never gone";
  EXPECT_FALSE(detail::context_is_gone(nullptr, id)) << "no context: nothing to check";
}

TEST(ContextUse, ThrowsNamingTheObjectWhenItsContextWasRecordedDestroyed) {
  const unsigned long long id = kIdBase + 3;
  EXPECT_NO_THROW(detail::ContextUse(kFakeContext, id, "Stream", kFakeHandle, "Stream::sync"));
  detail::note_context_destroyed(id);
  try {
    const detail::ContextUse use(kFakeContext, id, "Stream", kFakeHandle, "Stream::sync");
    ADD_FAILURE() << "no ContextDestroyedError";
  } catch (const ContextDestroyedError& e) {
    EXPECT_EQ(e.object(), "Stream 0xabc0");
    EXPECT_EQ(e.context_id(), id);
    EXPECT_EQ(e.function(), "Stream::sync");
  }
  // Another context's objects, and objects bound to none (ID 0), are not affected.
  EXPECT_NO_THROW(detail::ContextUse(kFakeContext, id + 1, "Event", kFakeHandle, "Event::sync"));
  EXPECT_NO_THROW(detail::ContextUse(nullptr, 0, "Stream", nullptr, "Stream::sync"));
  EXPECT_THROW(detail::check_context_recorded(id, "Stream", kFakeHandle, "launch"),
               ContextDestroyedError);
  EXPECT_NO_THROW(detail::check_context_recorded(id + 1, "Stream", kFakeHandle, "launch"));
}

// A driver call failing while a ContextUse is active: when the context is gone, the
// failure becomes ContextDestroyedError naming the object, the operation and the call.
TEST(ContextUse, TurnsADriverFailureIntoContextDestroyedErrorWhenTheContextIsGone) {
  const unsigned long long id = kIdBase + 4;
  try {
    const detail::ContextUse use(kFakeContext, id, "Event", kFakeHandle, "Event::sync");
    detail::note_context_destroyed(id);  // destroyed during the operation
    detail::throw_driver_error(CUDA_ERROR_INVALID_CONTEXT, "cuEventSynchronize");
  } catch (const ContextDestroyedError& e) {
    EXPECT_EQ(e.object(), "Event 0xabc0");
    EXPECT_EQ(e.function(), "Event::sync");
    EXPECT_NE(std::string(e.what()).find("cuEventSynchronize answered CUDA_ERROR_INVALID_CONTEXT"),
              std::string::npos)
        << e.what();
  } catch (const DriverError& e) {
    ADD_FAILURE() << "not translated: " << e.what();
  }
}

TEST(ContextUse, LeavesOtherFailuresAndFailuresOutsideItsScopeAlone) {
  const unsigned long long id = kIdBase + 5;
  // The context is not gone (no context at all): the driver's own error goes through.
  try {
    const detail::ContextUse use(nullptr, id, "Stream", kFakeHandle, "Stream::sync");
    detail::throw_driver_error(CUDA_ERROR_INVALID_VALUE, "cuStreamSynchronize");
  } catch (const ContextDestroyedError& e) {
    ADD_FAILURE() << "translated: " << e.what();
  } catch (const DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(e.function(), "cuStreamSynchronize");
  }
  // After the scope ended (here by an exception), nothing is translated any more.
  detail::note_context_destroyed(id);
  EXPECT_THROW(
      {
        try {
          const detail::ContextUse use(kFakeContext, id, "Stream", kFakeHandle, "Stream::sync");
        } catch (const ContextDestroyedError&) {
        }
        detail::throw_driver_error(CUDA_ERROR_INVALID_CONTEXT, "cuStreamSynchronize");
      },
      DriverError);
  try {
    detail::throw_driver_error(CUDA_ERROR_INVALID_CONTEXT, "cuStreamSynchronize");
  } catch (const ContextDestroyedError& e) {
    ADD_FAILURE() << "a ContextUse outlived its scope: " << e.what();
  } catch (const DriverError& e) {
    EXPECT_EQ(e.function(), "cuStreamSynchronize");
  }
}

// Frames nest: the outer object is named when the inner one's context is alive.
TEST(ContextUse, NestedUsesNameTheObjectWhoseContextIsGone) {
  const unsigned long long outer_id = kIdBase + 6;
  const unsigned long long inner_id = kIdBase + 7;
  try {
    const detail::ContextUse outer(kFakeContext, outer_id, "Stream", kFakeHandle, "Stream::wait");
    const detail::ContextUse inner(nullptr, inner_id, "Event", nullptr, "Stream::wait");
    detail::note_context_destroyed(outer_id);
    detail::throw_driver_error(CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuStreamWaitEvent");
  } catch (const ContextDestroyedError& e) {
    EXPECT_EQ(e.object(), "Stream 0xabc0");
    EXPECT_EQ(e.context_id(), outer_id);
  }
}

}  // namespace
