// Port of cuda.core's TestLinkerDispatch (tests/test_linker.py): the Linker's choice
// between nvJitLink and the driver's linker, and what the driver's linker refuses (LTO
// IR inputs, link-time optimisation), checked without a GPU against the stand-in
// driver (tests/compat/fake_libcuda.cpp). cuwrap decides the backend once per process,
// so this is an executable of its own, and each test needs a process of its own (ctest
// runs every test alone): run together, the first test fixes the case and those of the
// other case skip.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "fake_driver.hpp"
#include "toolkit_libraries.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

using cuwrap::CodeType;
using cuwrap::Linker;
using cuwrap::LinkerOptions;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;

constexpr const char* kPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry noop() { ret; }\n";

enum class Case { None, NoNvJitLink, CrossMajor };

// Make this process the `wanted` case before anything loads nvJitLink or reads the
// driver's version; false when another test of this process made it another case.
bool enter(Case wanted) {
  static Case current = Case::None;
  if (current == Case::None) {
    current = wanted;
    if (wanted == Case::NoNvJitLink) {
      ::setenv("CUWRAP_LIBNVJITLINK", "/nonexistent/cuwrap-conformance/libnvJitLink.so", 1);
    } else {
      unsigned major = 0;
      unsigned minor = 0;
      if (cuwrap::nvjitlink::raw::nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) {
        return false;
      }
      const int other = major == 12 ? 13000 : 12040;
      ::setenv("CUWRAP_FAKE_DRIVER_VERSION", std::to_string(other).c_str(), 1);
    }
  }
  return current == wanted;
}

#define ENTER_OR_SKIP(wanted)                                                     \
  do {                                                                            \
    ASSERT_TRUE(cuwrap::testing::kFakeInstalled);                                 \
    if (!enter(wanted)) {                                                         \
      GTEST_SKIP() << "needs a process of its own (ctest runs each test alone), " \
                      "or an nvJitLink to compare with the driver";               \
    }                                                                             \
  } while (false)

LinkerOptions sm90() {
  LinkerOptions options;
  options.arch = "sm_90";
  return options;
}

ObjectCode ltoir() {
  ProgramOptions options;
  options.arch = "sm_90";
  options.relocatable_device_code = true;
  options.link_time_optimization = true;
  return Program("__device__ int B() { return 0; }", CodeType::Cxx, options)
      .compile(TargetType::Ltoir);
}

// Refused before linking, naming `what` (the input or the option).
void expect_refused(const ObjectCode& input, const LinkerOptions& options, const char* what) {
  try {
    const Linker linker({input}, options);
    ADD_FAILURE() << what << " was accepted by the driver's linker";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TestLinkerDispatch, test_ltoir_without_nvjitlink_raises) {
  CUWRAP_REQUIRE_NVRTC();
  ENTER_OR_SKIP(Case::NoNvJitLink);
  const ObjectCode input = ltoir();
  EXPECT_FALSE(cuwrap::detail::nvjitlink_usable());
  EXPECT_THROW(Linker({input}, sm90()), std::invalid_argument);
}

// Without a usable nvJitLink: link_time_optimization is refused (naming the option), and
// a plain PTX link still works, on the driver backend.
void expect_lto_refused_plain_links_on_driver() {
  LinkerOptions options = sm90();
  options.link_time_optimization = true;
  expect_refused(ObjectCode::from_ptx(kPtx, "noop"), options, "link_time_optimization");
  const Linker plain({ObjectCode::from_ptx(kPtx, "noop")}, sm90());
  EXPECT_EQ(plain.backend(), "driver");
}

TEST(TestLinkerDispatch, test_lto_without_nvjitlink_raises) {
  ENTER_OR_SKIP(Case::NoNvJitLink);
  EXPECT_FALSE(cuwrap::detail::nvjitlink_usable());
  expect_lto_refused_plain_links_on_driver();
}

TEST(TestLinkerDispatch, test_cross_major_with_ltoir_raises) {
  CUWRAP_REQUIRE_NVRTC();
  ENTER_OR_SKIP(Case::CrossMajor);
  const ObjectCode input = ltoir();
  EXPECT_FALSE(cuwrap::detail::nvjitlink_usable());
  EXPECT_NE(cuwrap::detail::nvjitlink_fallback_reason().find("another major version"),
            std::string::npos);
  EXPECT_THROW(Linker({input}, sm90()), std::invalid_argument);
}

TEST(TestLinkerDispatch, test_cross_major_with_lto_option_raises) {
  ENTER_OR_SKIP(Case::CrossMajor);
  EXPECT_FALSE(cuwrap::detail::nvjitlink_usable());
  expect_lto_refused_plain_links_on_driver();
}

}  // namespace
