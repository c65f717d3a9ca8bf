// The generated nvJitLink bindings against the real libnvJitLink: no GPU needed.
#include <gtest/gtest.h>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include "toolkit_libraries.hpp"

#include <string>
#include <vector>

namespace {

std::string ptx_of(const char* source, const char* arch) {
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(source, "k.cu", 0, nullptr, nullptr);
  const char* options[] = {arch};
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 1, options);
  std::string ptx = cuwrap::nvrtc::nvrtcGetPTX(prog);
  cuwrap::nvrtc::raw::nvrtcDestroyProgram(&prog);
  return ptx;
}

struct LinkGuard {
  nvJitLinkHandle handle;
  ~LinkGuard() { cuwrap::nvjitlink::raw::nvJitLinkDestroy(&handle); }
};

TEST(GeneratedNvJitLink, LinksPtxToCubin) {
  CUWRAP_REQUIRE_NVRTC();
  CUWRAP_REQUIRE_NVJITLINK();
  const std::string ptx =
      ptx_of("extern \"C\" __global__ void fill(int* p, int v) { p[threadIdx.x] = v; }",
             "--gpu-architecture=compute_90");
  const char* options[] = {"-arch=sm_90"};
  LinkGuard g{cuwrap::nvjitlink::nvJitLinkCreate(1, options)};
  cuwrap::nvjitlink::nvJitLinkAddData(g.handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(),
                                      "fill.ptx");
  cuwrap::nvjitlink::nvJitLinkComplete(g.handle);
  const std::vector<char> cubin = cuwrap::nvjitlink::nvJitLinkGetLinkedCubin(g.handle);
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.size(), cuwrap::nvjitlink::nvJitLinkGetLinkedCubinSize(g.handle));
  EXPECT_EQ(std::string(cubin.data(), 4), std::string("\x7f"
                                                      "ELF",
                                                      4));
  auto [major, minor] = cuwrap::nvjitlink::nvJitLinkVersion();
  EXPECT_GE(major, 12u);
  (void)minor;
}

// The options are only read: a const array is taken as it is.
static_assert(requires(const char* const* options) {
  cuwrap::nvjitlink::nvJitLinkCreate(1U, options);
});

TEST(GeneratedNvJitLink, BadInputThrowsWithErrorLog) {
  CUWRAP_REQUIRE_NVJITLINK();
  const char* const options[] = {"-arch=sm_90"};
  LinkGuard g{cuwrap::nvjitlink::nvJitLinkCreate(1, options)};
  const std::string garbage = ".version 8.0\n.target sm_90\nthis is not ptx;\n";
  try {
    cuwrap::nvjitlink::nvJitLinkAddData(g.handle, NVJITLINK_INPUT_PTX, garbage.data(),
                                        garbage.size(), "garbage.ptx");
    cuwrap::nvjitlink::nvJitLinkComplete(g.handle);
    FAIL() << "nvJitLink accepted malformed PTX";
  } catch (const cuwrap::NvJitLinkError& e) {
    EXPECT_NE(e.code(), NVJITLINK_SUCCESS);
    EXPECT_FALSE(e.log().empty()) << e.what();
    EXPECT_NE(std::string(e.what()).find(" failed: NVJITLINK_ERROR_"), std::string::npos)
        << e.what();
  }
}

TEST(GeneratedNvJitLink, UnresolvedSymbolNamesItInTheLog) {
  CUWRAP_REQUIRE_NVJITLINK();
  // Relocatable device code leaves the call to the undefined helper to the linker.
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(
      "extern \"C\" __device__ int missing_helper(int);\n"
      "extern \"C\" __global__ void k(int* p) { p[0] = missing_helper(p[0]); }",
      "k.cu", 0, nullptr, nullptr);
  const char* rdc[] = {"--gpu-architecture=compute_90", "-rdc=true"};
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 2, rdc);
  const std::string rdc_ptx = cuwrap::nvrtc::nvrtcGetPTX(prog);
  cuwrap::nvrtc::raw::nvrtcDestroyProgram(&prog);
  const char* options[] = {"-arch=sm_90"};
  LinkGuard g{cuwrap::nvjitlink::nvJitLinkCreate(1, options)};
  cuwrap::nvjitlink::nvJitLinkAddData(g.handle, NVJITLINK_INPUT_PTX, rdc_ptx.data(), rdc_ptx.size(),
                                      "k.ptx");
  try {
    cuwrap::nvjitlink::nvJitLinkComplete(g.handle);
    FAIL() << "linking with an undefined function succeeded";
  } catch (const cuwrap::NvJitLinkError& e) {
    EXPECT_EQ(e.function(), "nvJitLinkComplete");
    EXPECT_NE(e.log().find("missing_helper"), std::string::npos) << e.log();
  }
}

}  // namespace
