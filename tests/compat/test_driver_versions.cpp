// The loader and the version fallbacks against an older driver, without a GPU: the
// process loads tests/compat/fake_libcuda.cpp (CUWRAP_FAKE_LIBCUDA, set by CMake) as
// libcuda, which answers as CUDA 12.4. Cases that need another driver version run in
// a fresh child process (gtest's threadsafe death-test style re-executes the binary),
// because libcuda is opened once per process.
#include <gtest/gtest.h>
#include <cuwrap/checkpoint.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/tensor_map.hpp>
#include <cuwrap/version.hpp>

#include "fake_driver.hpp"
#include "gtest_compat.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/compat.hpp"         // runtime/src: the fallbacks under test
#include "launch/kernel_impl.hpp"  // runtime/src: the parameter query and the kernel cache
#include "versions.hpp"

namespace {

using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

int max_requested_version() { return fake_query<int>("cuwrap_fake_max_requested_version"); }

// Model a context made at the address of a destroyed one: the fake's context gets `id`.
void set_fake_context_id(unsigned long long id) {
  (void)cuwrap::driver_version();
  void* handle = ::dlopen(CUWRAP_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << "the fake libcuda is not loaded";
  auto* fn =
      reinterpret_cast<void (*)(unsigned long long)>(::dlsym(handle, "cuwrap_fake_set_context_id"));
  ASSERT_NE(fn, nullptr);
  fn(id);
  ::dlclose(handle);
}

CUkernel fake_kernel(std::uintptr_t bits) { return reinterpret_cast<CUkernel>(bits); }

CUfunction fake_function(unsigned long long context_id) {
  return reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(0xF000 + context_id));
}

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

// Checkpoints need a CUDA 12.8 driver: a 12.4 one is refused, naming the operation and
// both versions, before any checkpoint entry point is looked up.
TEST_F(OldDriver, CheckpointNeedsA128Driver) {
#if CUDA_VERSION >= 12080
  const cuwrap::checkpoint::Process process = cuwrap::checkpoint::Process::current();
  try {
    static_cast<void>(process.state());
    ADD_FAILURE() << "a 12.4 driver ran a checkpoint";
  } catch (const cuwrap::UnsupportedError& e) {
    EXPECT_EQ(e.feature(), "checkpoint::Process::state");
    EXPECT_EQ(e.required_version(), 12080);
    EXPECT_EQ(e.available_version(), 12040);
  }
  EXPECT_THROW(static_cast<void>(process.lock(10)), cuwrap::UnsupportedError);
  EXPECT_THROW(process.unlock(), cuwrap::UnsupportedError);
#else
  GTEST_SKIP() << "built against a toolkit without checkpoints (test_checkpoint covers it)";
#endif
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
  const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(handle);
  EXPECT_EQ(stream.device().device_id(), 0);
  EXPECT_EQ(stream.context(), fake_query<CUcontext>("cuwrap_fake_context"));
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

// ---- the current context: what cuwrap leaves current is what the caller had ----

TEST_F(OldDriver, ScopedContextRestoresWhatWasCurrentNoneIncluded) {
  cuwrap::driver::cuInit(0);
  const CUcontext context = fake_query<CUcontext>("cuwrap_fake_context");
  const CUcontext other = fake_query<CUcontext>("cuwrap_fake_other_context");
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  {
    const cuwrap::detail::ScopedContext scope(context);
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), context);
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
  cuwrap::driver::cuCtxSetCurrent(other);
  {
    const cuwrap::detail::ScopedContext scope(context);
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), context);
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
}

TEST_F(OldDriver, ScopedContextReportsAFailedRestoreAndDoesNotThrow) {
  cuwrap::driver::cuInit(0);
  const CUcontext context = fake_query<CUcontext>("cuwrap_fake_context");
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  void* handle = ::dlopen(CUWRAP_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  const auto fail_in =
      reinterpret_cast<void (*)(int)>(::dlsym(handle, "cuwrap_fake_fail_ctx_set_current_in"));
  ::dlclose(handle);
  ASSERT_NE(fail_in, nullptr);
  static std::vector<std::string> reports;
  reports.clear();
  auto previous = cuwrap::set_release_failure_handler([](const cuwrap::ReleaseFailure& f) {
    reports.push_back(std::string(f.function) + ' ' + f.object + ' ' +
                      std::to_string(static_cast<int>(f.code)));
  });
  {
    const cuwrap::detail::ScopedContext scope(context);
    fail_in(1);  // the destructor's restore fails
  }
  cuwrap::set_release_failure_handler(previous);
  const std::string expected =
      "cuCtxSetCurrent Context " + std::to_string(static_cast<int>(CUDA_ERROR_INVALID_CONTEXT));
  EXPECT_EQ(reports, std::vector<std::string>{expected});
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), context);  // not restored: what was reported
  cuwrap::driver::cuCtxSetCurrent(nullptr);
}

TEST_F(OldDriver, ScopedCurrentOrPrimaryUsesDeviceZerosContextOnlyForItsScope) {
  cuwrap::driver::cuInit(0);
  const CUcontext primary = fake_query<CUcontext>("cuwrap_fake_context");
  const CUcontext other = fake_query<CUcontext>("cuwrap_fake_other_context");
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  {
    const cuwrap::detail::ScopedCurrentOrPrimary scope(0);
    EXPECT_EQ(scope.context(), primary);
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), primary);
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
  cuwrap::driver::cuCtxSetCurrent(other);
  {
    const cuwrap::detail::ScopedCurrentOrPrimary scope(0);
    EXPECT_EQ(scope.context(), other);
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
}

TEST_F(OldDriver, CheckOnStreamRetriesInTheStreamsContextAndLeavesNoneCurrent) {
  const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
  const CUcontext context = fake_query<CUcontext>("cuwrap_fake_context");
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  int calls = 0;
  CUcontext seen = nullptr;
  cuwrap::detail::check_on_stream(stream, "cuFake", [&] {
    ++calls;
    seen = cuwrap::driver::cuCtxGetCurrent();
    return seen == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen, context) << "the retry runs in the stream's context";
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
  // The retry's own failure is the one reported: the first only said "no context".
  calls = 0;
  try {
    cuwrap::detail::check_on_stream(stream, "cuFake", [&] {
      return ++calls == 1 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_ILLEGAL_ADDRESS;
    });
    ADD_FAILURE() << "a failed retry passed";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_EQ(e.function(), "cuFake");
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
}

TEST_F(OldDriver, CheckOnStreamRetryUnderAnotherContextRestoresItAndReportsTheCallAsMade) {
  const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
  const CUcontext context = fake_query<CUcontext>("cuwrap_fake_context");
  const CUcontext other = fake_query<CUcontext>("cuwrap_fake_other_context");
  cuwrap::driver::cuCtxSetCurrent(other);
  int calls = 0;
  cuwrap::detail::check_on_stream(stream, "cuFake", [&] {
    ++calls;
    return cuwrap::driver::cuCtxGetCurrent() == context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
  // When the retry in the stream's context fails too, the call as made is reported.
  calls = 0;
  try {
    cuwrap::detail::check_on_stream(stream, "cuFake", [&] {
      return ++calls == 1 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    });
    ADD_FAILURE() << "a failed call passed";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_VALUE);
  }
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
}

// ---- kernel parameters: probing past the end, on drivers without cuKernelGetParamCount ----

TEST_F(OldDriver, ParameterInfoProbesToPastTheEndInDeviceZerosContextOnlyForTheQuery) {
  cuwrap::driver::cuInit(0);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const std::vector<cuwrap::ParamInfo> params =
      cuwrap::detail::query_param_info(fake_kernel(0x1003));
  ASSERT_EQ(params.size(), 3U);
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].offset, 8 * i);
    EXPECT_EQ(params[i].size, 8U);
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
  EXPECT_TRUE(cuwrap::detail::query_param_info(fake_kernel(0x1000)).empty());
  const CUcontext other = fake_query<CUcontext>("cuwrap_fake_other_context");
  cuwrap::driver::cuCtxSetCurrent(other);
  EXPECT_EQ(cuwrap::detail::query_param_info(fake_kernel(0x1002)).size(), 2U);
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other);
}

TEST_F(OldDriver, ParameterInfoFailureOtherThanPastTheEndIsThrown) {
  cuwrap::driver::cuInit(0);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  try {
    (void)cuwrap::detail::query_param_info(fake_kernel(0xBAD));
    ADD_FAILURE() << "a broken kernel had parameters";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(e.function(), "cuKernelGetParamInfo");
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
}

// ---- the kernel cache: keyed by context ID, never by a reusable address ----

TEST_F(OldDriver, KernelFunctionCacheIsKeyedByContextIdNotAddress) {
  cuwrap::driver::cuInit(0);
  const CUcontext context = fake_query<CUcontext>("cuwrap_fake_context");
  set_fake_context_id(1);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const cuwrap::Kernel kernel = cuwrap::Kernel::from_handle(fake_kernel(0x1002));
  EXPECT_EQ(kernel.num_arguments(), 2U);
  const int calls = fake_query<int>("cuwrap_fake_get_function_calls");
  EXPECT_EQ(kernel.function(context), fake_function(1));
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr) << "loaded in the context, then none";
  EXPECT_EQ(kernel.function(context), fake_function(1));
  EXPECT_EQ(fake_query<int>("cuwrap_fake_get_function_calls"), calls + 1) << "cached";
  // The context is destroyed and another made at its address: another ID.
  set_fake_context_id(2);
  EXPECT_EQ(kernel.function(context), fake_function(2));
  EXPECT_EQ(cuwrap::detail::kernel_function(kernel.impl(), context, 2), fake_function(2));
  EXPECT_EQ(fake_query<int>("cuwrap_fake_get_function_calls"), calls + 2);
  // Destroying a context through cuwrap evicts its functions: the next use loads again.
  cuwrap::detail::forget_context_functions(2);
  EXPECT_EQ(cuwrap::detail::kernel_function(kernel.impl(), context, 2), fake_function(2));
  EXPECT_EQ(fake_query<int>("cuwrap_fake_get_function_calls"), calls + 3);
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
  set_fake_context_id(1);
}

// The launch fast path: on a stream of another library, every launch calls the driver
// once (cuLaunchKernel) and asks nothing about contexts.
TEST_F(OldDriver, LaunchFastPathAsksNothingAboutContexts) {
  cuwrap::driver::cuInit(0);
  set_fake_context_id(1);
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
  const cuwrap::Kernel kernel = cuwrap::Kernel::from_handle(fake_kernel(0x1001));
  const std::uint64_t argument = 42;
  const int launches = fake_query<int>("cuwrap_fake_launches");
  cuwrap::launch(stream, {.grid = 1, .block = 1}, kernel, argument);  // loads the kernel
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr) << "loaded in the stream's context only";
  const int context_calls = fake_query<int>("cuwrap_fake_context_calls");
  const int loads = fake_query<int>("cuwrap_fake_get_function_calls");
  for (int i = 0; i < 3; ++i) {
    cuwrap::launch(stream, {.grid = 1, .block = 1}, kernel, argument);
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_context_calls"), context_calls);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_get_function_calls"), loads);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_launches"), launches + 4);
  // A StreamRef of another library's stream records no context: the CUkernel is
  // launched as it is (the driver resolves it in the stream's context).
  EXPECT_EQ(fake_query<CUfunction>("cuwrap_fake_launched_function"),
            reinterpret_cast<CUfunction>(fake_kernel(0x1001)));
}

TEST_F(OldDriver, KernelFunctionInADestroyedContextThrowsNamingTheKernel) {
  cuwrap::driver::cuInit(0);
  const cuwrap::Kernel kernel = cuwrap::Kernel::from_handle(fake_kernel(0x1001), "my_kernel");
  const auto destroyed = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0xDEAD0));
  const int calls = fake_query<int>("cuwrap_fake_get_function_calls");
  try {
    (void)kernel.function(destroyed);
    ADD_FAILURE() << "a destroyed context gave a function";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Kernel::function"), std::string::npos) << what;
    EXPECT_NE(what.find("my_kernel"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA_ERROR_CONTEXT_IS_DESTROYED"), std::string::npos) << what;
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_get_function_calls"), calls);
}

TEST_F(OldDriver, ForeignStreamRefAsksForItsContextWhenUsed) {
  set_fake_context_id(5);
  const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
  // A view records nothing when made (no driver call); the context is the driver's answer.
  const cuwrap::detail::ContextKey key = cuwrap::detail::stream_context_key(stream);
  EXPECT_EQ(key.context, nullptr);
  EXPECT_EQ(key.id, 0U);
  EXPECT_EQ(stream.context(), fake_query<CUcontext>("cuwrap_fake_context"));
  EXPECT_EQ(cuwrap::detail::stream_context_key(cuwrap::kLegacyDefaultStream).context, nullptr);
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

// cuda.core's tma_tensor_map example (1024 floats, a box of 128, no strides): the fake
// refuses a null globalStrides as the driver does, so the rank-1 encode passes only when
// cuwrap hands over an array; its entry is the tensor's bytes rounded up to 16.
TEST_F(OldDriver, RankOneTensorMapHandsTheDriverAStridesArray) {
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {128};
  EXPECT_NO_THROW(static_cast<void>(cuwrap::TensorMapDescriptor::from_tiled(
      CUdeviceptr{0x10000}, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, shape, {}, box)));
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_encoded_rank"), 1U);
  EXPECT_EQ(fake_query<unsigned long long>("cuwrap_fake_encoded_stride0"), 4096U);
  const std::uint64_t odd[] = {1001};  // 4004 bytes
  const std::uint32_t small_box[] = {4};
  EXPECT_NO_THROW(static_cast<void>(cuwrap::TensorMapDescriptor::from_tiled(
      CUdeviceptr{0x10000}, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, odd, {}, small_box)));
  EXPECT_EQ(fake_query<unsigned long long>("cuwrap_fake_encoded_stride0"), 4016U);
}

}  // namespace
