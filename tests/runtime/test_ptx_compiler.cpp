// nvPTXCompiler (docs/nvptxcompiler.md): in the default build (-DCUWRAP_WITH_NVPTXCOMPILER
// OFF) compile_ptx and the loader say how to build with it; with the option ON PTX
// compiles to a cubin in the process (no GPU needed), which loads and runs on a GPU.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/ptx_compiler.hpp>
#if CUWRAP_HAS_NVPTXCOMPILER
#include <cuwrap/nvptxcompiler.hpp>
#endif

#include <gtest/gtest.h>

#include "gpu.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

// One kernel storing 42 through its pointer: `.target sm_90`, so any sm_90+ runs it.
constexpr std::string_view kMarkPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry mark(.param .u64 out)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<1>;
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd1, %rd0;
  mov.u32 %r0, 42;
  st.global.u32 [%rd1], %r0;
  ret;
}
)";

const cuwrap::detail::LibraryInfo& ptx_compiler_row() {
  return cuwrap::detail::kLibraries[static_cast<std::size_t>(
      cuwrap::detail::Library::NvPtxCompiler)];
}

TEST(PtxCompiler, IsAStaticallyLinkedRowOfTheLibraryTable) {
  const cuwrap::detail::LibraryInfo& row = ptx_compiler_row();
  EXPECT_STREQ(row.header, "nvPTXCompiler.h");
  EXPECT_STREQ(row.soname, "libnvptxcompiler_static.a");
  ASSERT_NE(row.option, nullptr);
  EXPECT_STREQ(row.option, "CUWRAP_WITH_NVPTXCOMPILER");
  // generated/ holds the nvPTXCompiler layer; bindings generated at build time from a
  // toolkit without nvPTXCompiler.h (the 12.4 headers) have the row without its symbols.
  EXPECT_EQ(row.symbol_count, cuwrap::detail::kNvPtxCompilerSymbolCount);
  if (row.generated) {
    EXPECT_NE(row.addresses, nullptr);
  }
  // The shared libraries keep dlopen/dlsym.
  const auto& driver =
      cuwrap::detail::kLibraries[static_cast<std::size_t>(cuwrap::detail::Library::Driver)];
  EXPECT_EQ(driver.addresses, nullptr);
  EXPECT_EQ(driver.option, nullptr);
}

TEST(PtxCompiler, AddressTableMatchesTheBuild) {
  const cuwrap::detail::LibraryInfo& row = ptx_compiler_row();
  for (std::size_t i = 0; i < row.symbol_count; ++i) {
    EXPECT_EQ(row.addresses[i] != nullptr, CUWRAP_HAS_NVPTXCOMPILER == 1) << row.symbols[i].name;
  }
}

TEST(PtxCompiler, OptionsBecomePtxasArguments) {
  EXPECT_EQ(cuwrap::detail::ptx_compiler_arguments({}, "90"),
            (std::vector<std::string>{"--gpu-name=sm_90"}));
  const cuwrap::PtxCompilerOptions options{.arch = "compute_90a",
                                           .optimization_level = 2,
                                           .debug = true,
                                           .lineinfo = true,
                                           .verbose = true,
                                           .max_register_count = 64,
                                           .extra_options = {"--warn-on-spills"}};
  EXPECT_EQ(cuwrap::detail::ptx_compiler_arguments(options, *options.arch),
            (std::vector<std::string>{"--gpu-name=sm_90a", "--opt-level=2", "--device-debug",
                                      "--generate-line-info", "--verbose", "--maxrregcount=64",
                                      "--warn-on-spills"}));
}

// Bad input is refused before anything is loaded or compiled, in every build.
TEST(PtxCompiler, RefusesBadInputNamingIt) {
  const auto refusal = [](std::string_view ptx, const cuwrap::PtxCompilerOptions& options) {
    try {
      static_cast<void>(cuwrap::compile_ptx(ptx, options));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return "not std::invalid_argument: " + std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_EQ(refusal("", {.arch = "sm_90"}), "compile_ptx: the PTX is empty");
  EXPECT_NE(refusal(kMarkPtx, {.arch = "ampere"}).find("PtxCompilerOptions::arch 'ampere'"),
            std::string::npos);
  EXPECT_EQ(refusal(kMarkPtx, {.arch = "sm_90", .optimization_level = 4}),
            "PtxCompilerOptions::optimization_level is 4; ptxas takes 0 to 3");
  EXPECT_EQ(refusal(kMarkPtx, {.arch = "sm_90", .max_register_count = 0}),
            "PtxCompilerOptions::max_register_count is 0; it must be at least 1");
}

#if !CUWRAP_HAS_NVPTXCOMPILER
TEST(PtxCompiler, BuildWithoutItSaysHowToBuildWithIt) {
  try {
    static_cast<void>(cuwrap::compile_ptx(kMarkPtx, {.arch = "sm_90"}));
    FAIL() << "compile_ptx worked in a build without nvPTXCompiler";
  } catch (const cuwrap::LoadError& e) {
    EXPECT_EQ(e.library(), "libnvptxcompiler_static.a");
    // Bindings generated without nvPTXCompiler.h say that instead (the loader's message
    // for every library whose header was missing).
    if (ptx_compiler_row().generated) {
      EXPECT_STREQ(e.what(),
                   "cuwrap was built without nvPTXCompiler (configure with "
                   "-DCUWRAP_WITH_NVPTXCOMPILER=ON where the toolkit has "
                   "libnvptxcompiler_static.a)");
    } else {
      EXPECT_NE(std::string(e.what()).find("nvPTXCompiler.h was not found"), std::string::npos)
          << e.what();
    }
  }
  // The raw path of the generated layer reports the same, without throwing.
  EXPECT_EQ(cuwrap::detail::try_resolve_entry(cuwrap::detail::Library::NvPtxCompiler, 3, false),
            nullptr);
  EXPECT_NE(cuwrap::last_load_error().find(ptx_compiler_row().generated
                                               ? "-DCUWRAP_WITH_NVPTXCOMPILER=ON"
                                               : "nvPTXCompiler.h was not found"),
            std::string::npos);
}
#else
bool is_elf(const std::vector<std::byte>& image) {
  return image.size() > 4 && image[0] == std::byte{0x7f} && image[1] == std::byte{'E'} &&
         image[2] == std::byte{'L'} && image[3] == std::byte{'F'};
}

TEST(PtxCompiler, CompilesPtxToACubin) {
  const auto [major, minor] = cuwrap::nvptxcompiler::nvPTXCompilerGetVersion();
  EXPECT_GE(major, 12u) << minor;
  const std::vector<std::byte> cubin =
      cuwrap::compile_ptx(kMarkPtx, {.arch = "sm_90", .optimization_level = 3});
  EXPECT_TRUE(is_elf(cubin)) << cubin.size() << " bytes";
  // The debug setting reaches ptxas: a debug cubin carries its DWARF sections.
  const std::vector<std::byte> debug =
      cuwrap::compile_ptx(kMarkPtx, {.arch = "sm_90", .optimization_level = 0, .debug = true});
  EXPECT_TRUE(is_elf(debug));
  EXPECT_GT(debug.size(), cubin.size());
}

TEST(PtxCompiler, FailureCarriesTheErrorLog) {
  try {
    static_cast<void>(
        cuwrap::compile_ptx(".version 8.0\n.target sm_90\nnot ptx;\n", {.arch = "sm_90"}));
    FAIL() << "nvPTXCompiler accepted invalid PTX";
  } catch (const cuwrap::NvPtxCompilerError& e) {
    EXPECT_EQ(e.function(), "nvPTXCompilerCompile");
    EXPECT_FALSE(e.log().empty());
  }
}

TEST(PtxCompiler, CubinLoadsAndRuns) {
  CUWRAP_REQUIRE_GPU();
  const cuwrap::Device device(0);
  const cuwrap::ComputeCapability cc = device.compute_capability();
  if (cc.major < 9) {
    GTEST_SKIP() << "the PTX targets sm_90; device 0 is sm_" << cc.major << cc.minor;
  }
  device.set_current();
  // No arch: the current device's.
  const std::vector<std::byte> cubin = cuwrap::compile_ptx(kMarkPtx);
  const cuwrap::ObjectCode code = cuwrap::ObjectCode::from_cubin(cubin, "mark.cubin");
  const cuwrap::Kernel mark = code.get_kernel("mark");
  const cuwrap::Stream stream = device.create_stream();
  cuwrap::Buffer out = device.allocate(sizeof(std::uint32_t), stream);
  out.fill(std::uint8_t{0}, stream);
  cuwrap::launch(stream, {.grid = 1, .block = 1}, mark, out);
  std::vector<std::uint32_t> result(1);
  out.copy_to(result, stream);
  stream.sync();
  EXPECT_EQ(result[0], 42u);
}
#endif

}  // namespace
