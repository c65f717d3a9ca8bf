// The generated bindings of cudaGL.h and cudaEGL.h: their typed forms, enum names and
// loading (through libcuda, as cuda.h's). They exist where cuwrap-gen found the toolkit's
// header and the system's GL / EGL headers, and compile where those headers are; elsewhere
// these tests skip saying so.
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>

#include "gtest_compat.hpp"
#include "headless_gl.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#if __has_include(<cuwrap/driver_gl.hpp>) && __has_include(<GL/gl.h>)
#define CUWRAP_TEST_DRIVER_GL 1
#include <cuwrap/driver_gl.hpp>
#endif
#if __has_include(<cuwrap/driver_egl.hpp>) && __has_include(<EGL/egl.h>) && \
    __has_include(<EGL/eglext.h>)
#define CUWRAP_TEST_DRIVER_EGL 1
#include <cuwrap/driver_egl.hpp>
#endif

namespace {

class GraphicsBindings : public ::testing::Test {
 protected:
  void SetUp() override { CUWRAP_GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

#if defined(CUWRAP_TEST_DRIVER_GL)

// Outputs come back; the device array of cuGLGetDevices stays the caller's (sized by it).
static_assert(std::is_same_v<decltype(&cuwrap::driver_gl::cuGraphicsGLRegisterBuffer),
                             CUgraphicsResource (*)(GLuint, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuwrap::driver_gl::cuGraphicsGLRegisterImage),
                             CUgraphicsResource (*)(GLuint, GLenum, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuwrap::driver_gl::cuGLGetDevices),
                             unsigned int (*)(CUdevice*, unsigned int, CUGLDeviceList)>);
static_assert(std::is_same_v<decltype(&cuwrap::driver_gl::raw::cuGraphicsGLRegisterBuffer),
                             CUresult (*)(CUgraphicsResource*, GLuint, unsigned int) noexcept>);

TEST_F(GraphicsBindings, GLEnumsHaveNames) {
  EXPECT_EQ(cuwrap::to_string(CU_GL_DEVICE_LIST_ALL), "CU_GL_DEVICE_LIST_ALL");
  EXPECT_EQ(cuwrap::to_string(CU_GL_MAP_RESOURCE_FLAGS_WRITE_DISCARD),
            "CU_GL_MAP_RESOURCE_FLAGS_WRITE_DISCARD");
}

TEST_F(GraphicsBindings, GLEntryPointsComeFromLibcuda) {
  const auto& row =
      cuwrap::detail::kLibraries[static_cast<std::size_t>(cuwrap::detail::Library::DriverGl)];
  EXPECT_TRUE(row.driver_entry_points);
  EXPECT_STREQ(row.env, "CUWRAP_LIBCUDA");
  // A libcuda that cannot be loaded: the raw form answers with a status and says why.
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
        unsigned int count = 0;
        const CUresult status =
            cuwrap::driver_gl::raw::cuGLGetDevices(&count, nullptr, 0, CU_GL_DEVICE_LIST_ALL);
        std::fprintf(stderr, "status=%d error=%s\n", static_cast<int>(status),
                     cuwrap::last_load_error().c_str());
        std::exit(status == CUDA_ERROR_NOT_FOUND ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "error=.*/nonexistent/libcuda.so.1");
}

TEST_F(GraphicsBindings, GLDevicesOfAHeadlessContextIncludeItsCudaDevice) {
  try {
    cuwrap::driver::cuInit(0);
    if (cuwrap::driver::cuDeviceGetCount() == 0) {
      GTEST_SKIP() << "needs a GPU: no CUDA device present";
    }
  } catch (const cuwrap::Error& e) {
    GTEST_SKIP() << "needs a GPU: " << e.what();
  }
  std::string why_not;
  const auto context = cuwrap::testing::HeadlessGL::create(why_not, 0);
  if (!context) {
    GTEST_SKIP() << "no headless GL context: " << why_not;
  }
  if (context->cuda_device() < 0) {
    GTEST_SKIP() << "the EGL device tells no CUDA device (" << context->description() << ")";
  }
  std::vector<CUdevice> devices(8);
  const unsigned int count = cuwrap::driver_gl::cuGLGetDevices(
      devices.data(), static_cast<unsigned int>(devices.size()), CU_GL_DEVICE_LIST_ALL);
  ASSERT_GE(count, 1u) << context->description();
  devices.resize(count);
  EXPECT_NE(std::find(devices.begin(), devices.end(), cuwrap::driver::cuDeviceGet(0)),
            devices.end());
}

#else

TEST_F(GraphicsBindings, GLBindingsAreAbsent) {
  GTEST_SKIP() << "no <cuwrap/driver_gl.hpp> here, or no GL/gl.h (libgl-dev) to compile it";
}

#endif

#if defined(CUWRAP_TEST_DRIVER_EGL)

static_assert(std::is_same_v<decltype(&cuwrap::driver_egl::cuGraphicsEGLRegisterImage),
                             CUgraphicsResource (*)(EGLImageKHR, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuwrap::driver_egl::cuEGLStreamProducerReturnFrame),
                             CUeglFrame (*)(CUeglStreamConnection*, CUstream*)>);
static_assert(std::is_same_v<decltype(&cuwrap::driver_egl::cuGraphicsResourceGetMappedEglFrame),
                             CUeglFrame (*)(CUgraphicsResource, unsigned int, unsigned int)>);

TEST_F(GraphicsBindings, EGLEnumsHaveNames) {
  EXPECT_EQ(cuwrap::to_string(CU_EGL_FRAME_TYPE_PITCH), "CU_EGL_FRAME_TYPE_PITCH");
  EXPECT_EQ(cuwrap::to_string(CU_EGL_COLOR_FORMAT_RGBA), "CU_EGL_COLOR_FORMAT_RGBA");
  const auto& row =
      cuwrap::detail::kLibraries[static_cast<std::size_t>(cuwrap::detail::Library::DriverEgl)];
  EXPECT_TRUE(row.driver_entry_points);
}

#else

TEST_F(GraphicsBindings, EGLBindingsAreAbsent) {
  GTEST_SKIP() << "no <cuwrap/driver_egl.hpp> here, or no EGL/egl.h (libegl-dev) to compile it";
}

#endif

}  // namespace
