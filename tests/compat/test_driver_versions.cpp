// The loader and the version fallbacks against an older driver, without a GPU: the
// process loads tests/compat/fake_libcuda.cpp (CUWRAP_FAKE_LIBCUDA, set by CMake) as
// libcuda, which answers as CUDA 12.4. Cases that need another driver version run in
// a fresh child process (gtest's threadsafe death-test style re-executes the binary),
// because libcuda is opened once per process.
#include <gtest/gtest.h>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/version.hpp>

#include "gtest_compat.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compat.hpp"  // runtime/src: the fallbacks under test
#include "versions.hpp"

namespace {

// Before anything loads libcuda: every test of this process talks to the fake.
const bool kFakeInstalled = [] {
  setenv("CUWRAP_LIBCUDA", CUWRAP_FAKE_LIBCUDA, 1);
  return true;
}();

template <typename T>
T fake_query(const char* name) {
  (void)cuwrap::driver_version();  // the loader opens the fake, if nothing did yet
  void* handle = ::dlopen(CUWRAP_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << "the fake libcuda is not loaded";
  auto* fn = reinterpret_cast<T (*)()>(::dlsym(handle, name));
  EXPECT_NE(fn, nullptr) << name;
  const T value = fn != nullptr ? fn() : T{};
  if (handle != nullptr) {
    ::dlclose(handle);
  }
  return value;
}

int max_requested_version() { return fake_query<int>("cuwrap_fake_max_requested_version"); }

class OldDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kFakeInstalled);
    CUWRAP_GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  void TearDown() override {
    // Whatever a test did, nothing asked the driver for an ABI newer than its own.
    EXPECT_LE(max_requested_version(), cuwrap::driver_version());
  }
};

TEST_F(OldDriver, DriverVersionComesFromTheLibrary) {
  EXPECT_EQ(cuwrap::driver_version(), 12040);
  EXPECT_NO_THROW(cuwrap::detail::require_driver(12040, "a CUDA 12.4 feature"));
  try {
    cuwrap::detail::require_driver(12080, "a CUDA 12.8 feature");
    ADD_FAILURE() << "require_driver(12080) passed on a 12.4 driver";
  } catch (const cuwrap::UnsupportedError& e) {
    EXPECT_EQ(e.feature(), "a CUDA 12.8 feature");
    EXPECT_EQ(e.required_version(), 12080);
    EXPECT_EQ(e.available_version(), 12040);
  }
}

// The test-support macro for features newer than the driver: on the fake 12.4 driver a
// 12.8 feature is checked to throw UnsupportedError naming it, then the test skips.
TEST_F(OldDriver, UnsupportedFeatureIsCheckedThenSkipped) {
  CUWRAP_EXPECT_UNSUPPORTED_BELOW(
      12080, "a CUDA 12.8 feature",
      cuwrap::detail::require_driver(12080, "a CUDA 12.8 feature (switch nodes)"));
  ADD_FAILURE() << "a 12.4 driver ran a 12.8 feature";
}

TEST_F(OldDriver, SupportedFeatureRunsOn) {
  bool ran = false;
  CUWRAP_EXPECT_UNSUPPORTED_BELOW(12040, "a CUDA 12.4 feature", ran = true);
  EXPECT_FALSE(ran) << "the statement runs only to check the UnsupportedError";
  EXPECT_EQ(cuwrap::testing::cuda_too_old_reason(12080),
            "the driver is CUDA 12.4, the test needs 12.8");
  EXPECT_EQ(cuwrap::testing::cuda_too_old_reason(12040), "");
}

TEST_F(OldDriver, EntryPointsTheDriverHasResolve) {
  EXPECT_NO_THROW(cuwrap::driver::cuInit(0));
  EXPECT_EQ(cuwrap::driver::cuDeviceGetCount(), 1);
  EXPECT_EQ(cuwrap::driver::cuStreamGetCtx(nullptr), fake_query<CUcontext>("cuwrap_fake_context"));
}

TEST_F(OldDriver, EntryPointNewerThanTheDriverIsALoadErrorNotACall) {
  // The first entry point of the bindings whose ABI is newer than the fake's 12.4.
  std::size_t index = cuwrap::detail::kDriverSymbolCount;
  for (std::size_t i = 0; i < cuwrap::detail::kDriverSymbolCount; ++i) {
    if (cuwrap::detail::kDriverSymbols[i].version > 12040) {
      index = i;
      break;
    }
  }
  if (index == cuwrap::detail::kDriverSymbolCount) {
    GTEST_SKIP() << "the bindings (CUDA " << cuwrap::version_string(cuwrap::bindings_version())
                 << ") have no entry point newer than CUDA 12.4";
  }
  const cuwrap::detail::Symbol& symbol = cuwrap::detail::kDriverSymbols[index];
  const int before = max_requested_version();
  try {
    (void)cuwrap::detail::resolve_entry(cuwrap::detail::Library::Driver, index, false);
    ADD_FAILURE() << symbol.name << " resolved on a 12.4 driver";
  } catch (const cuwrap::LoadError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.symbol(), symbol.name);
    EXPECT_NE(what.find(symbol.name), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA " + cuwrap::version_string(symbol.version)), std::string::npos)
        << what;
    EXPECT_NE(what.find("CUDA 12.4"), std::string::npos) << what;
  }
  // The raw form: a status and the same reason, never a call.
  EXPECT_EQ(cuwrap::detail::try_resolve_entry(cuwrap::detail::Library::Driver, index, false),
            nullptr);
  EXPECT_NE(cuwrap::last_load_error().find(symbol.name), std::string::npos)
      << cuwrap::last_load_error();
  EXPECT_EQ(max_requested_version(), before) << "cuGetProcAddress was asked for it";
}

TEST_F(OldDriver, StreamDeviceFallsBackToTheStreamsContext) {
  cuwrap::driver::cuInit(0);
  const auto other = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0xD0));
  cuwrap::driver::cuCtxSetCurrent(other);
  const auto stream = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700));
  EXPECT_EQ(cuwrap::detail::stream_device(stream), 100);
  // The fallback made the stream's context current only for the query.
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
}

TEST_F(OldDriver, StreamFromHandleWorksWithoutCuStreamGetDevice) {
  const auto handle = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700));
  const cuwrap::Stream stream = cuwrap::Stream::from_handle(handle);
  EXPECT_EQ(stream.device().device_id(), 0);
  EXPECT_EQ(stream.context(), fake_query<CUcontext>("cuwrap_fake_context"));
  EXPECT_FALSE(stream.is_owning());
}

TEST_F(OldDriver, ContextQueriesFallBackToTheCurrentContextForms) {
  cuwrap::driver::cuInit(0);
  const CUcontext context = fake_query<CUcontext>("cuwrap_fake_context");
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  EXPECT_EQ(cuwrap::detail::context_device(context), 100);
  cuwrap::detail::context_synchronize(context);
  EXPECT_EQ(fake_query<CUcontext>("cuwrap_fake_synchronized_context"), context);
}

TEST_F(OldDriver, EventTimeUsesTheFormTheDriverHas) {
  // The fake's 2.0 form answers 1.5 ms, its 12.8 form 2.5 ms: a 12.4 driver gets the
  // 2.0 form whichever the bindings carry.
  EXPECT_FLOAT_EQ(cuwrap::detail::event_elapsed_ms(nullptr, nullptr), 1.5F);
}

TEST_F(OldDriver, DriverOlderThanTheMinimumIsALoadErrorNamingBothVersions) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_FAKE_DRIVER_VERSION", "11080", 1);
        int exit_code = 2;
        try {
          cuwrap::driver::cuInit(0);
        } catch (const cuwrap::LoadError& e) {
          std::fprintf(stderr, "what=%s\n", e.what());
          exit_code = 0;
        }
        try {
          (void)cuwrap::driver_version();
          exit_code = 3;
        } catch (const cuwrap::LoadError&) {
        }
        std::exit(exit_code);
      },
      ::testing::ExitedWithCode(0), "what=.*CUDA 11.8 \\(11080\\).*CUDA 12.4 \\(12040\\)");
}

TEST_F(OldDriver, NewerDriverResolvesTheNewerForm) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_FAKE_DRIVER_VERSION", "13000", 1);
        const float ms = cuwrap::detail::event_elapsed_ms(nullptr, nullptr);
        std::fprintf(stderr, "ms=%.1f\n", static_cast<double>(ms));
        // Bindings from 13.0 headers carry the 12.8 form; older ones the 2.0 form.
        const bool v2 = cuwrap::bindings_version() >= 13000;
        std::exit(ms == (v2 ? 2.5F : 1.5F) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "ms=");
}

}  // namespace
