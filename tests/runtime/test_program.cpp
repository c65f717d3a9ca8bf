// Program and ProgramOptions: every option changes what NVRTC produces, name
// expressions, compile errors with their log, PTX through nvJitLink. No GPU needed:
// everything compiles for an explicit arch ("sm_90").
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "gpu.hpp"
#include "kernel_sources.hpp"
#include "link_backend.hpp"
#include "toolkit_libraries.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::CodeType;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;
using cuwrap::testing::contains;
using cuwrap::testing::expected_link_backend;
using cuwrap::testing::expects_nvjitlink;
using cuwrap::testing::is_elf;
using cuwrap::testing::kSaxpySource;
using cuwrap::testing::kVectorAddSource;

// Floating-point work whose PTX depends on ftz, prec-div, prec-sqrt, fmad, fast math.
constexpr const char* kMath = R"(
extern "C" __global__ void math(float* o, float a, float b, float c) {
  o[0] = a * b + c;
  o[1] = a / b;
  o[2] = sqrtf(a);
  o[3] = sinf(a);
#ifdef EXTRA_VALUE
  o[4] = EXTRA_VALUE;
#endif
}
)";

// Enough live values that the register allocator wants far more than 32 registers.
constexpr const char* kRegisterHungry = R"(
extern "C" __global__ void hungry(float* o) {
  float a[64];
  for (int i = 0; i < 64; ++i) a[i] = o[i] * o[i + 64];
  float s = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) s += a[i] * a[j] * o[i * j];
  o[0] = s;
}
)";

ProgramOptions sm90() {
  ProgramOptions options;
  options.arch = "sm_90";
  return options;
}

std::string ptx_of(const std::string& source, ProgramOptions options) {
  Program program(source, CodeType::Cxx, std::move(options));
  ObjectCode obj = program.compile(TargetType::Ptx);
  return std::string(obj.code().begin(), obj.code().end());
}

// 1234567.0f appears as a float immediate or as its bit pattern stored as an integer.
bool has_float_1234567(const std::string& ptx) {
  return contains(ptx, "0f4996B438") || contains(ptx, "1234613304");
}

// Read the register count of the first kernel from a CUBIN: the EIATTR_REGCOUNT (0x2f)
// entry of the .nv.info section (symbol index, register count).
std::optional<std::uint32_t> cubin_register_count(std::span<const char> elf) {
  auto read = [&](std::size_t offset, auto value) {
    std::memcpy(&value, elf.data() + offset, sizeof(value));
    return value;
  };
  const auto section_offset = read(0x28, std::uint64_t{});
  const auto entry_size = read(0x3A, std::uint16_t{});
  const auto count = read(0x3C, std::uint16_t{});
  const auto names_index = read(0x3E, std::uint16_t{});
  const auto names_offset = read(section_offset + names_index * entry_size + 0x18, std::uint64_t{});
  for (std::uint16_t i = 0; i < count; ++i) {
    const std::size_t header = section_offset + std::size_t{i} * entry_size;
    const char* name = elf.data() + names_offset + read(header, std::uint32_t{});
    if (std::strcmp(name, ".nv.info") != 0) {
      continue;
    }
    const auto offset = read(header + 0x18, std::uint64_t{});
    const auto size = read(header + 0x20, std::uint64_t{});
    for (std::size_t p = offset; p + 4 <= offset + size;) {
      const auto format = static_cast<unsigned char>(elf[p]);
      const auto attribute = static_cast<unsigned char>(elf[p + 1]);
      if (format == 0x04) {  // EIFMT_SVAL: u16 length, then the value
        const auto length = read(p + 2, std::uint16_t{});
        if (attribute == 0x2f && length == 8) {
          return read(p + 8, std::uint32_t{});
        }
        p += 4 + length;
      } else {
        p += 4;
      }
    }
  }
  return std::nullopt;
}

// ---- option mapping --------------------------------------------------------------

TEST(ProgramOptions, MapsEveryFieldToItsNvrtcFlag) {
  ProgramOptions o;
  o.arch = "sm_90";
  o.std = "c++17";
  o.relocatable_device_code = true;
  o.debug = true;
  o.lineinfo = true;
  o.ftz = true;
  o.prec_sqrt = false;
  o.prec_div = true;
  o.fma = false;
  o.use_fast_math = true;
  o.max_register_count = 48;
  o.define_macro = {"DEBUG", "VERSION=2"};
  o.include_path = {"/opt/include"};
  o.link_time_optimization = true;
  o.extra_options = {"--extra-device-vectorization"};
  const std::vector<std::string> expected{"-arch=sm_90",
                                          "-std=c++17",
                                          "-rdc=true",
                                          "-G",
                                          "-lineinfo",
                                          "-ftz=true",
                                          "-prec-sqrt=false",
                                          "-prec-div=true",
                                          "-fmad=false",
                                          "-use_fast_math",
                                          "-maxrregcount=48",
                                          "-DDEBUG",
                                          "-DVERSION=2",
                                          "-I/opt/include",
                                          "-dlto",
                                          "--extra-device-vectorization"};
  EXPECT_EQ(o.to_nvrtc_options(), expected);
}

TEST(ProgramOptions, DefaultsGiveOnlyTheArch) {
  EXPECT_EQ(sm90().to_nvrtc_options(), std::vector<std::string>{"-arch=sm_90"});
}

TEST(ProgramOptions, AcceptsArchSpellings) {
  for (const char* spelling : {"sm_90", "90", "compute_90"}) {
    ProgramOptions o;
    o.arch = spelling;
    EXPECT_EQ(o.to_nvrtc_options().front(), "-arch=sm_90") << spelling;
  }
  ProgramOptions o;
  o.arch = "sm_90a";
  EXPECT_EQ(o.to_nvrtc_options().front(), "-arch=sm_90a");
}

TEST(ProgramOptions, RejectsMalformedValuesNamingThem) {
  ProgramOptions bad_arch;
  bad_arch.arch = "hopper";
  try {
    static_cast<void>(bad_arch.to_nvrtc_options());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "ProgramOptions::arch")) << e.what();
    EXPECT_TRUE(contains(e.what(), "hopper")) << e.what();
  }
  ProgramOptions bad_regs = sm90();
  bad_regs.max_register_count = 0;
  EXPECT_THROW(static_cast<void>(bad_regs.to_nvrtc_options()), std::invalid_argument);
  ProgramOptions bad_macro = sm90();
  bad_macro.define_macro = {"1BAD=2"};
  try {
    static_cast<void>(bad_macro.to_nvrtc_options());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "1BAD=2")) << e.what();
  }
}

TEST(ProgramOptions, ArchDefaultsToTheDeviceOrIsRequired) {
  const ProgramOptions o;  // no arch
  if (!cuwrap::testing::gpu_unavailable_reason().empty()) {
    try {
      static_cast<void>(o.to_nvrtc_options());
      FAIL() << "expected std::invalid_argument without a device";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(
          contains(e.what(), "ProgramOptions::arch is required when no CUDA device is available"))
          << e.what();
    }
    return;
  }
  EXPECT_EQ(o.to_nvrtc_options().front(), "-arch=sm_" + cuwrap::Device(0).arch());
}

// ---- targets -----------------------------------------------------------------------

TEST(Program, CompilesCxxToPtxForTheGivenArch) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kSaxpySource, CodeType::Cxx, sm90());
  EXPECT_EQ(program.backend(), "NVRTC");
  ObjectCode obj = program.compile(TargetType::Ptx);
  EXPECT_EQ(obj.code_type(), TargetType::Ptx);
  EXPECT_EQ(obj.name(), "default_program");
  const std::string ptx(obj.code().begin(), obj.code().end());
  EXPECT_TRUE(contains(ptx, ".target sm_90")) << ptx;
  EXPECT_TRUE(contains(ptx, ".visible .entry saxpy(")) << ptx;
  EXPECT_EQ(ptx.find('\0'), std::string::npos) << "PTX text must not carry its NUL";
}

TEST(Program, CompilesCxxToCubin) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kSaxpySource, CodeType::Cxx, sm90());
  ObjectCode obj = program.compile(TargetType::Cubin);
  EXPECT_EQ(obj.code_type(), TargetType::Cubin);
  EXPECT_TRUE(is_elf(obj.code()));
}

TEST(Program, CompilesCxxToLtoir) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kSaxpySource, CodeType::Cxx, sm90());
  ObjectCode obj = program.compile(TargetType::Ltoir);
  EXPECT_EQ(obj.code_type(), TargetType::Ltoir);
  ASSERT_GT(obj.code().size(), 16u);
  EXPECT_FALSE(is_elf(obj.code()));
  const std::string head(obj.code().begin(), obj.code().begin() + 16);
  EXPECT_FALSE(contains(head, ".version")) << "LTO-IR, not PTX";
}

TEST(Program, CompilesTwiceFromOneProgram) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kSaxpySource, CodeType::Cxx, sm90());
  ObjectCode ptx = program.compile(TargetType::Ptx);
  ObjectCode cubin = program.compile(TargetType::Cubin);
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  EXPECT_TRUE(is_elf(cubin.code()));
}

TEST(Program, RejectsFatbinTarget) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kSaxpySource, CodeType::Cxx, sm90());
  EXPECT_THROW(static_cast<void>(program.compile(TargetType::Fatbin)), std::invalid_argument);
}

// ---- each option changes what NVRTC does -----------------------------------------

TEST(ProgramOptionsEffect, DefineMacroChangesThePtx) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions with = sm90();
  with.define_macro = {"EXTRA_VALUE=1234567"};
  EXPECT_FALSE(has_float_1234567(ptx_of(kMath, sm90())));
  EXPECT_TRUE(has_float_1234567(ptx_of(kMath, with)));
}

TEST(ProgramOptionsEffect, ExtraOptionsArePassedVerbatim) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions with = sm90();
  with.extra_options = {"-DEXTRA_VALUE=1234567"};
  EXPECT_TRUE(has_float_1234567(ptx_of(kMath, with)));
}

TEST(ProgramOptionsEffect, MaxRegisterCountLimitsRegisters) {
  CUWRAP_REQUIRE_NVRTC();
  auto registers = [](ProgramOptions options) {
    Program program(kRegisterHungry, CodeType::Cxx, std::move(options));
    ObjectCode obj = program.compile(TargetType::Cubin);
    return cubin_register_count(obj.code());
  };
  ProgramOptions limited = sm90();
  limited.max_register_count = 32;
  const auto free_count = registers(sm90());
  const auto limited_count = registers(limited);
  ASSERT_TRUE(free_count.has_value());
  ASSERT_TRUE(limited_count.has_value());
  EXPECT_GT(*free_count, 32u);
  EXPECT_LE(*limited_count, 32u);
}

TEST(ProgramOptionsEffect, LineinfoAddsLocDirectives) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions with = sm90();
  with.lineinfo = true;
  EXPECT_FALSE(contains(ptx_of(kMath, sm90()), "\t.loc\t"));
  EXPECT_TRUE(contains(ptx_of(kMath, with), "\t.loc\t"));
}

TEST(ProgramOptionsEffect, DebugMakesADebugTarget) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions with = sm90();
  with.debug = true;
  EXPECT_FALSE(contains(ptx_of(kMath, sm90()), ".target sm_90, debug"));
  EXPECT_TRUE(contains(ptx_of(kMath, with), ".target sm_90, debug"));
}

TEST(ProgramOptionsEffect, StdSelectsTheLanguageStandard) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string source =
      "template <class T> concept Small = sizeof(T) <= 8;\n"
      "template <Small T> __global__ void k(T* o) { *o = T{}; }\n"
      "template __global__ void k<int>(int*);\n";
  ProgramOptions cxx17 = sm90();
  cxx17.std = "c++17";
  ProgramOptions cxx20 = sm90();
  cxx20.std = "c++20";
  EXPECT_THROW(static_cast<void>(ptx_of(source, cxx17)), cuwrap::NvrtcError);
  EXPECT_TRUE(contains(ptx_of(source, cxx20), ".entry"));
}

TEST(ProgramOptionsEffect, IncludePathFindsHeaders) {
  CUWRAP_REQUIRE_NVRTC();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("cuwrap_include_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cuwrap_test_header.h") << "#define FROM_HEADER 7654321\n";
  const std::string source =
      "#include \"cuwrap_test_header.h\"\n"
      "extern \"C\" __global__ void k(int* o) { o[0] = FROM_HEADER; }\n";
  ProgramOptions with = sm90();
  with.include_path = {dir.string()};
  EXPECT_THROW(static_cast<void>(ptx_of(source, sm90())), cuwrap::NvrtcError);
  EXPECT_TRUE(contains(ptx_of(source, with), "7654321"));
  std::filesystem::remove_all(dir);
}

TEST(ProgramOptionsEffect, UseFastMathUsesApproximations) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions with = sm90();
  with.use_fast_math = true;
  EXPECT_FALSE(contains(ptx_of(kMath, sm90()), "sin.approx"));
  EXPECT_TRUE(contains(ptx_of(kMath, with), "sin.approx"));
}

TEST(ProgramOptionsEffect, FtzFlushesDenormals) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions with = sm90();
  with.ftz = true;
  ProgramOptions without = sm90();
  without.ftz = false;
  EXPECT_FALSE(contains(ptx_of(kMath, without), ".ftz.f32"));
  EXPECT_TRUE(contains(ptx_of(kMath, with), "div.rn.ftz.f32"));
}

TEST(ProgramOptionsEffect, PrecDivAndPrecSqrtSelectTheInstructions) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions approximate = sm90();
  approximate.prec_div = false;
  approximate.prec_sqrt = false;
  ProgramOptions precise = sm90();
  precise.prec_div = true;
  precise.prec_sqrt = true;
  const std::string a = ptx_of(kMath, approximate);
  const std::string p = ptx_of(kMath, precise);
  EXPECT_TRUE(contains(p, "div.rn.f32"));
  EXPECT_TRUE(contains(p, "sqrt.rn.f32"));
  EXPECT_TRUE(contains(a, "div.full.f32"));
  EXPECT_TRUE(contains(a, "sqrt.approx.f32"));
}

TEST(ProgramOptionsEffect, FmaControlsContraction) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions off = sm90();
  off.fma = false;
  ProgramOptions on = sm90();
  on.fma = true;
  EXPECT_TRUE(contains(ptx_of(kMath, on), "fma.rn.f32"));
  const std::string p = ptx_of(kMath, off);
  EXPECT_TRUE(contains(p, "mul.rn.f32")) << p;
}

TEST(ProgramOptionsEffect, RelocatableDeviceCodeAllowsExternFunctions) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string source =
      "extern \"C\" __device__ float helper(float);\n"
      "extern \"C\" __global__ void k(float* o) { o[0] = helper(o[0]); }\n";
  ProgramOptions rdc = sm90();
  rdc.relocatable_device_code = true;
  EXPECT_THROW(static_cast<void>(ptx_of(source, sm90())), cuwrap::NvrtcError);
  EXPECT_TRUE(contains(ptx_of(source, rdc), ".extern .func"));
}

TEST(ProgramOptionsEffect, LinkTimeOptimizationProducesLtoir) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions lto = sm90();
  lto.link_time_optimization = true;
  Program program(kSaxpySource, CodeType::Cxx, lto);
  ObjectCode obj = program.compile(TargetType::Ltoir);
  EXPECT_EQ(obj.code_type(), TargetType::Ltoir);
  EXPECT_FALSE(is_elf(obj.code()));
}

// ---- name expressions and errors -------------------------------------------------

TEST(Program, NameExpressionsGiveLoweredNames) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kVectorAddSource, CodeType::Cxx, sm90());
  const std::vector<std::string> expressions{"vector_add<float>", "vector_add<int>"};
  ObjectCode obj = program.compile(TargetType::Cubin, expressions);
  EXPECT_EQ(obj.lowered_name("vector_add<float>"), "_Z10vector_addIfEvPKT_S2_PS0_m");
  EXPECT_EQ(obj.lowered_name("vector_add<int>"), "_Z10vector_addIiEvPKT_S2_PS0_m");
  ASSERT_EQ(obj.name_expressions().size(), 2u);
  try {
    static_cast<void>(obj.lowered_name("vector_add<double>"));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "vector_add<double>")) << e.what();
    EXPECT_TRUE(contains(e.what(), "vector_add<float>")) << e.what();
  }
}

TEST(Program, NameExpressionsWrittenInPlace) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kVectorAddSource, CodeType::Cxx, sm90());
  ObjectCode obj = program.compile(TargetType::Ptx, {"vector_add<float>", "vector_add<double>"});
  EXPECT_EQ(obj.lowered_name("vector_add<double>"), "_Z10vector_addIdEvPKT_S2_PS0_m");
  const std::string ptx(obj.code().begin(), obj.code().end());
  EXPECT_TRUE(contains(ptx, ".entry _Z10vector_addIfEvPKT_S2_PS0_m(")) << ptx;
}

TEST(Program, CompileErrorCarriesTheLog) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string source =
      "extern \"C\" __global__ void k(float* o) {\n"
      "  o[0] = 1.0f;\n"
      "  this_is_not_declared = 2;\n"
      "}\n";
  ProgramOptions o = sm90();
  o.name = "broken.cu";
  Program program(source, CodeType::Cxx, o);
  std::string log;
  try {
    static_cast<void>(program.compile(TargetType::Ptx, {.log = &log}));
    FAIL() << "expected NvrtcError";
  } catch (const cuwrap::NvrtcError& e) {
    EXPECT_EQ(e.code(), NVRTC_ERROR_COMPILATION);
    EXPECT_EQ(e.function(), "nvrtcCompileProgram");
    EXPECT_TRUE(contains(e.log(), "broken.cu(3)")) << e.log();
    EXPECT_TRUE(contains(e.log(), "this_is_not_declared")) << e.log();
    EXPECT_TRUE(contains(e.what(), "this_is_not_declared")) << e.what();
  }
  EXPECT_TRUE(contains(log, "broken.cu(3)")) << log;
}

TEST(Program, LogReceivesWarningsOnSuccess) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string source =
      "extern \"C\" __global__ void k(float* o) { int unused_variable; o[0] = 1.0f; }\n";
  Program program(source, CodeType::Cxx, sm90());
  std::string log = "stale";
  static_cast<void>(program.compile(TargetType::Ptx, {.log = &log}));
  EXPECT_NE(log, "stale");
  EXPECT_TRUE(log.empty() || contains(log, "unused_variable")) << log;
}

// ---- other code types, lifetime ----------------------------------------------------

TEST(Program, PtxCompilesToCubinThroughNvJitLink) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string ptx = ptx_of(kSaxpySource, sm90());
  Program program(ptx, CodeType::Ptx, sm90());
  // Where the Linker uses the driver's linker (link_backend.hpp), it assembles the PTX,
  // in a context.
  EXPECT_EQ(program.backend(), cuwrap::testing::link_backend_name(expected_link_backend().backend))
      << expected_link_backend().reason;
  EXPECT_EQ(program.handle(), nullptr);
  if (!expects_nvjitlink()) {
    CUWRAP_REQUIRE_GPU();
  }
  ObjectCode cubin = program.compile(TargetType::Cubin);
  EXPECT_EQ(cubin.code_type(), TargetType::Cubin);
  EXPECT_TRUE(is_elf(cubin.code()));
  EXPECT_THROW(static_cast<void>(program.compile(TargetType::Ltoir)), std::invalid_argument);
}

TEST(Program, BadPtxThrowsNvJitLinkErrorWithLog) {
  Program program(".version 8.0\n.target sm_90\n.address_size 64\n garbage here\n", CodeType::Ptx,
                  sm90());
  std::string log;
  if (!expects_nvjitlink()) {
    // The driver's linker rejects it in cuLinkAddData, in a context.
    CUWRAP_REQUIRE_GPU();
    try {
      static_cast<void>(program.compile(TargetType::Cubin, {}, {.log = &log}));
      FAIL() << "expected DriverError (" << expected_link_backend().reason << ")";
    } catch (const cuwrap::DriverError& e) {
      EXPECT_EQ(e.function(), "cuLinkAddData");
      EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_PTX);
    }
    return;
  }
  try {
    static_cast<void>(program.compile(TargetType::Cubin, {.log = &log}));
    FAIL() << "expected NvJitLinkError";
  } catch (const cuwrap::NvJitLinkError& e) {
    EXPECT_FALSE(e.log().empty());
    EXPECT_EQ(log, e.log());
  }
}

TEST(Program, CloseIsIdempotentAndLaterUseThrows) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kSaxpySource, CodeType::Cxx, sm90());
  EXPECT_NE(program.handle(), nullptr);
  program.close();
  program.close();
  EXPECT_EQ(program.handle(), nullptr);
  try {
    static_cast<void>(program.compile(TargetType::Ptx));
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "Program::compile on a closed Program");
  }
}

TEST(Program, MovesOwnership) {
  CUWRAP_REQUIRE_NVRTC();
  static_assert(!std::is_copy_constructible_v<Program>);
  static_assert(std::is_nothrow_move_constructible_v<Program>);
  Program a(kSaxpySource, CodeType::Cxx, sm90());
  const nvrtcProgram handle = a.handle();
  Program b(std::move(a));
  EXPECT_EQ(b.handle(), handle);
  EXPECT_EQ(a.handle(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(static_cast<void>(a.compile(TargetType::Ptx)), std::logic_error);
  Program c(kVectorAddSource, CodeType::Cxx, sm90());
  c = std::move(b);
  EXPECT_EQ(c.handle(), handle);
  EXPECT_TRUE(is_elf(c.compile(TargetType::Cubin).code()));
}

// ---- with a GPU ------------------------------------------------------------------

TEST(ProgramGpu, MaxRegisterCountIsVisibleToTheDriver) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  cuwrap::Device device(0);
  ProgramOptions limited;
  limited.max_register_count = 32;
  Program program(kRegisterHungry, CodeType::Cxx, limited);
  cuwrap::Kernel kernel = program.compile(TargetType::Cubin).get_kernel("hungry");
  EXPECT_LE(kernel.attributes().num_regs(device), 32);
  Program free_program(kRegisterHungry, CodeType::Cxx);
  cuwrap::Kernel free_kernel = free_program.compile(TargetType::Cubin).get_kernel("hungry");
  EXPECT_GT(free_kernel.attributes().num_regs(device), 32);
}

}  // namespace
