// FatbinBuilder (nvFatbin): a fat binary of two architectures' cubins, built at run time,
// loads through ObjectCode::from_fatbin and its kernel runs. Needs nvFatbin.h with its
// generated bindings (CUWRAP_HAS_NVFATBIN), libnvfatbin and, for the launch, a GPU.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/fatbin_builder.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"
#include "kernel_sources.hpp"
#include "toolkit_libraries.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

#if CUWRAP_HAS_NVFATBIN
// A builder, or a skip naming why libnvfatbin cannot be used.
#define CUWRAP_FATBIN_BUILDER(name)                    \
  std::optional<cuwrap::FatbinBuilder> name;           \
  try {                                                \
    name.emplace();                                    \
  } catch (const cuwrap::LoadError& e) {               \
    GTEST_SKIP() << "needs libnvfatbin: " << e.what(); \
  }

cuwrap::ObjectCode saxpy_cubin(const std::string& arch) {
  cuwrap::ProgramOptions options;
  options.arch = arch;
  cuwrap::Program program(cuwrap::testing::kSaxpySource, cuwrap::CodeType::Cxx, options);
  return program.compile(cuwrap::TargetType::Cubin);
}
#endif

TEST(FatbinBuilder, RefusesEmptyCodeAndArchitecture) {
#if !CUWRAP_HAS_NVFATBIN
  GTEST_SKIP() << "the build has no nvFatbin.h bindings (docs/nvfatbin.md)";
#else
  CUWRAP_FATBIN_BUILDER(builder);
  const std::vector<char> code{'x'};
  EXPECT_THROW(builder->add_cubin({}, "sm_80"), std::invalid_argument);
  EXPECT_THROW(builder->add_cubin(code, "sm_"), std::invalid_argument);
  EXPECT_THROW(builder->add_ptx("", "sm_80"), std::invalid_argument);
  // Not a cubin: nvFatbin's own status, as an NvFatbinError naming the call.
  try {
    builder->add_cubin(code, "sm_80");
    FAIL() << "nvFatbinAddCubin accepted one byte as a cubin";
  } catch (const cuwrap::NvFatbinError& e) {
    EXPECT_EQ(e.function(), "nvFatbinAddCubin");
    EXPECT_NE(e.code(), NVFATBIN_SUCCESS);
  }
#endif
}

TEST(FatbinBuilder, TwoArchitecturesLoadAndLaunch) {
#if !CUWRAP_HAS_NVFATBIN
  GTEST_SKIP() << "the build has no nvFatbin.h bindings (docs/nvfatbin.md)";
#else
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  CUWRAP_FATBIN_BUILDER(builder);
  const cuwrap::ObjectCode sm80 = saxpy_cubin("sm_80");
  const cuwrap::ObjectCode sm90 = saxpy_cubin("sm_90");
  builder->add_cubin(sm80.code(), "sm_80", "saxpy80").add_cubin(sm90.code(), "sm_90", "saxpy90");
  const std::vector<char> fatbin = builder->build();
  ASSERT_GT(fatbin.size(), sm80.code().size() + sm90.code().size() / 2)
      << "the fat binary should hold both cubins";
  const cuwrap::ObjectCode code =
      cuwrap::ObjectCode::from_fatbin(std::as_bytes(std::span(fatbin)), "saxpy.fatbin");
  const cuwrap::Kernel saxpy = code.get_kernel("saxpy");

  constexpr std::size_t kN = 1000;
  std::vector<float> x(kN);
  const std::vector<float> y(kN, 1000.0f);
  for (std::size_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
  }
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  cuwrap::Buffer dx = device.allocate(kN * sizeof(float), stream);
  cuwrap::Buffer dy = device.allocate(kN * sizeof(float), stream);
  cuwrap::Buffer out = device.allocate(kN * sizeof(float), stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  out.fill(std::uint8_t{0xAB}, stream);
  cuwrap::launch(stream, {.grid = (kN + 127) / 128, .block = 128}, saxpy, 2.0f, dx, dy, out, kN);
  std::vector<float> result(kN);
  out.copy_to(result, stream);
  stream.sync();
  for (std::size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], 2.0f * static_cast<float>(i) + 1000.0f) << i;
  }
#endif
}

}  // namespace
