// Program, ProgramOptions and LinkerOptions where they follow cuda.core 1.3 (issue 28):
// cuda.core's further NVRTC/libNVVM/nvJitLink options and the flags they pass, C++ and
// NVVM IR with link_time_optimization compiled to real PTX, a PTX Program refusing the
// fields it cannot map, Program::from_handle and the NVVM program handle. No GPU
// needed: everything compiles for an explicit arch ("sm_90").
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/nvrtc.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "kernel_sources.hpp"
#include "link_backend.hpp"
#include "toolkit_libraries.hpp"

#include <algorithm>
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
using cuwrap::testing::is_elf;
using cuwrap::testing::kSaxpySource;

ProgramOptions core_sm90() {
  ProgramOptions options;
  options.arch = "sm_90";
  return options;
}

bool has(const std::vector<std::string>& options, const std::string& option) {
  return std::find(options.begin(), options.end(), option) != options.end();
}

std::string text_of(const ObjectCode& code) {
  const auto bytes = code.code();
  return {bytes.data(), bytes.size()};
}

template <class Exception, class Call>
std::string thrown(Call&& call) {
  try {
    call();
  } catch (const Exception& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// A kernel that does nothing, as NVVM IR.
constexpr const char* kNoopIr = R"(
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @noop() {
entry:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void ()* @noop, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
)";

// ---- cuda.core's further options: the flags each passes -------------------------

TEST(CudaCoreProgramOptions, EachFieldPassesCudaCoresFlag) {
  ProgramOptions o = core_sm90();
  o.extensible_whole_program = true;
  o.device_code_optimize = true;
  o.ptxas_options = {"-v", "-O2"};
  o.extra_device_vectorization = true;
  o.gen_opt_lto = true;
  o.undefine_macro = {"A", "B"};
  o.pre_include = {"first.h"};
  o.no_source_include = true;
  o.builtin_move_forward = false;
  o.builtin_initializer_list = true;
  o.disable_warnings = true;
  o.restrict = true;
  o.device_as_default_execution_space = true;
  o.device_int128 = true;
  o.device_float128 = true;
  o.optimization_info = "inline";
  o.no_display_error_number = true;
  o.diag_error = {177};
  o.diag_suppress = {550, 20012};
  o.diag_warn = {1};
  o.brief_diagnostics = false;
  o.time = "times.csv";
  o.split_compile = 0;
  o.fdevice_syntax_only = true;
  o.minimal = true;
  o.no_cache = true;
  o.fdevice_time_trace = "trace.json";
  o.frandom_seed = "42";
  o.ofast_compile = "min";
  const std::vector<std::string> flags = o.to_nvrtc_options();
  for (const char* flag : {"--extensible-whole-program",
                           "--dopt=on",
                           "--ptxas-options=-v",
                           "--ptxas-options=-O2",
                           "--extra-device-vectorization",
                           "--gen-opt-lto",
                           "--undefine-macro=A",
                           "--undefine-macro=B",
                           "--pre-include=first.h",
                           "--no-source-include",
                           "--builtin-move-forward=false",
                           "--builtin-initializer-list=true",
                           "--disable-warnings",
                           "--restrict",
                           "--device-as-default-execution-space",
                           "--device-int128",
                           "--device-float128",
                           "--optimization-info=inline",
                           "--no-display-error-number",
                           "--diag-error=177",
                           "--diag-suppress=550",
                           "--diag-suppress=20012",
                           "--diag-warn=1",
                           "--brief-diagnostics=false",
                           "--time=times.csv",
                           "--split-compile=0",
                           "--fdevice-syntax-only",
                           "--minimal",
                           "--no-cache",
                           "--fdevice-time-trace=trace.json",
                           "--frandom-seed=42",
                           "--Ofast-compile=min"}) {
    EXPECT_TRUE(has(flags, flag)) << flag;
  }
  // Unset fields pass nothing beyond the arch.
  EXPECT_EQ(core_sm90().to_nvrtc_options(), std::vector<std::string>{"-arch=sm_90"});
}

TEST(CudaCoreProgramOptions, MalformedValuesAreRefusedNamingTheField) {
  ProgramOptions o = core_sm90();
  o.ofast_compile = "fastest";
  EXPECT_TRUE(contains(thrown<std::invalid_argument>([&] { (void)o.to_nvrtc_options(); }),
                       "ofast_compile 'fastest'"));
  o = core_sm90();
  o.split_compile = -1;
  EXPECT_TRUE(contains(thrown<std::invalid_argument>([&] { (void)o.to_nvrtc_options(); }),
                       "split_compile must be >= 0, got -1"));
  o = core_sm90();
  o.time = "";
  EXPECT_TRUE(contains(thrown<std::invalid_argument>([&] { (void)o.to_nvrtc_options(); }),
                       "ProgramOptions::time is empty"));
  o = core_sm90();
  o.undefine_macro = {""};
  EXPECT_TRUE(contains(thrown<std::invalid_argument>([&] { (void)o.to_nvrtc_options(); }),
                       "undefine_macro holds an empty entry"));
}

TEST(CudaCoreProgramOptions, PrecompiledHeaderFieldsNeedNvrtc128) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions o = core_sm90();
  o.pch = true;
  o.pch_dir = "/tmp/pch";
  o.pch_messages = false;
  const auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  if (major * 1000 + minor * 10 >= 12080) {
    const std::vector<std::string> flags = o.to_nvrtc_options();
    EXPECT_TRUE(has(flags, "--pch"));
    EXPECT_TRUE(has(flags, "--pch-dir=/tmp/pch"));
    EXPECT_TRUE(has(flags, "--pch-messages=false"));
  } else {
    try {
      (void)o.to_nvrtc_options();
      ADD_FAILURE() << "pch accepted by NVRTC " << major << "." << minor;
    } catch (const cuwrap::UnsupportedError& e) {
      EXPECT_EQ(e.required_version(), 12080);
    }
  }
}

// NVRTC takes them: the flags are its own, and they change what it does.
TEST(CudaCoreProgramOptions, NvrtcAcceptsTheFlagsAndTheyTakeEffect) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions o = core_sm90();
  o.disable_warnings = true;
  o.restrict = true;
  o.device_int128 = true;
  o.extra_device_vectorization = true;
  o.builtin_move_forward = true;
  o.brief_diagnostics = true;
  o.split_compile = 1;
  o.ptxas_options = {"-O3"};
  o.device_code_optimize = true;
  EXPECT_TRUE(contains(text_of(Program(kSaxpySource, CodeType::Cxx, o).compile(TargetType::Ptx)),
                       ".entry"));

  // undefine_macro cancels a define_macro.
  constexpr const char* kNeedsUndefined = R"(
#ifdef DROPPED
#error DROPPED is defined
#endif
extern "C" __global__ void k() {}
)";
  ProgramOptions defined = core_sm90();
  defined.define_macro = {"DROPPED=1"};
  EXPECT_THROW(Program(kNeedsUndefined, CodeType::Cxx, defined).compile(TargetType::Ptx),
               cuwrap::NvrtcError);
  defined.undefine_macro = {"DROPPED"};
  EXPECT_NO_THROW(Program(kNeedsUndefined, CodeType::Cxx, defined).compile(TargetType::Ptx));

  // diag_error makes a warning (#177-D, a variable never referenced) an error.
  constexpr const char* kUnused = R"(extern "C" __global__ void k() { int unused; })";
  std::string log;
  EXPECT_NO_THROW(
      Program(kUnused, CodeType::Cxx, core_sm90()).compile(TargetType::Ptx, {.log = &log}));
  EXPECT_TRUE(contains(log, "177")) << log;
  ProgramOptions strict = core_sm90();
  strict.diag_error = {177};
  EXPECT_THROW(Program(kUnused, CodeType::Cxx, strict).compile(TargetType::Ptx),
               cuwrap::NvrtcError);
  ProgramOptions quiet = core_sm90();
  quiet.diag_suppress = {177};
  log.clear();
  EXPECT_NO_THROW(Program(kUnused, CodeType::Cxx, quiet).compile(TargetType::Ptx, {.log = &log}));
  EXPECT_FALSE(contains(log, "177")) << log;
}

// ---- link_time_optimization and PTX ---------------------------------------------------

TEST(CudaCoreProgram, CxxWithLinkTimeOptimizationCompilesToRealPtx) {
  CUWRAP_REQUIRE_NVRTC();
  ProgramOptions lto = core_sm90();
  lto.link_time_optimization = true;
  Program program(kSaxpySource, CodeType::Cxx, lto);
  const ObjectCode ptx = program.compile(TargetType::Ptx);
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  const std::string text = text_of(ptx);
  EXPECT_TRUE(contains(text, ".entry")) << text.substr(0, 200);
  EXPECT_TRUE(contains(text, ".target sm_90"));
  // LTO-IR from the same program still works.
  const ObjectCode ltoir = program.compile(TargetType::Ltoir);
  EXPECT_FALSE(is_elf(ltoir.code()));
  EXPECT_FALSE(ltoir.code().empty());
}

TEST(CudaCoreProgram, NvvmWithLinkTimeOptimizationCompilesToRealPtx) {
  CUWRAP_REQUIRE_NVVM();
  ProgramOptions lto = core_sm90();
  lto.link_time_optimization = true;
  Program program(kNoopIr, CodeType::Nvvm, lto);
  EXPECT_NE(program.nvvm_handle(), nullptr);
  EXPECT_EQ(program.handle(), nullptr);
  const std::string text = text_of(program.compile(TargetType::Ptx));
  EXPECT_TRUE(contains(text, ".entry noop")) << text.substr(0, 200);
  EXPECT_EQ(text.find('\0'), std::string::npos);
  // The LTO bitcode is what Ltoir gives.
  const ObjectCode ltoir = program.compile(TargetType::Ltoir);
  EXPECT_FALSE(contains(text_of(ltoir), ".entry"));
}

TEST(CudaCoreProgram, NvvmMapsDeviceCodeOptimizeAndRefusesNvrtcOnlyFields) {
  ProgramOptions o = core_sm90();
  o.device_code_optimize = false;
  EXPECT_TRUE(has(o.to_nvvm_options(), "-opt=0"));
  o.device_code_optimize = true;
  EXPECT_TRUE(has(o.to_nvvm_options(), "-opt=3"));
  o.restrict = true;
  o.diag_suppress = {1};
  o.ptxas_options = {"-v"};
  const std::string what = thrown<std::invalid_argument>([&] { (void)o.to_nvvm_options(); });
  EXPECT_TRUE(contains(what, "restrict")) << what;
  EXPECT_TRUE(contains(what, "diag_suppress")) << what;
  EXPECT_TRUE(contains(what, "ptxas_options")) << what;
}

// ---- a PTX Program: the fields the linker can take, and the others refused ------------

TEST(CudaCoreProgram, PtxProgramRefusesFieldsItCannotMap) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string ptx =
      text_of(Program(kSaxpySource, CodeType::Cxx, core_sm90()).compile(TargetType::Ptx));
  ProgramOptions o = core_sm90();
  o.std = "c++17";
  o.define_macro = {"X=1"};
  o.extra_options = {"-w"};
  o.restrict = true;
  for (const TargetType target : {TargetType::Ptx, TargetType::Cubin}) {
    const std::string what = thrown<std::invalid_argument>(
        [&] { (void)Program(ptx, CodeType::Ptx, o).compile(target); });
    for (const char* field : {"std", "define_macro", "extra_options", "restrict"}) {
      EXPECT_TRUE(contains(what, field)) << field << " in " << what;
    }
    EXPECT_TRUE(contains(what, "PTX")) << what;
  }
}

TEST(CudaCoreProgram, PtxProgramPassesTheLinkerFieldsOn) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string ptx =
      text_of(Program(kSaxpySource, CodeType::Cxx, core_sm90()).compile(TargetType::Ptx));
  ProgramOptions o = core_sm90();
  o.ptxas_options = {"-O3"};
  o.split_compile = 1;
  o.no_cache = true;
  if (!cuwrap::testing::expects_nvjitlink()) {
    // The driver's linker has no ptxas options: refused, naming the field and why.
    const std::string what = thrown<std::invalid_argument>(
        [&] { (void)Program(ptx, CodeType::Ptx, o).compile(TargetType::Cubin); });
    EXPECT_TRUE(contains(what, "ptxas_options needs nvJitLink")) << what;
    GTEST_SKIP() << "the fields reach nvJitLink only; here "
                 << cuwrap::testing::expected_link_backend().reason;
  }
  std::string log;
  const ObjectCode cubin = Program(ptx, CodeType::Ptx, o).compile(TargetType::Cubin, {.log = &log});
  EXPECT_TRUE(is_elf(cubin.code()));
  // A ptxas option nvJitLink does not know fails the link: the field reached it.
  o.ptxas_options = {"--no-such-ptxas-option"};
  EXPECT_ANY_THROW((void)Program(ptx, CodeType::Ptx, o).compile(TargetType::Cubin));
}

// ---- LinkerOptions: cuda.core's further fields ------------------------------------------

TEST(CudaCoreLinkerOptions, EachFieldPassesCudaCoresFlag) {
  LinkerOptions o;
  o.arch = "sm_90";
  o.verbose = true;
  o.optimization_level = 3;
  o.time = true;
  o.optimize_unused_variables = true;
  o.ptxas_options = {"-v"};
  o.split_compile = 0;
  o.split_compile_extended = 2;
  o.kernels_used = {"k1", "k2"};
  o.variables_used = {"v"};
  o.no_cache = true;
  o.ptx = true;
  const std::vector<std::string> flags = o.to_nvjitlink_options();
  for (const char* flag : {"-verbose", "-O3", "-time", "-optimize-unused-variables", "-Xptxas=-v",
                           "-split-compile=0", "-split-compile-extended=2", "-kernels-used=k1",
                           "-kernels-used=k2", "-variables-used=v", "-no-cache", "-ptx"}) {
    EXPECT_TRUE(has(flags, flag)) << flag;
  }
  o.optimization_level = 5;
  EXPECT_TRUE(contains(thrown<std::invalid_argument>([&] { (void)o.to_nvjitlink_options(); }),
                       "optimization_level must be 0..4, got 5"));
}

TEST(CudaCoreLinkerOptions, PtxFromCreationLinksToPtxAndStillToCubin) {
  CUWRAP_REQUIRE_NVRTC();
  CUWRAP_REQUIRE_NVJITLINK_BACKEND();
  ProgramOptions lto = core_sm90();
  lto.link_time_optimization = true;
  lto.relocatable_device_code = true;
  const ObjectCode ltoir = Program(kSaxpySource, CodeType::Cxx, lto).compile(TargetType::Ltoir);
  LinkerOptions o;
  o.arch = "sm_90";
  o.link_time_optimization = true;
  o.ptx = true;
  o.kernels_used = {"saxpy"};
  Linker linker({ltoir}, o);
  EXPECT_TRUE(contains(text_of(linker.link(TargetType::Ptx)), ".entry"));
  EXPECT_TRUE(is_elf(linker.link(TargetType::Cubin).code()));
}

// ---- Program::from_handle -------------------------------------------------------------

TEST(CudaCoreProgram, FromHandleCompilesAnNvrtcProgramMadeElsewhereOnce) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_THROW((void)Program::from_handle(nullptr), std::invalid_argument);
  nvrtcProgram raw =
      cuwrap::nvrtc::nvrtcCreateProgram(kSaxpySource, "saxpy.cu", 0, nullptr, nullptr);
  {
    Program program = Program::from_handle(raw, core_sm90());  // not owning
    EXPECT_EQ(program.handle(), raw);
    EXPECT_EQ(program.code_type(), CodeType::Cxx);
    EXPECT_EQ(program.backend(), "NVRTC");
    EXPECT_EQ(program.nvvm_handle(), nullptr);
    EXPECT_TRUE(contains(text_of(program.compile(TargetType::Ptx)), ".target sm_90"));
    EXPECT_THROW((void)program.compile(TargetType::Ptx), std::logic_error);
    EXPECT_THROW((void)program.program_cache_key(TargetType::Ptx), std::logic_error);
  }
  // Not owning: the program is still the caller's to destroy.
  EXPECT_EQ(cuwrap::nvrtc::raw::nvrtcDestroyProgram(&raw), NVRTC_SUCCESS);

  nvrtcProgram owned =
      cuwrap::nvrtc::nvrtcCreateProgram(kSaxpySource, "saxpy.cu", 0, nullptr, nullptr);
  Program program = Program::adopt(owned, core_sm90());
  Program moved = std::move(program);
  EXPECT_EQ(moved.handle(), owned);
  moved.close();  // destroys it
  EXPECT_EQ(moved.handle(), nullptr);
}

}  // namespace
