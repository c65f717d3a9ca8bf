// Code that defines CUWRAP_INLINE_BINDINGS before including the generated headers gets
// the typed forms inline, in cuwrap::<ns>::inline_bindings: functions of its own, in
// the same program as the library's compiled-once forms (which
// inline_bindings_library_side.cpp, built without the macro, calls). No GPU needed: NVRTC.
#define CUWRAP_INLINE_BINDINGS 1
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvrtc.hpp>

#include "inline_bindings_calls.hpp"
#include "toolkit_libraries.hpp"

#include <string>
#include <type_traits>

// inline_bindings_library_side.cpp: the same calls through the library's forms.
cuwrap::nvrtc::nvrtcVersion_result library_nvrtc_version();
std::string library_ptx(const char* source);
void* library_nvrtc_version_address();

namespace {

// The inline forms are members of the inline namespace, found as cuwrap::nvrtc::f; their
// result types are the library's (declared outside it).
static_assert(std::is_same_v<decltype(&cuwrap::nvrtc::inline_bindings::nvrtcVersion),
                             cuwrap::nvrtc::nvrtcVersion_result (*)()>);
static_assert(
    std::is_same_v<decltype(cuwrap::driver::cuMemGetInfo()), cuwrap::driver::cuMemGetInfo_result>);

constexpr const char* kKernel = R"(extern "C" __global__ void k(int* p) { *p = 42; })";

TEST(InlineBindings, AreFunctionsOfTheirOwnThatAnswerAsTheLibrarys) {
  CUWRAP_REQUIRE_NVRTC();
  const auto mine = cuwrap::nvrtc::nvrtcVersion();
  const auto library = library_nvrtc_version();
  EXPECT_EQ(mine.major, library.major);
  EXPECT_EQ(mine.minor, library.minor);
  EXPECT_NE(reinterpret_cast<void*>(&cuwrap::nvrtc::nvrtcVersion), library_nvrtc_version_address())
      << "the inline form is not the library's compiled one";
  const std::string ptx = compile_ptx(kKernel);
  EXPECT_NE(ptx.find(".entry k"), std::string::npos) << ptx.substr(0, 200);
  EXPECT_EQ(ptx, library_ptx(kKernel));
}

TEST(InlineBindings, FailuresThrowWithTheLogAsTheLibrarysDo) {
  CUWRAP_REQUIRE_NVRTC();
  try {
    (void)compile_ptx("extern \"C\" __global__ void k() { undeclared(); }");
    FAIL() << "a broken program compiled";
  } catch (const cuwrap::NvrtcError& e) {
    EXPECT_EQ(e.code(), NVRTC_ERROR_COMPILATION);
    EXPECT_NE(e.log().find("undeclared"), std::string::npos) << e.log();
  }
}

}  // namespace
