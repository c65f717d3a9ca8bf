// Linker's fallback to the driver's cuLink* when nvJitLink cannot be used: this test
// program points CUWRAP_LIBNVJITLINK at a file that does not exist before anything loads
// nvJitLink. The backend choice and option checks need no GPU; linking does (the driver
// linker works in a context).
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"
#include "kernel_sources.hpp"
#include "toolkit_libraries.hpp"

#include <cstdlib>
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

// Runs before main(), so before any test can load nvJitLink.
const bool kNvJitLinkHidden = [] {
  ::setenv("CUWRAP_LIBNVJITLINK", "/nonexistent/cuwrap-test/libnvJitLink.so", 1);
  return true;
}();

constexpr const char* kHelper = cuwrap::testing::kLinkHelperSource;
constexpr const char* kMain = cuwrap::testing::kLinkMainSource;

ObjectCode compile(const char* source, TargetType target, const std::string& arch) {
  ProgramOptions options;
  options.arch = arch;
  options.relocatable_device_code = true;
  return Program(source, CodeType::Cxx, options).compile(target);
}

LinkerOptions with_arch(const std::string& arch) {
  LinkerOptions options;
  options.arch = arch;
  return options;
}

TEST(LinkerDriverFallback, ChosenWhenNvJitLinkIsMissing) {
  CUWRAP_REQUIRE_NVRTC();
  ASSERT_TRUE(kNvJitLinkHidden);
  EXPECT_FALSE(cuwrap::detail::nvjitlink_usable());
  Linker linker(
      {compile(kHelper, TargetType::Cubin, "sm_90"), compile(kMain, TargetType::Cubin, "sm_90")},
      with_arch("sm_90"));
  EXPECT_EQ(linker.backend(), "driver");
  EXPECT_EQ(linker.handle(), nullptr);
  EXPECT_EQ(linker.get_info_log(), "");
  EXPECT_EQ(linker.get_error_log(), "");
  Program ptx(".version 8.0\n.target sm_90\n.address_size 64\n", CodeType::Ptx,
              ProgramOptions{.arch = "sm_90"});
  EXPECT_EQ(ptx.backend(), "driver");
}

TEST(LinkerDriverFallback, RejectsWhatOnlyNvJitLinkDoes) {
  CUWRAP_REQUIRE_NVRTC();
  const std::vector<ObjectCode> inputs{compile(kMain, TargetType::Cubin, "sm_90")};
  const auto expect_rejected = [&](LinkerOptions options, const std::string& field) {
    try {
      Linker linker(inputs, std::move(options));
      ADD_FAILURE() << field << " must be rejected by the driver backend";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("nvJitLink"), std::string::npos) << e.what();
    }
  };
  LinkerOptions lto = with_arch("sm_90");
  lto.link_time_optimization = true;
  expect_rejected(lto, "link_time_optimization");
  LinkerOptions ftz = with_arch("sm_90");
  ftz.ftz = true;
  expect_rejected(ftz, "ftz");
  LinkerOptions extra = with_arch("sm_90");
  extra.extra_options = {"-O3"};
  expect_rejected(extra, "extra_options");

  ProgramOptions lto_unit;
  lto_unit.arch = "sm_90";
  lto_unit.relocatable_device_code = true;
  const ObjectCode ltoir = Program(kHelper, CodeType::Cxx, lto_unit).compile(TargetType::Ltoir);
  EXPECT_THROW(Linker({ltoir}, with_arch("sm_90")), std::invalid_argument);

  Linker linker(inputs, with_arch("sm_90"));
  EXPECT_THROW(static_cast<void>(linker.link(TargetType::Ptx)), std::invalid_argument);
}

TEST(LinkerDriverFallbackGpu, LinksRelocatableUnitsThatRun) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::Device device(0);
  device.set_current();
  const std::string arch = "sm_" + device.arch();
  // CUBIN + PTX inputs, as the driver linker takes both.
  Linker linker({compile(kHelper, TargetType::Ptx, arch), compile(kMain, TargetType::Cubin, arch)},
                with_arch(arch));
  ASSERT_EQ(linker.backend(), "driver");
  const ObjectCode linked = linker.link(TargetType::Cubin);
  EXPECT_EQ(linked.code_type(), TargetType::Cubin);
  const cuwrap::Kernel kernel = linked.get_kernel("main_kernel");

  constexpr std::size_t kN = 3000;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> host(kN);
  for (float& v : host) {
    v = dist(rng);
  }
  cuwrap::Stream stream = device.create_stream();
  cuwrap::Buffer data = device.allocate(kN * sizeof(float), stream);
  data.copy_from(host, stream);
  cuwrap::launch(stream, {.grid = (kN + 255) / 256, .block = 256}, kernel, data, kN);
  std::vector<float> result(kN);
  data.copy_to(result, stream);
  stream.sync();
  for (std::size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], host[i] * host[i]) << i;
  }
}

TEST(LinkerDriverFallbackGpu, UndefinedSymbolFailsWithTheErrorLog) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::Device device(0);
  device.set_current();
  const std::string arch = "sm_" + device.arch();
  Linker linker({compile(kMain, TargetType::Cubin, arch)}, with_arch(arch));
  try {
    static_cast<void>(linker.link(TargetType::Cubin));
    FAIL() << "linking without helper_func must fail";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.function(), "cuLinkComplete");
    EXPECT_NE(e.log().find("helper_func"), std::string::npos) << e.what();  // the log on the error
  }
  EXPECT_NE(linker.get_error_log().find("helper_func"), std::string::npos)
      << linker.get_error_log();
}

TEST(LinkerDriverFallbackGpu, PtxProgramAssemblesThroughTheDriver) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::Device device(0);
  device.set_current();
  const std::string arch = "sm_" + device.arch();
  ProgramOptions options;
  options.arch = arch;
  const ObjectCode ptx = Program("extern \"C\" __global__ void noop() {}", CodeType::Cxx, options)
                             .compile(TargetType::Ptx);
  Program program(std::string(ptx.code().begin(), ptx.code().end()), CodeType::Ptx, options);
  EXPECT_EQ(program.backend(), "driver");
  std::string log;
  const ObjectCode cubin = program.compile(TargetType::Cubin, {.log = &log});
  EXPECT_EQ(cubin.code_type(), TargetType::Cubin);
  EXPECT_NO_THROW(static_cast<void>(cubin.get_kernel("noop")));
}

}  // namespace
