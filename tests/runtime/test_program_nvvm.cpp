// Program with CodeType::Nvvm: NVVM IR compiled by libNVVM to PTX (no GPU needed: an
// explicit arch), its options, its errors with the log, and, with a GPU, the kernel run.
// Where the bindings have no libNVVM (headers without nvvm.h), the NVVM Program must
// throw LoadError naming the missing header.
#include <cuwrap/cuwrap.hpp>
#if CUWRAP_HAS_NVVM
#include <cuwrap/nvvm.hpp>
#endif

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "gpu.hpp"
#include "gtest_compat.hpp"
#include "toolkit_libraries.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::CodeType;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;
using cuwrap::testing::contains;

// out[i] = in[i] * a + b for i < n: one kernel entry, scale_add.
constexpr const char* kScaleAdd = R"(
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @scale_add(float* %out, float* %in, float %a, float %b, i32 %n) {
entry:
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %body, label %done
body:
  %idx = sext i32 %i to i64
  %src = getelementptr inbounds float, float* %in, i64 %idx
  %x = load float, float* %src, align 4
  %ax = fmul float %x, %a
  %y = fadd float %ax, %b
  %dst = getelementptr inbounds float, float* %out, i64 %idx
  store float %y, float* %dst, align 4
  br label %done
done:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone

!nvvm.annotations = !{!0}
!0 = !{void (float*, float*, float, float, i32)* @scale_add, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
)";

ProgramOptions nvvm_sm90() {
  ProgramOptions options;
  options.arch = "sm_90";
  return options;
}

// ---- no GPU needed -----------------------------------------------------------------

TEST(ProgramNvvm, CompilesNvvmIrToPtxWithTheKernelEntry) {
  CUWRAP_REQUIRE_NVVM();
  Program program(kScaleAdd, CodeType::Nvvm, nvvm_sm90());
  EXPECT_EQ(program.backend(), "NVVM");
  std::string log = "untouched";
  const ObjectCode ptx = program.compile(TargetType::Ptx, {.log = &log});
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  const std::string text(ptx.code().begin(), ptx.code().end());
  EXPECT_TRUE(contains(text, ".entry scale_add")) << text;
  EXPECT_TRUE(contains(text, ".target sm_90")) << text;
  EXPECT_EQ(text.find('\0'), std::string::npos);  // the text only, no terminating NUL
  EXPECT_NE(log, "untouched");                    // the (possibly empty) compile log was written
}

TEST(ProgramNvvm, ArchAndFlagsReachLibNvvm) {
  CUWRAP_REQUIRE_NVVM();
  ProgramOptions options;
  options.arch = "compute_80";
  Program program(kScaleAdd, CodeType::Nvvm, options);
  const ObjectCode ptx = program.compile(TargetType::Ptx);
  const std::string text(ptx.code().begin(), ptx.code().end());
  EXPECT_TRUE(contains(text, ".target sm_80")) << text;
  // fma=false keeps the multiply and the add apart; the default contracts them.
  options.fma = false;
  const ObjectCode separate = Program(kScaleAdd, CodeType::Nvvm, options).compile(TargetType::Ptx);
  const std::string separate_text(separate.code().begin(), separate.code().end());
  EXPECT_FALSE(contains(separate_text, "fma.rn.f32")) << separate_text;
  EXPECT_TRUE(contains(text, "fma.rn.f32")) << text;
}

TEST(ProgramNvvm, SecondCompileOfOneProgramWorks) {
  CUWRAP_REQUIRE_NVVM();
  Program program(kScaleAdd, CodeType::Nvvm, nvvm_sm90());
  const ObjectCode first = program.compile(TargetType::Ptx);
  const ObjectCode second = program.compile(TargetType::Ptx);
  EXPECT_TRUE(std::equal(first.code().begin(), first.code().end(), second.code().begin(),
                         second.code().end()));
}

// NVVMError, the spelling libNVVM uses for itself, names the same type.
#if CUWRAP_HAS_NVVM
static_assert(std::is_same_v<cuwrap::NVVMError, cuwrap::NvvmError>);
#endif

TEST(ProgramNvvm, MalformedIrThrowsNvvmErrorWithTheLog) {
  CUWRAP_REQUIRE_NVVM();
#if CUWRAP_HAS_NVVM
  std::string broken = kScaleAdd;
  broken.replace(broken.find("%y = fadd float %ax, %b"), 23, "%y = fadd float %ax, %nowhere");
  std::string log;
  try {
    Program program(broken, CodeType::Nvvm, nvvm_sm90());
    program.compile(TargetType::Ptx, {.log = &log});
    FAIL() << "malformed NVVM IR compiled";
  } catch (const cuwrap::NvvmError& e) {
    EXPECT_FALSE(e.log().empty());
    EXPECT_TRUE(contains(e.log(), "nowhere")) << e.log();
    EXPECT_TRUE(contains(e.what(), e.name())) << e.what();
    EXPECT_TRUE(contains(e.what(), e.log())) << e.what();
    EXPECT_TRUE(contains(e.what(), cuwrap::nvvm::nvvmGetErrorString(e.code()))) << e.what();
    EXPECT_TRUE(e.function().starts_with("nvvm")) << e.function();
    EXPECT_NE(e.code(), NVVM_SUCCESS);
  }
#else
  GTEST_SKIP() << "no nvvm.h: no NvvmError";
#endif
}

TEST(ProgramNvvm, OptionsWithoutALibNvvmEquivalentAreRejectedByName) {
  ProgramOptions options = nvvm_sm90();
  options.lineinfo = true;
  options.max_register_count = 32;
  options.std = "c++17";
  try {
    static_cast<void>(options.to_nvvm_options());
    FAIL() << "unsupported options accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "lineinfo")) << e.what();
    EXPECT_TRUE(contains(e.what(), "max_register_count")) << e.what();
    EXPECT_TRUE(contains(e.what(), "std")) << e.what();
    EXPECT_FALSE(contains(e.what(), "define_macro")) << e.what();
  }
}

TEST(ProgramNvvm, OptionsMapToLibNvvmSpelling) {
  ProgramOptions options;
  options.arch = "sm_90a";
  options.debug = true;
  options.ftz = true;
  options.prec_div = false;
  options.prec_sqrt = true;
  options.fma = false;
  options.link_time_optimization = true;
  options.extra_options = {"-opt=3"};
  const std::vector<std::string> expected = {"-arch=compute_90a", "-g",          "-ftz=1",
                                             "-prec-sqrt=1",      "-prec-div=0", "-fma=0",
                                             "-gen-lto",          "-opt=3"};
  EXPECT_EQ(options.to_nvvm_options(), expected);
  options.arch = "not-an-arch";
  EXPECT_THROW(static_cast<void>(options.to_nvvm_options()), std::invalid_argument);
}

TEST(ProgramNvvm, LtoirTargetGivesLtoIrNotPtx) {
  CUWRAP_REQUIRE_NVVM();
  Program program(kScaleAdd, CodeType::Nvvm, nvvm_sm90());
  const ObjectCode ltoir = program.compile(TargetType::Ltoir);
  EXPECT_EQ(ltoir.code_type(), TargetType::Ltoir);
  const std::string bytes(ltoir.code().begin(), ltoir.code().end());
  EXPECT_FALSE(bytes.empty());
  EXPECT_FALSE(contains(bytes, ".entry scale_add"));  // not PTX text
}

TEST(ProgramNvvm, TargetsOtherThanPtxAndLtoirAreRejected) {
  CUWRAP_REQUIRE_NVVM();
  Program program(kScaleAdd, CodeType::Nvvm, nvvm_sm90());
  EXPECT_THROW(program.compile(TargetType::Cubin), std::invalid_argument);
  EXPECT_THROW(program.compile(TargetType::Ptx, {"scale_add"}), std::invalid_argument);
}

TEST(ProgramNvvm, EmptyIrIsRejected) {
  EXPECT_THROW(Program("", CodeType::Nvvm, nvvm_sm90()), std::invalid_argument);
}

#if !CUWRAP_HAS_NVVM
TEST(ProgramNvvm, WithoutNvvmHeaderTheProgramNamesTheMissingHeader) {
  try {
    Program program(kScaleAdd, CodeType::Nvvm, nvvm_sm90());
    FAIL() << "an NVVM Program was made without libNVVM bindings";
  } catch (const cuwrap::LoadError& e) {
    EXPECT_TRUE(contains(e.what(), "nvvm.h")) << e.what();
    EXPECT_TRUE(contains(e.library(), "libnvvm")) << e.library();
  }
}
#endif

// What the LoadError of an unloadable libNVVM says: the file and the override, or, where
// the bindings have no libNVVM, the missing header.
#if CUWRAP_HAS_NVVM
constexpr const char* kMissingLibNvvm =
    "library=libnvvm.so.4 what=.*libnvvm.*/nonexistent/libnvvm.so.4.*CUWRAP_LIBNVVM";
#else
constexpr const char* kMissingLibNvvm = "library=libnvvm.so.4 what=.*nvvm.h";
#endif

class ProgramNvvmLoading : public ::testing::Test {
 protected:
  void SetUp() override { CUWRAP_GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// A library is opened once per process: the override is tried in a child process.
TEST_F(ProgramNvvmLoading, MissingLibNvvmThrowsLoadErrorNamingIt) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBNVVM", "/nonexistent/libnvvm.so.4", 1);
        try {
          Program program(kScaleAdd, CodeType::Nvvm, nvvm_sm90());
        } catch (const cuwrap::LoadError& e) {
          std::fprintf(stderr, "library=%s what=%s\n", e.library().c_str(), e.what());
          std::exit(0);
        }
        std::exit(2);
      },
      ::testing::ExitedWithCode(0), kMissingLibNvvm);
}

#if CUWRAP_HAS_NVVM
TEST_F(ProgramNvvmLoading, RawFormReportsMissingLibNvvmAsStatus) {
  EXPECT_EXIT(
      {
        setenv("CUWRAP_LIBNVVM", "/nonexistent/libnvvm.so.4", 1);
        int major = 0;
        int minor = 0;
        const nvvmResult status = cuwrap::nvvm::raw::nvvmVersion(&major, &minor);
        std::fprintf(stderr, "status=%d reason=%s\n", static_cast<int>(status),
                     cuwrap::last_load_error().c_str());
        std::exit(status == NVVM_ERROR_INVALID_INPUT ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "reason=.*/nonexistent/libnvvm.so.4");
}
#endif

// ---- with a GPU --------------------------------------------------------------------

class ProgramNvvmGpu : public cuwrap::testing::DeviceStreamTest {};

TEST_F(ProgramNvvmGpu, CompiledNvvmIrRunsOnTheDevice) {
  CUWRAP_REQUIRE_NVVM();
  // arch unset: the current device's.
  Program program(kScaleAdd, CodeType::Nvvm);
  const cuwrap::Kernel kernel = program.compile(TargetType::Ptx).get_kernel("scale_add");
  constexpr int kN = 10007;
  std::vector<float> in(kN);
  for (int i = 0; i < kN; ++i) {
    in[static_cast<std::size_t>(i)] = static_cast<float>(i);  // exact in float: i * 2 + 1 too
  }
  cuwrap::Buffer din = device_->allocate(kN * sizeof(float), *stream_);
  din.copy_from(in, *stream_);
  cuwrap::Buffer dout = device_->allocate(kN * sizeof(float), *stream_);
  dout.fill(std::uint8_t{0xAB}, *stream_);
  const float a = 2.0f;
  const float b = 1.0f;
  cuwrap::launch(*stream_, {.grid = (kN + 255) / 256, .block = 256}, kernel, dout, din, a, b, kN);
  std::vector<float> out(kN);
  dout.copy_to(out, *stream_);
  stream_->sync();
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(out[static_cast<std::size_t>(i)], static_cast<float>(i) * a + b) << i;
  }
}

}  // namespace
