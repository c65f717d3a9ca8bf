// The light generated headers on their own: <cuwrap/<lib>_enums.hpp> gives to_string and
// operator<< of each library's enums (bodies in the library), <cuwrap/<lib>_raw.hpp> the
// raw:: forms. No typed header is included here: this file compiling and linking is part
// of the check (tests/generator's header_probe.cpp checks what each header leaves out).
#include <cuwrap/driver_enums.hpp>
#include <cuwrap/driver_raw.hpp>
#include <cuwrap/nvrtc_enums.hpp>
#include <cuwrap/nvrtc_raw.hpp>
#if __has_include(<cuwrap/nvjitlink_enums.hpp>)
#include <cuwrap/nvjitlink_enums.hpp>
#include <cuwrap/nvjitlink_raw.hpp>
#define CUWRAP_TEST_HAVE_NVJITLINK 1
#endif

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace {

template <class Enum>
std::string printed(Enum value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

TEST(HeaderSplit, DriverEnumsHeaderNamesValues) {
  EXPECT_EQ(cuwrap::to_string(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(cuwrap::to_string(CU_DEVICE_ATTRIBUTE_WARP_SIZE), "CU_DEVICE_ATTRIBUTE_WARP_SIZE");
  EXPECT_EQ(printed(CU_MEMORYTYPE_DEVICE), "CU_MEMORYTYPE_DEVICE");
  EXPECT_NE(std::string(cuwrap::detail::describe(CUDA_ERROR_OUT_OF_MEMORY)), "unrecognized status");
}

TEST(HeaderSplit, NvrtcEnumsHeaderNamesValues) {
  EXPECT_EQ(cuwrap::to_string(NVRTC_ERROR_COMPILATION), "NVRTC_ERROR_COMPILATION");
  EXPECT_EQ(printed(NVRTC_ERROR_INVALID_PROGRAM), "NVRTC_ERROR_INVALID_PROGRAM");
}

#if defined(CUWRAP_TEST_HAVE_NVJITLINK)
TEST(HeaderSplit, NvJitLinkEnumsHeaderNamesValues) {
  EXPECT_EQ(cuwrap::to_string(NVJITLINK_ERROR_MISSING_ARCH), "NVJITLINK_ERROR_MISSING_ARCH");
  EXPECT_EQ(printed(NVJITLINK_INPUT_PTX), "NVJITLINK_INPUT_PTX");
}
#else
TEST(HeaderSplit, NvJitLinkEnumsHeaderNamesValues) {
  GTEST_SKIP() << "these bindings have no nvJitLink headers (a toolkit without nvJitLink.h)";
}
#endif

// The raw forms need no driver to answer: with null outputs they return a status, never
// throw. (Without libcuda the status is CUDA_ERROR_NOT_FOUND; with it, a parameter error.)
TEST(HeaderSplit, RawHeaderFormsReturnStatusWithoutThrowing) {
  CUresult status = CUDA_SUCCESS;
  EXPECT_NO_THROW(status = cuwrap::driver::raw::cuDriverGetVersion(nullptr));
  EXPECT_NE(status, CUDA_SUCCESS) << cuwrap::to_string(status);
  nvrtcResult nvrtc_status = NVRTC_SUCCESS;
  EXPECT_NO_THROW(nvrtc_status = cuwrap::nvrtc::raw::nvrtcVersion(nullptr, nullptr));
  EXPECT_NE(nvrtc_status, NVRTC_SUCCESS) << cuwrap::to_string(nvrtc_status);
}

}  // namespace
