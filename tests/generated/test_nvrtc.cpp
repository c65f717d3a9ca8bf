// The generated NVRTC bindings against the real libnvrtc: no GPU needed.
#include <gtest/gtest.h>
#include <cuwrap/nvrtc.hpp>

#include "toolkit_libraries.hpp"

#include <span>
#include <string>
#include <vector>

namespace {

constexpr const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

// Own the program for the test's duration; destroy through the raw form.
struct ProgramGuard {
  nvrtcProgram prog;
  ~ProgramGuard() { cuwrap::nvrtc::raw::nvrtcDestroyProgram(&prog); }
};

void compile(nvrtcProgram prog, std::vector<const char*> options) {
  cuwrap::nvrtc::nvrtcCompileProgram(prog, static_cast<int>(options.size()), options.data());
}

TEST(GeneratedNvrtc, VersionReturnsBothNumbers) {
  CUWRAP_REQUIRE_NVRTC();
  auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  EXPECT_GE(major, 12);
  EXPECT_GE(minor, 0);
  int raw_major = 0;
  int raw_minor = 0;
  ASSERT_EQ(cuwrap::nvrtc::raw::nvrtcVersion(&raw_major, &raw_minor), NVRTC_SUCCESS);
  EXPECT_EQ(raw_major, major);
  EXPECT_EQ(raw_minor, minor);
}

TEST(GeneratedNvrtc, CompilesToPtxWithOneCallForm) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kSaxpy, "saxpy.cu", 0, nullptr, nullptr)};
  compile(g.prog, {"--gpu-architecture=compute_90"});
  const std::string ptx = cuwrap::nvrtc::nvrtcGetPTX(g.prog);
  EXPECT_NE(ptx.find(".entry saxpy"), std::string::npos) << ptx.substr(0, 400);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  // The one-call form returns what the size query announces (minus the NUL).
  EXPECT_EQ(ptx.size() + 1, cuwrap::nvrtc::nvrtcGetPTXSize(g.prog));
  EXPECT_EQ(ptx.find('\0'), std::string::npos);
}

TEST(GeneratedNvrtc, CompilesToCubinForSm90) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kSaxpy, "saxpy.cu", 0, nullptr, nullptr)};
  compile(g.prog, {"--gpu-architecture=sm_90"});
  const std::vector<char> cubin = cuwrap::nvrtc::nvrtcGetCUBIN(g.prog);
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.size(), cuwrap::nvrtc::nvrtcGetCUBINSize(g.prog));
  EXPECT_EQ(std::string(cubin.data(), 4), std::string("\x7f"
                                                      "ELF",
                                                      4));
  // The log of a clean compile is readable (possibly empty).
  const std::string log = cuwrap::nvrtc::nvrtcGetProgramLog(g.prog);
  EXPECT_EQ(log.find('\0'), std::string::npos);
}

TEST(GeneratedNvrtc, SyntaxErrorThrowsWithLogNamingTheLine) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr const char* kBroken = "extern \"C\" __global__ void k(int* p) {\n  *p = 1\n}\n";
  ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kBroken, "broken.cu", 0, nullptr, nullptr)};
  try {
    compile(g.prog, {"--gpu-architecture=compute_90"});
    FAIL() << "a kernel with a syntax error compiled";
  } catch (const cuwrap::NvrtcError& e) {
    EXPECT_EQ(e.code(), NVRTC_ERROR_COMPILATION);
    EXPECT_EQ(e.name(), "NVRTC_ERROR_COMPILATION");
    EXPECT_EQ(e.function(), "nvrtcCompileProgram");
    EXPECT_NE(e.log().find("broken.cu(3)"), std::string::npos) << e.log();
    EXPECT_EQ(std::string(e.what()).rfind("nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION", 0),
              0u)
        << e.what();
  }
}

// The span form says as much as the pointer form: the same log, in log() and what().
TEST(GeneratedNvrtc, SpanFormThrowsWithTheSameLogAsThePointerForm) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr const char* kBroken = "extern \"C\" __global__ void k(int* p) {\n  *p = 1\n}\n";
  const std::vector<const char*> options = {"--gpu-architecture=compute_90"};
  std::string pointer_log;
  {
    ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kBroken, "broken.cu", 0, nullptr, nullptr)};
    try {
      cuwrap::nvrtc::nvrtcCompileProgram(g.prog, 1, options.data());
      FAIL() << "a kernel with a syntax error compiled";
    } catch (const cuwrap::NvrtcError& e) {
      pointer_log = e.log();
    }
  }
  ASSERT_NE(pointer_log.find("broken.cu(3)"), std::string::npos) << pointer_log;
  ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kBroken, "broken.cu", 0, nullptr, nullptr)};
  try {
    cuwrap::nvrtc::nvrtcCompileProgram(g.prog, std::span<const char* const>(options));
    FAIL() << "a kernel with a syntax error compiled";
  } catch (const cuwrap::NvrtcError& e) {
    EXPECT_EQ(e.code(), NVRTC_ERROR_COMPILATION);
    EXPECT_EQ(e.log(), pointer_log);
    EXPECT_NE(std::string(e.what()).find("broken.cu(3)"), std::string::npos) << e.what();
  }
}

TEST(GeneratedNvrtc, NameExpressionsGiveLoweredNames) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr const char* kTemplate =
      "template <class T> __global__ void scale(T* p, T f) { p[threadIdx.x] *= f; }\n";
  ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kTemplate, "t.cu", 0, nullptr, nullptr)};
  cuwrap::nvrtc::nvrtcAddNameExpression(g.prog, "scale<float>");
  compile(g.prog, {"--gpu-architecture=compute_90"});
  const std::string lowered = cuwrap::nvrtc::nvrtcGetLoweredName(g.prog, "scale<float>");
  EXPECT_EQ(lowered, "_Z5scaleIfEvPT_S0_");
  EXPECT_NE(cuwrap::nvrtc::nvrtcGetPTX(g.prog).find(lowered), std::string::npos);
}

TEST(GeneratedNvrtc, InvalidOptionThrowsTypedError) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramGuard g{cuwrap::nvrtc::nvrtcCreateProgram(kSaxpy, "saxpy.cu", 0, nullptr, nullptr)};
  try {
    compile(g.prog, {"--no-such-option"});
    FAIL() << "an invalid option was accepted";
  } catch (const cuwrap::NvrtcError& e) {
    EXPECT_EQ(e.code(), NVRTC_ERROR_INVALID_OPTION);
  }
}

TEST(GeneratedNvrtc, RawFormReturnsStatusInsteadOfThrowing) {
  CUWRAP_REQUIRE_NVRTC();
  std::size_t size = 0;
  EXPECT_EQ(cuwrap::nvrtc::raw::nvrtcGetPTXSize(nullptr, &size), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_THROW(cuwrap::nvrtc::nvrtcGetPTXSize(nullptr), cuwrap::NvrtcError);
}

// A program's headers as {name, source} pairs (a span, or a braced list): the source
// includes them by name and compiles; without them it does not.
TEST(GeneratedNvrtc, HeadersAsNameSourcePairs) {
  CUWRAP_REQUIRE_NVRTC();
  const char* const source = R"(#include "scale.h"
extern "C" __global__ void scaled(float* x) { x[threadIdx.x] *= kScale; })";
  const std::vector<cuwrap::nvrtc::ProgramHeader> headers = {
      {"scale.h", "constexpr float kScale = 2.5f;"}};
  ProgramGuard from_span{cuwrap::nvrtc::nvrtcCreateProgram(
      source, "scaled.cu", std::span<const cuwrap::nvrtc::ProgramHeader>(headers))};
  compile(from_span.prog, {});
  EXPECT_NE(cuwrap::nvrtc::nvrtcGetPTX(from_span.prog).find(".entry scaled"), std::string::npos);
  ProgramGuard from_list{
      cuwrap::nvrtc::nvrtcCreateProgram(source, "scaled.cu", {{"scale.h", "#define kScale 3.0f"}})};
  compile(from_list.prog, {});
  ProgramGuard without{cuwrap::nvrtc::nvrtcCreateProgram(
      source, "scaled.cu", std::span<const cuwrap::nvrtc::ProgramHeader>())};
  EXPECT_THROW(compile(without.prog, {}), cuwrap::NvrtcError) << "scale.h came from nowhere";
}

}  // namespace
