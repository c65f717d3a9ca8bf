// A thread that has never made a context current, without a GPU: the process loads
// tests/compat/fake_libcuda.cpp as libcuda, whose cuCtxSynchronize answers
// CUDA_ERROR_INVALID_CONTEXT unless its context is current. The DriverError then says
// how to get one (Device::set_current), and only when no context is current.
#include <gtest/gtest.h>
#include <cuwrap/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include "fake_driver.hpp"

#include <stdexcept>
#include <string>

namespace {

using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

std::string sync_failure() {
  try {
    cuwrap::driver::cuCtxSynchronize();
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(e.function(), "cuCtxSynchronize");
    return e.what();
  }
  ADD_FAILURE() << "cuCtxSynchronize did not fail";
  return {};
}

TEST(NoCurrentContext, DriverErrorNamesDeviceSetCurrent) {
  ASSERT_TRUE(kFakeInstalled);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const std::string message = sync_failure();
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_CONTEXT"), std::string::npos) << message;
  EXPECT_NE(message.find("no CUDA context is current on this thread"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Device::set_current()"), std::string::npos) << message;
}

TEST(NoCurrentContext, NoHintWhileAContextIsCurrent) {
  ASSERT_TRUE(kFakeInstalled);
  // The fake's other context is not one it synchronises: the status is the same, but a
  // context is current, so the hint would mislead.
  cuwrap::driver::cuCtxSetCurrent(fake_query<CUcontext>("cuwrap_fake_other_context"));
  const std::string message = sync_failure();
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_CONTEXT"), std::string::npos) << message;
  EXPECT_EQ(message.find("set_current"), std::string::npos) << message;
}

TEST(NoCurrentContext, CurrentIfAnswersNoneAndPopRefuses) {
  ASSERT_TRUE(kFakeInstalled);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  EXPECT_FALSE(cuwrap::Device::current_if().has_value());
  EXPECT_THROW((void)cuwrap::Device::current(), std::logic_error);
  EXPECT_THROW((void)cuwrap::ContextRef::pop(), std::logic_error);
}

TEST(NoCurrentContext, SetCurrentPushAndPopChangeTheThreadsStack) {
  ASSERT_TRUE(kFakeInstalled);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const cuwrap::ContextRef other(fake_query<CUcontext>("cuwrap_fake_other_context"));
  const cuwrap::ContextRef primary = cuwrap::Device(0).primary_context();
  primary.set_current();
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), primary.handle());
  EXPECT_EQ(other.push().handle(), other.handle());
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other.handle());
  EXPECT_EQ(cuwrap::ContextRef::pop().handle(), other.handle());
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), primary.handle()) << "the one below again";
  EXPECT_EQ(cuwrap::ContextRef::pop().handle(), primary.handle());
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
}

}  // namespace
