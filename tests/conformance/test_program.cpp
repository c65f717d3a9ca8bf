// Port of cuda.core's tests/test_program.py: one TEST per Python test function (see
// README.md for those not ported and why, and for the option fields still pending).
//
// Compiling needs NVRTC (or libNVVM) but no GPU where the architecture is given; the
// tests that load what they compiled need a GPU.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "link_backend.hpp"
#include "nvrtc_fixture.hpp"
#include "temp_dir.hpp"
#include "toolkit_libraries.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::CodeType;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;
using cuwrap::testing::contains;

constexpr const char* kMyKernel = R"(extern "C" __global__ void my_kernel() {})";

// cuda.core's nvvm_ir fixture: `simple` calls `ave`; NVVM IR version 2.0.
constexpr const char* kNvvmIr = R"(
target triple = "nvptx64-unknown-cuda"
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"

define i32 @ave(i32 %a, i32 %b) {
entry:
  %add = add nsw i32 %a, %b
  %div = sdiv i32 %add, 2
  ret i32 %div
}

define void @simple(i32* %data) {
entry:
  %0 = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %1 = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %mul = mul i32 %0, %1
  %2 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %add = add i32 %mul, %2
  %call = call i32 @ave(i32 %add, i32 %add)
  store i32 %call, i32* %data, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone

!nvvm.annotations = !{!0}
!0 = !{void (i32*)* @simple, !"kernel", i32 1}

!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
)";

ProgramOptions with_arch(ProgramOptions options, const char* arch = "sm_90") {
  if (!options.arch) {
    options.arch = arch;
  }
  return options;
}

std::string text_of(const ObjectCode& code) { return {code.code().begin(), code.code().end()}; }

class test_program : public cuwrap::testing::DeviceNvrtcTest {};

// The option sets of cuda.core's parametrisation that ProgramOptions has today (the
// others are listed as pending in README.md).
std::vector<ProgramOptions> various_cpp_options() {
  std::vector<ProgramOptions> all;
  all.push_back(ProgramOptions{.name = "abc"});
  ProgramOptions debug;
  debug.debug = true;
  all.push_back(debug);
  ProgramOptions rdc;
  rdc.relocatable_device_code = true;
  rdc.max_register_count = 32;
  all.push_back(rdc);
  ProgramOptions precision;
  precision.ftz = true;
  precision.prec_sqrt = false;
  precision.prec_div = false;
  all.push_back(precision);
  ProgramOptions fast;
  fast.fma = false;
  fast.use_fast_math = true;
  all.push_back(fast);
  ProgramOptions lto;
  lto.link_time_optimization = true;
  all.push_back(lto);
  ProgramOptions macro;
  macro.define_macro = {"MY_MACRO"};
  all.push_back(macro);
  ProgramOptions macro_value;
  macro_value.define_macro = {"MY_MACRO=99"};
  all.push_back(macro_value);
  ProgramOptions macros;
  macros.define_macro = {"MY_MACRO=99", "MY_OTHER_MACRO=100"};
  all.push_back(macros);
  ProgramOptions include;
  include.include_path = {"/usr/local/include"};
  all.push_back(include);
  ProgramOptions cxx11;
  cxx11.std = "c++11";
  all.push_back(cxx11);
  // The option fields ProgramOptions gained for cuda.core's typed options (issue 28).
  const auto add = [&all](auto set) {
    ProgramOptions options;
    set(options);
    all.push_back(std::move(options));
  };
  add([](ProgramOptions& o) {
    o.device_code_optimize = true;
    o.debug = true;
  });
  add([](ProgramOptions& o) { o.extra_device_vectorization = true; });
  add([](ProgramOptions& o) { o.undefine_macro = {"MY_MACRO", "MY_OTHER_MACRO"}; });
  add([](ProgramOptions& o) {
    o.undefine_macro = {"MY_MACRO"};
    o.include_path = {"/usr/local/include"};
  });
  add([](ProgramOptions& o) {
    o.builtin_initializer_list = false;
    o.disable_warnings = true;
  });
  add([](ProgramOptions& o) {
    o.restrict = true;
    o.device_as_default_execution_space = true;
  });
  add([](ProgramOptions& o) {
    o.device_int128 = true;
    o.optimization_info = "inline";
  });
  add([](ProgramOptions& o) { o.no_display_error_number = true; });
  add([](ProgramOptions& o) {
    o.diag_error = {1234};
    o.diag_suppress = {1234};
  });
  add([](ProgramOptions& o) {
    o.diag_error = {1234, 1223};
    o.diag_suppress = {1234, 1223};
  });
  add([](ProgramOptions& o) { o.diag_warn = {1000}; });
  add([](ProgramOptions& o) {
    o.std = "c++11";
    o.ptxas_options = {"-v"};
  });
  add([](ProgramOptions& o) {
    o.std = "c++11";
    o.ptxas_options = {"-v", "-O2"};
  });
  add([](ProgramOptions& o) { o.brief_diagnostics = true; });
  add([](ProgramOptions& o) { o.builtin_move_forward = false; });
  add([](ProgramOptions& o) { o.extensible_whole_program = true; });
  add([](ProgramOptions& o) { o.fdevice_syntax_only = true; });
  add([](ProgramOptions& o) { o.gen_opt_lto = true; });
  add([](ProgramOptions& o) { o.minimal = true; });
  add([](ProgramOptions& o) { o.no_source_include = true; });
  add([](ProgramOptions& o) { o.no_cache = true; });
  add([](ProgramOptions& o) {
    o.arch = "sm_100";
    o.device_float128 = true;
  });
  add([](ProgramOptions& o) { o.frandom_seed = "12345"; });
  add([](ProgramOptions& o) { o.ofast_compile = "min"; });
  return all;
}

// cuda.core's option sets that need NVRTC 12.8 (precompiled headers).
std::vector<ProgramOptions> pch_cpp_options() {
  std::vector<ProgramOptions> all(4);
  all[0].pch = true;
  all[1].pch_verbose = true;
  all[2].pch_messages = false;
  all[3].instantiate_templates_in_pch = true;
  return all;
}

int nvrtc_version();

TEST(test_program_cpu, test_cpp_program_with_various_options) {
  CUWRAP_REQUIRE_NVRTC();
  std::vector<ProgramOptions> sets = various_cpp_options();
  if (nvrtc_version() >= 12800) {
    for (ProgramOptions& options : pch_cpp_options()) {
      sets.push_back(std::move(options));
    }
  }
  for (const ProgramOptions& options : sets) {
    const std::vector<std::string> flags = with_arch(options).to_nvrtc_options();
    SCOPED_TRACE(::testing::PrintToString(flags));
    Program program(kMyKernel, CodeType::Cxx, with_arch(options));
    EXPECT_EQ(program.backend(), "NVRTC");
    EXPECT_NO_THROW(static_cast<void>(program.compile(TargetType::Ptx)));
    program.close();
    EXPECT_EQ(program.handle(), nullptr);
  }
}

// NVRTC's version as cuda.core's tests write it (13200 for 13.2).
int nvrtc_version() {
  const auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  return major * 1000 + minor * 100;
}

using cuwrap::testing::TempDir;

TEST(test_program_cpu, test_cpp_program_with_trace_option) {
  CUWRAP_REQUIRE_NVRTC();
  if (nvrtc_version() < 13000) {
    GTEST_SKIP() << "buggy with NVRTC < 13.0 (the trace file cannot be opened)";
  }
  const TempDir dir("trace");
  ProgramOptions options;
  options.fdevice_time_trace = (dir.path() / "trace").string();
  Program program(kMyKernel, CodeType::Cxx, with_arch(options));
  EXPECT_EQ(program.backend(), "NVRTC");
  EXPECT_NO_THROW(static_cast<void>(program.compile(TargetType::Ptx)));
  program.close();
  EXPECT_EQ(program.handle(), nullptr);
}

TEST(test_program_cpu, test_cpp_program_with_pch_options) {
  CUWRAP_REQUIRE_NVRTC();
  if (nvrtc_version() < 12800) {
    GTEST_SKIP() << "PCH requires NVRTC >= 12.8";
  }
  const TempDir dir("pch");
  const std::string path = (dir.path() / "test.pch").string();
  ProgramOptions create;
  create.create_pch = path;
  ProgramOptions use;
  use.use_pch = path;
  for (const ProgramOptions& options : {create, use}) {
    SCOPED_TRACE(::testing::PrintToString(with_arch(options).to_nvrtc_options()));
    Program program(kMyKernel, CodeType::Cxx, with_arch(options));
    EXPECT_EQ(program.backend(), "NVRTC");
    EXPECT_NO_THROW(static_cast<void>(program.compile(TargetType::Ptx)));
    program.close();
    EXPECT_EQ(program.handle(), nullptr);
  }
}

// An NVRTC program made outside cuwrap: the Program compiles it as C++ and leaves it to
// its maker (not owning); a null handle is refused.
TEST(test_program_cpu, test_program_from_handle_nvrtc) {
  CUWRAP_REQUIRE_NVRTC();
  nvrtcProgram handle =
      cuwrap::nvrtc::nvrtcCreateProgram(kMyKernel, "adopted", 0, nullptr, nullptr);
  {
    Program program = Program::from_handle(handle, with_arch(ProgramOptions{}));
    EXPECT_EQ(program.backend(), "NVRTC");
    EXPECT_EQ(program.code_type(), CodeType::Cxx);
    EXPECT_EQ(program.handle(), handle);
    const ObjectCode ptx = program.compile(TargetType::Ptx);
    EXPECT_TRUE(contains(text_of(ptx), "my_kernel"));
    EXPECT_THROW(static_cast<void>(program.compile(TargetType::Ptx)), std::logic_error);
    program.close();
    EXPECT_EQ(program.handle(), nullptr);
  }
  cuwrap::nvrtc::nvrtcDestroyProgram(&handle);
  EXPECT_THROW(static_cast<void>(Program::from_handle(nullptr)), std::invalid_argument);
}

TEST(test_program_cpu, test_ptx_program_with_various_options) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode ptx = Program(kMyKernel, CodeType::Cxx, with_arch({})).compile(TargetType::Ptx);
  std::vector<ProgramOptions> all;
  ProgramOptions registers;
  registers.max_register_count = 32;
  all.push_back(registers);
  ProgramOptions debug;
  debug.debug = true;
  all.push_back(debug);
  ProgramOptions lineinfo;
  lineinfo.lineinfo = true;
  all.push_back(lineinfo);
  ProgramOptions ftz;
  ftz.ftz = true;
  all.push_back(ftz);
  ProgramOptions prec_div;
  prec_div.prec_div = true;
  all.push_back(prec_div);
  ProgramOptions prec_sqrt;
  prec_sqrt.prec_sqrt = true;
  all.push_back(prec_sqrt);
  ProgramOptions fma;
  fma.fma = true;
  all.push_back(fma);
  // cuda.core adds these where the linker is nvJitLink (the driver's takes neither):
  // time=True (any value asks for -time) and split_compile=True (1 thread).
  if (cuwrap::testing::expects_nvjitlink()) {
    ProgramOptions time;
    time.time = "timing.csv";
    all.push_back(time);
    ProgramOptions split;
    split.split_compile = 1;
    all.push_back(split);
  }
  for (const ProgramOptions& options : all) {
    Program program(text_of(ptx), CodeType::Ptx, with_arch(options));
    const std::string backend = program.backend();
    EXPECT_EQ(backend,
              cuwrap::testing::link_backend_name(cuwrap::testing::expected_link_backend().backend))
        << cuwrap::testing::expected_link_backend().reason;
    if (backend == "driver") {
      continue;  // the driver's linker needs a context: covered on the GPU machine
    }
    const ObjectCode cubin = program.compile(TargetType::Cubin);
    EXPECT_TRUE(cuwrap::testing::is_elf(cubin.code()));
    program.close();
  }
}

TEST(test_program_cpu, test_program_init_valid_code_type) {
  CUWRAP_REQUIRE_NVRTC();
  const Program program(kMyKernel, CodeType::Cxx);
  EXPECT_EQ(program.backend(), "NVRTC");
  EXPECT_NE(program.handle(), nullptr);
}

// cuda.core: Program(code, "FORTRAN") is refused; cuwrap's code type is an enum, so a
// string does not compile.
TEST(test_program_cpu, test_program_init_invalid_code_type) {
  EXPECT_FALSE((std::is_constructible_v<Program, std::string, std::string>));
  EXPECT_FALSE((std::is_constructible_v<Program, std::string, const char*>));
  EXPECT_TRUE((std::is_constructible_v<Program, std::string, CodeType>));
}

// cuda.core: Program(12345, "c++") is a TypeError; in C++ it does not compile.
TEST(test_program_cpu, test_program_init_invalid_code_format) {
  EXPECT_FALSE((std::is_constructible_v<Program, int, CodeType>));
  EXPECT_FALSE((std::is_constructible_v<Program, double, CodeType>));
}

class test_program_gpu : public test_program {};

TEST_F(test_program_gpu, test_program_compile_valid_target_type) {
  ProgramOptions named;
  named.name = "42";
  Program program(kMyKernel, CodeType::Cxx, named);
  const ObjectCode ptx = program.compile(TargetType::Ptx);
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  EXPECT_EQ(ptx.name(), "42");
  EXPECT_EQ(ptx.get_kernel("my_kernel").name(), "my_kernel");

  ProgramOptions renamed;
  renamed.name = "24";
  Program from_ptx(text_of(ptx), CodeType::Ptx, renamed);
  const ObjectCode cubin = from_ptx.compile(TargetType::Cubin);
  EXPECT_EQ(cubin.code_type(), TargetType::Cubin);
  EXPECT_EQ(cubin.name(), "24");
  EXPECT_EQ(cubin.get_kernel("my_kernel").name(), "my_kernel");
}

// cuda.core: compile("invalid_target") is a ValueError; the target is an enum here, and
// a value outside it is std::invalid_argument.
template <class T>
concept CompilesTo = requires(Program& program, T target) {
  program.compile(target);
};
TEST(test_program_cpu, test_program_compile_invalid_target_type) {
  EXPECT_FALSE(CompilesTo<std::string>);
  EXPECT_FALSE(CompilesTo<const char*>);
  EXPECT_TRUE(CompilesTo<TargetType>);
  CUWRAP_REQUIRE_NVRTC();
  Program program(kMyKernel, CodeType::Cxx, with_arch({}));
  EXPECT_THROW(static_cast<void>(program.compile(static_cast<TargetType>(42))),
               std::invalid_argument);
}

TEST(test_program_cpu, test_program_backend_property) {
  CUWRAP_REQUIRE_NVRTC();
  const Program program(kMyKernel, CodeType::Cxx);
  EXPECT_EQ(program.backend(), "NVRTC");
}

TEST(test_program_cpu, test_program_handle_property) {
  CUWRAP_REQUIRE_NVRTC();
  const Program program(kMyKernel, CodeType::Cxx);
  EXPECT_NE(program.handle(), nullptr);
}

TEST(test_program_cpu, test_program_close) {
  CUWRAP_REQUIRE_NVRTC();
  Program program(kMyKernel, CodeType::Cxx);
  program.close();
  EXPECT_EQ(program.handle(), nullptr);
  EXPECT_THROW(static_cast<void>(program.compile(TargetType::Ptx)), std::logic_error);
}

TEST_F(test_program_gpu, test_nvvm_program_creation_compilation) {
  CUWRAP_REQUIRE_NVVM();
  Program program(kNvvmIr, CodeType::Nvvm);
  EXPECT_EQ(program.backend(), "NVVM");
  const ObjectCode ptx = program.compile(TargetType::Ptx);
  EXPECT_EQ(ptx.get_kernel("simple").name(), "simple");
  program.close();
}

TEST(test_program_cpu, test_nvvm_compile_invalid_target) {
  CUWRAP_REQUIRE_NVVM();
  Program program(kNvvmIr, CodeType::Nvvm, with_arch({}));
  EXPECT_THROW(static_cast<void>(program.compile(TargetType::Cubin)), std::invalid_argument);
  program.close();
}

TEST(test_program_cpu, test_nvvm_program_options) {
  CUWRAP_REQUIRE_NVVM();
  std::vector<ProgramOptions> all;
  all.push_back(ProgramOptions{.name = "test1", .arch = "sm_90"});
  all.push_back(ProgramOptions{.name = "test2", .arch = "sm_100"});
  for (const ProgramOptions& options : all) {
    SCOPED_TRACE(options.name);
    Program program(kNvvmIr, CodeType::Nvvm, options);
    EXPECT_EQ(program.backend(), "NVVM");
    const ObjectCode ptx = program.compile(TargetType::Ptx);
    EXPECT_EQ(ptx.name(), options.name);
    const std::string text = text_of(ptx);
    EXPECT_TRUE(contains(text, ".visible .entry simple(")) << text;
    program.close();
  }
}

// cuda.core's as_bytes("nvrtc") spells debug and lineinfo --device-debug and
// --generate-line-info; NVRTC takes -G and -lineinfo for the same.
TEST(test_program_cpu, test_program_options_as_bytes_nvrtc) {
  ProgramOptions options;
  options.arch = "sm_80";
  options.debug = true;
  options.lineinfo = true;
  options.ftz = true;
  const std::vector<std::string> flags = options.to_nvrtc_options();
  const auto has = [&](const char* flag) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  };
  EXPECT_TRUE(has("-arch=sm_80")) << ::testing::PrintToString(flags);
  EXPECT_TRUE(has("--device-debug") || has("-G")) << ::testing::PrintToString(flags);
  EXPECT_TRUE(has("--generate-line-info") || has("-lineinfo")) << ::testing::PrintToString(flags);
  EXPECT_TRUE(has("--ftz=true") || has("-ftz=true")) << ::testing::PrintToString(flags);
}

// cuda.core also sets device_code_optimize (pending here) and expects -opt=3.
TEST(test_program_cpu, test_program_options_as_bytes_nvvm) {
  ProgramOptions options;
  options.arch = "sm_80";
  options.debug = true;
  options.ftz = true;
  const std::vector<std::string> flags = options.to_nvvm_options();
  const auto has = [&](const char* flag) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  };
  EXPECT_TRUE(has("-arch=compute_80")) << ::testing::PrintToString(flags);
  EXPECT_TRUE(has("-g")) << ::testing::PrintToString(flags);
  EXPECT_TRUE(has("-ftz=1")) << ::testing::PrintToString(flags);
}

// cuda.core raises CUDAError ("not supported by NVVM backend"); no driver is involved,
// so cuwrap's answer is std::invalid_argument naming the field.
TEST(test_program_cpu, test_program_options_as_bytes_nvvm_unsupported_option) {
  ProgramOptions options;
  options.arch = "sm_80";
  options.lineinfo = true;
  try {
    static_cast<void>(options.to_nvvm_options());
    ADD_FAILURE() << "lineinfo was accepted for NVVM";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "lineinfo")) << e.what();
  }
}

}  // namespace
