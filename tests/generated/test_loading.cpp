// Loading and error reporting of the generated layer. Each case that changes where a
// library is loaded from runs in a fresh child process (gtest's threadsafe death-test
// style re-executes the binary), because a library is opened once per process.
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include "gtest_compat.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace {

class GeneratedLoading : public ::testing::Test {
 protected:
  void SetUp() override { CUWRAP_GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(GeneratedLoading, MissingDriverLibraryThrowsLoadErrorNamingIt) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
        try {
          cuwrap::driver::cuInit(0);
        } catch (const cuwrap::LoadError& e) {
          std::fprintf(stderr, "library=%s symbol=[%s] what=%s\n", e.library().c_str(),
                       e.symbol().c_str(), e.what());
          std::exit(e.symbol().empty() ? 0 : 3);
        }
        std::exit(2);
      },
      ::testing::ExitedWithCode(0),
      "library=.*libcuda.*what=.*/nonexistent/libcuda.so.1.*CUWRAP_LIBCUDA");
}

TEST_F(GeneratedLoading, RawFormReportsMissingLibraryAsStatus) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBNVRTC", "/nonexistent/libnvrtc.so", 1);
        int major = 0;
        int minor = 0;
        const nvrtcResult status = cuwrap::nvrtc::raw::nvrtcVersion(&major, &minor);
        std::fprintf(stderr, "status=%d reason=%s\n", static_cast<int>(status),
                     cuwrap::last_load_error().c_str());
        std::exit(status == NVRTC_ERROR_INTERNAL_ERROR ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "reason=.*/nonexistent/libnvrtc.so");
}

TEST_F(GeneratedLoading, MissingNvJitLinkThrowsLoadError) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBNVJITLINK", "/nonexistent/libnvJitLink.so", 1);
        try {
          (void)cuwrap::nvjitlink::nvJitLinkVersion();
        } catch (const cuwrap::LoadError& e) {
          std::fprintf(stderr, "what=%s\n", e.what());
          std::exit(0);
        }
        std::exit(2);
      },
      ::testing::ExitedWithCode(0), "what=.*libnvJitLink.*CUWRAP_LIBNVJITLINK");
}

TEST_F(GeneratedLoading, LibraryWithoutTheSymbolThrowsLoadErrorNamingTheFunction) {
  // libnvJitLink is a real library that has no NVRTC entry points: loading it as NVRTC
  // must name the missing function, not crash.
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBNVRTC", "libnvJitLink.so.13", 1);
        try {
          (void)cuwrap::nvrtc::nvrtcVersion();
        } catch (const cuwrap::LoadError& e) {
          std::fprintf(stderr, "symbol=%s what=%s\n", e.symbol().c_str(), e.what());
          std::exit(e.symbol() == "nvrtcVersion" ? 0 : 3);
        }
        std::exit(2);
      },
      ::testing::ExitedWithCode(0), "symbol=nvrtcVersion what=.*nvrtcVersion.*not found");
}

TEST(GeneratedErrors, DriverErrorMessageWorksWithoutADriver) {
  const cuwrap::DriverError e(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
  EXPECT_EQ(e.code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(e.name(), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(e.function(), "cuMemAlloc");
  const std::string what = e.what();
  EXPECT_EQ(what.rfind("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (", 0), 0u) << what;
  EXPECT_NE(what.find("memory"), std::string::npos) << what;
  EXPECT_EQ(what.back(), ')');
}

TEST(GeneratedErrors, EveryExceptionDerivesFromError) {
  EXPECT_THROW(throw cuwrap::DriverError(CUDA_ERROR_INVALID_VALUE, "cuX"), cuwrap::Error);
  EXPECT_THROW(throw cuwrap::NvrtcError(NVRTC_ERROR_COMPILATION, "nvrtcX"), cuwrap::Error);
  EXPECT_THROW(throw cuwrap::NvJitLinkError(NVJITLINK_ERROR_PTX_COMPILE, "nvJitLinkX"),
               cuwrap::Error);
  EXPECT_THROW(throw cuwrap::LoadError("libx.so", "", "cannot load"), std::runtime_error);
}

TEST(GeneratedEnums, ToStringAndStreamingNameTheEnumerator) {
  EXPECT_EQ(cuwrap::to_string(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuwrap::to_string(CUDA_SUCCESS), "CUDA_SUCCESS");
  EXPECT_EQ(cuwrap::to_string(CU_DEVICE_ATTRIBUTE_WARP_SIZE), "CU_DEVICE_ATTRIBUTE_WARP_SIZE");
  EXPECT_EQ(cuwrap::to_string(NVRTC_ERROR_COMPILATION), "NVRTC_ERROR_COMPILATION");
  EXPECT_EQ(cuwrap::to_string(NVJITLINK_INPUT_PTX), "NVJITLINK_INPUT_PTX");
  std::ostringstream os;
  os << CUDA_ERROR_INVALID_VALUE << ' ' << CU_MEMORYTYPE_DEVICE << ' ' << NVRTC_SUCCESS;
  EXPECT_EQ(os.str(), "CUDA_ERROR_INVALID_VALUE CU_MEMORYTYPE_DEVICE NVRTC_SUCCESS");
  // A value that names no enumerator (a status a newer driver may return) is printed, not
  // lost. 1000 is unassigned and inside CUresult's range of values (0..1023: an enum
  // without a fixed underlying type holds no more), so the conversion is defined.
  const std::string unknown(cuwrap::to_string(static_cast<CUresult>(1000)));
  EXPECT_NE(unknown.find("1000"), std::string::npos) << unknown;
}

TEST(GeneratedDriver, WithoutAGpuCallsFailWithAClearError) {
  // On a GPU machine this passes through cuInit; without one it must be a typed error.
  try {
    cuwrap::driver::cuInit(0);
    const int count = cuwrap::driver::cuDeviceGetCount();
    EXPECT_GE(count, 0);
  } catch (const cuwrap::LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("libcuda"), std::string::npos) << e.what();
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.function(), "cuInit");
    EXPECT_NE(std::string(e.what()).find("cuInit failed: CUDA_ERROR_"), std::string::npos);
  }
}

}  // namespace
