// Linker: relocatable units to CUBIN, LTO-IR units with link-time optimisation, link
// errors with the log, options, lifetime; the linked code running on a GPU.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "gpu.hpp"
#include "kernel_sources.hpp"
#include "link_backend.hpp"
#include "toolkit_libraries.hpp"

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::CodeType;
using cuwrap::Linker;
using cuwrap::LinkerOptions;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;
using cuwrap::testing::contains;
using cuwrap::testing::expected_link_backend;
using cuwrap::testing::expects_nvjitlink;
using cuwrap::testing::is_elf;
using cuwrap::testing::link_backend_name;

// The two units of cuda.core's Linker example.
constexpr const char* kHelper = cuwrap::testing::kLinkHelperSource;
constexpr const char* kMain = cuwrap::testing::kLinkMainSource;

ObjectCode compile(const char* source, TargetType target, bool lto = false,
                   const std::optional<std::string>& arch = "sm_90") {
  ProgramOptions options;
  options.arch = arch;
  options.relocatable_device_code = true;
  options.link_time_optimization = lto;
  Program program(source, CodeType::Cxx, options);
  return program.compile(target);
}

LinkerOptions linker_sm90(bool lto = false) {
  LinkerOptions options;
  options.name = "linked_program";
  options.arch = "sm_90";
  options.link_time_optimization = lto;
  return options;
}

TEST(LinkerOptions, MapsFieldsToNvJitLinkFlags) {
  LinkerOptions o;
  o.arch = "90";
  o.link_time_optimization = true;
  o.debug = true;
  o.lineinfo = true;
  o.max_register_count = 64;
  o.ftz = true;
  o.prec_div = false;
  o.prec_sqrt = true;
  o.fma = false;
  o.extra_options = {"-O3"};
  const std::vector<std::string> expected{"-arch=sm_90",
                                          "-lto",
                                          "-g",
                                          "-lineinfo",
                                          "-maxrregcount=64",
                                          "-ftz=true",
                                          "-prec-div=false",
                                          "-prec-sqrt=true",
                                          "-fma=false",
                                          "-O3"};
  EXPECT_EQ(o.to_nvjitlink_options(), expected);
  EXPECT_EQ(linker_sm90().to_nvjitlink_options(), std::vector<std::string>{"-arch=sm_90"});
}

TEST(LinkerOptions, ArchDefaultsToTheDeviceOrIsRequired) {
  const LinkerOptions o;
  if (!cuwrap::testing::gpu_unavailable_reason().empty()) {
    try {
      static_cast<void>(o.to_nvjitlink_options());
      FAIL() << "expected std::invalid_argument without a device";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(std::string(e.what()).find(
                      "LinkerOptions::arch is required when no CUDA device is available") !=
                  std::string::npos)
          << e.what();
    }
    return;
  }
  EXPECT_EQ(o.to_nvjitlink_options().front(), "-arch=sm_" + cuwrap::Device(0).arch());
}

// The backend follows from the driver's and nvJitLink's versions (link_backend.hpp),
// whatever driver this runs on: real, emulated by the interposer, or the stand-in.
TEST(Linker, BackendFollowsTheDriverAndNvJitLinkVersions) {
  using cuwrap::testing::link_backend_for;
  using cuwrap::testing::LinkBackend;
  static_assert(link_backend_for(13000, 13000) == LinkBackend::NvJitLink);
  static_assert(link_backend_for(13020, 13000) == LinkBackend::NvJitLink);
  static_assert(link_backend_for(12080, 13000) == LinkBackend::Driver);
  static_assert(link_backend_for(12040, 13000) == LinkBackend::Driver);
  static_assert(link_backend_for(13000, 12080) == LinkBackend::Driver);
  static_assert(link_backend_for(12040, 12080) == LinkBackend::NvJitLink);
  static_assert(link_backend_for(12040, 12020) == LinkBackend::Driver);  // older than 12.3
  static_assert(link_backend_for(0, 13000) == LinkBackend::NvJitLink);   // no driver to compare
  static_assert(link_backend_for(12080, 0) == LinkBackend::Driver);
  EXPECT_EQ(cuwrap::detail::nvjitlink_usable(), expects_nvjitlink())
      << expected_link_backend().reason
      << "; the library says: " << cuwrap::detail::nvjitlink_fallback_reason();
}

TEST(Linker, LinksTwoRelocatableUnitsToCubin) {
  CUWRAP_REQUIRE_NVRTC();
  Linker linker({compile(kHelper, TargetType::Cubin), compile(kMain, TargetType::Cubin)},
                linker_sm90());
  // The driver's linker does the same job (no handle then), but needs a device to link.
  EXPECT_EQ(linker.backend(), link_backend_name(expected_link_backend().backend))
      << expected_link_backend().reason;
  EXPECT_EQ(linker.handle() != nullptr, expects_nvjitlink());
  if (!expects_nvjitlink()) {
    CUWRAP_REQUIRE_GPU();
  }
  ObjectCode linked = linker.link(TargetType::Cubin);
  EXPECT_EQ(linked.code_type(), TargetType::Cubin);
  EXPECT_EQ(linked.name(), "linked_program");
  EXPECT_TRUE(is_elf(linked.code()));
  EXPECT_EQ(linker.get_error_log(), "");
  static_cast<void>(linker.get_info_log());  // readable after linking
}

TEST(Linker, LinksPtxWithCubin) {
  CUWRAP_REQUIRE_NVRTC();
  if (!expects_nvjitlink()) {
    CUWRAP_REQUIRE_GPU();  // the driver's linker links in a context
  }
  Linker linker({compile(kHelper, TargetType::Ptx), compile(kMain, TargetType::Cubin)},
                linker_sm90());
  EXPECT_TRUE(is_elf(linker.link(TargetType::Cubin).code()));
}

TEST(Linker, LinkTimeOptimizesLtoirUnits) {
  CUWRAP_REQUIRE_NVRTC();
  if (!expects_nvjitlink()) {
    // Only nvJitLink optimises at link time: the driver fallback refuses, naming why.
    try {
      Linker linker({compile(kHelper, TargetType::Ltoir, true)}, linker_sm90(true));
      ADD_FAILURE() << "expected std::invalid_argument for link_time_optimization";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "link_time_optimization needs nvJitLink")) << e.what();
    }
  }
  CUWRAP_REQUIRE_NVJITLINK_BACKEND();
  Linker linker(
      {compile(kHelper, TargetType::Ltoir, true), compile(kMain, TargetType::Ltoir, true)},
      linker_sm90(true));
  ObjectCode cubin = linker.link(TargetType::Cubin);
  EXPECT_TRUE(is_elf(cubin.code()));
  // After LTO the helper is inlined: the PTX has the kernel and no call left.
  ObjectCode ptx = linker.link(TargetType::Ptx);
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  const std::string text(ptx.code().begin(), ptx.code().end());
  EXPECT_TRUE(contains(text, ".entry main_kernel")) << text;
  EXPECT_FALSE(contains(text, "call")) << text;
  EXPECT_TRUE(is_elf(linker.link(TargetType::Cubin).code()));  // back to CUBIN
}

TEST(Linker, LtoirWithoutLinkTimeOptimizationFails) {
  CUWRAP_REQUIRE_NVRTC();
  if (!expects_nvjitlink()) {
    // The driver's linker cannot read LTO-IR at all: refused when the Linker is made.
    try {
      Linker linker({compile(kHelper, TargetType::Ltoir, true)}, linker_sm90(false));
      ADD_FAILURE() << "expected std::invalid_argument for an LTO-IR input ("
                    << expected_link_backend().reason << ")";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "is LTO-IR, which the driver linker cannot link")) << e.what();
    }
    return;
  }
  EXPECT_THROW(
      {
        Linker linker(
            {compile(kHelper, TargetType::Ltoir, true), compile(kMain, TargetType::Ltoir, true)},
            linker_sm90(false));
        static_cast<void>(linker.link(TargetType::Cubin));
      },
      cuwrap::NvJitLinkError);
}

TEST(Linker, UndefinedSymbolThrowsWithTheLog) {
  CUWRAP_REQUIRE_NVRTC();
  Linker linker({compile(kMain, TargetType::Cubin)}, linker_sm90());
  if (!expects_nvjitlink()) {
    // The driver's linker fails in cuLinkComplete; it links in a context.
    CUWRAP_REQUIRE_GPU();
    try {
      static_cast<void>(linker.link(TargetType::Cubin));
      FAIL() << "expected DriverError (" << expected_link_backend().reason << ")";
    } catch (const cuwrap::DriverError& e) {
      EXPECT_EQ(e.function(), "cuLinkComplete");
    }
    EXPECT_TRUE(contains(linker.get_error_log(), "helper_func")) << linker.get_error_log();
    return;
  }
  try {
    static_cast<void>(linker.link(TargetType::Cubin));
    FAIL() << "expected NvJitLinkError";
  } catch (const cuwrap::NvJitLinkError& e) {
    EXPECT_EQ(e.function(), "nvJitLinkComplete");
    EXPECT_TRUE(contains(e.log(), "helper_func")) << e.log();
  }
  EXPECT_TRUE(contains(linker.get_error_log(), "helper_func")) << linker.get_error_log();
}

TEST(Linker, RejectsBadRequests) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_THROW(Linker({}, linker_sm90()), std::invalid_argument);
  Linker linker({compile(kHelper, TargetType::Cubin), compile(kMain, TargetType::Cubin)},
                linker_sm90());
  try {
    static_cast<void>(linker.link(TargetType::Ptx));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    // nvJitLink links to PTX only with -lto; the driver's linker never does.
    EXPECT_TRUE(contains(e.what(), expects_nvjitlink() ? "link_time_optimization"
                                                       : "links to TargetType::Cubin only"))
        << e.what() << " (" << expected_link_backend().reason << ")";
  }
  EXPECT_THROW(static_cast<void>(linker.link(TargetType::Ltoir)), std::invalid_argument);
}

TEST(Linker, KeepsNameExpressionsOfItsInputs) {
  CUWRAP_REQUIRE_NVRTC();
  if (!expects_nvjitlink()) {
    CUWRAP_REQUIRE_GPU();  // the driver's linker links in a context
  }
  ProgramOptions options;
  options.arch = "sm_90";
  options.relocatable_device_code = true;
  Program program("template <class T> __global__ void fill(T* p, T v) { *p = v; }", CodeType::Cxx,
                  options);
  const std::vector<std::string> expressions{"fill<int>"};
  ObjectCode obj = program.compile(TargetType::Cubin, expressions);
  Linker linker({obj}, linker_sm90());
  ObjectCode linked = linker.link(TargetType::Cubin);
  EXPECT_EQ(linked.lowered_name("fill<int>"), obj.lowered_name("fill<int>"));
}

TEST(Linker, CloseIsIdempotentAndMovesTransferOwnership) {
  CUWRAP_REQUIRE_NVRTC();
  static_assert(!std::is_copy_constructible_v<Linker>);
  Linker a({compile(kHelper, TargetType::Cubin), compile(kMain, TargetType::Cubin)}, linker_sm90());
  const nvJitLinkHandle handle = a.handle();
  Linker b(std::move(a));
  EXPECT_EQ(b.handle(), handle);
  EXPECT_EQ(a.handle(), nullptr);  // NOLINT(bugprone-use-after-move)
  b.close();
  b.close();
  EXPECT_EQ(b.handle(), nullptr);
  try {
    static_cast<void>(b.link(TargetType::Cubin));
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "Linker::link on a closed Linker");
  }
  EXPECT_THROW(static_cast<void>(b.get_error_log()), std::logic_error);
}

TEST(LinkerGpu, LinkedKernelRuns) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::Device device(0);
  device.set_current();
  const std::string arch = "sm_" + device.arch();
  for (bool lto : {false, true}) {
    if (lto && !expects_nvjitlink()) {
      GTEST_SKIP() << "linked without LTO; LTO needs nvJitLink, here "
                   << expected_link_backend().reason;
    }
    const TargetType unit = lto ? TargetType::Ltoir : TargetType::Cubin;
    LinkerOptions options;
    options.arch = arch;
    options.link_time_optimization = lto;
    Linker linker({compile(kHelper, unit, lto, arch), compile(kMain, unit, lto, arch)}, options);
    cuwrap::Kernel kernel = linker.link(TargetType::Cubin).get_kernel("main_kernel");

    constexpr std::size_t kN = 5000;
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    std::vector<float> host(kN);
    for (float& v : host)
      v = dist(rng);
    cuwrap::Stream stream = device.create_stream();
    cuwrap::Buffer data = device.allocate(kN * sizeof(float), stream);
    data.copy_from(host, stream);
    cuwrap::launch(stream, {.grid = (kN + 255) / 256, .block = 256}, kernel, data, kN);
    std::vector<float> result(kN);
    data.copy_to(result, stream);
    stream.sync();
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(result[i], host[i] * host[i]) << "lto=" << lto << " i=" << i;
    }
  }
}

}  // namespace
