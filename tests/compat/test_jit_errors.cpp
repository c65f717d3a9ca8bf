// The generated layer's JIT calls and driver errors against the stand-in driver
// (tests/compat/fake_libcuda.cpp), without a GPU: JIT option values written back through
// JitOptions, the JIT error log a failing call's DriverError carries (added when the
// caller asked for none), and the message of CUDA_ERROR_INVALID_CONTEXT while no context
// is current.
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/jit_options.hpp>

#include "fake_driver.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace drv = cuwrap::driver;
using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

constexpr const char* kBadPtx = "bad ptx";
constexpr const char* kGoodPtx = "good ptx";
constexpr const char* kFakeError = "ptxas fatal: fake.ptx, line 3; syntax error";

class JitOnFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kFakeInstalled);
    drv::cuInit(0);
  }
};

// The caller gave no error-log option: the typed forms add one, and the exception carries it.
TEST_F(JitOnFakeDriver, FailingLoadCarriesTheJitErrorLogInEveryTypedForm) {
  auto expect_log = [](const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_PTX);
    EXPECT_EQ(e.function(), "cuModuleLoadDataEx");
    EXPECT_EQ(e.log(), kFakeError);
    EXPECT_NE(std::string(e.what()).find(kFakeError), std::string::npos) << e.what();
  };
  try {
    drv::cuModuleLoadDataEx(kBadPtx, 0, nullptr, nullptr);
    ADD_FAILURE() << "pointer form: bad PTX loaded";
  } catch (const cuwrap::DriverError& e) {
    expect_log(e);
  }
  try {
    drv::cuModuleLoadDataEx(kBadPtx, {}, {});
    ADD_FAILURE() << "span form: bad PTX loaded";
  } catch (const cuwrap::DriverError& e) {
    expect_log(e);
  }
  drv::JitOptions jit;
  jit.set(CU_JIT_MAX_REGISTERS, 32U);
  try {
    drv::cuModuleLoadDataEx(kBadPtx, jit);
    ADD_FAILURE() << "JitOptions form: bad PTX loaded";
  } catch (const cuwrap::DriverError& e) {
    expect_log(e);
  }
  // The caller's options reached the driver, with the added log's two.
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_max_registers"), 32U);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_options"), 3U);
  // The raw form adds nothing: the status only.
  EXPECT_EQ(drv::raw::cuModuleLoadDataEx(nullptr, kBadPtx, 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_options"), 0U);
}

// The caller's own error log is used (no second one added) and the exception carries
// what the driver wrote into it; the caller's size slot holds what the driver wrote back.
TEST_F(JitOnFakeDriver, CallersErrorLogIsTheOneUsedAndCarried) {
  std::array<char, 16> log{};
  std::array<CUjit_option, 2> options{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  std::array<void*, 2> values{log.data(),
                              reinterpret_cast<void*>(static_cast<std::uintptr_t>(log.size()))};
  try {
    drv::cuModuleLoadDataEx(kBadPtx, options, values);
    ADD_FAILURE() << "bad PTX loaded";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.log(), std::string(kFakeError).substr(0, 15));
  }
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_options"), 2U);
  EXPECT_EQ(std::string(log.data()), std::string(kFakeError).substr(0, 15));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(values[1]), 16U) << "the driver's write-back";

  drv::JitOptions jit;
  jit.error_log(8192);
  try {
    drv::cuModuleLoadDataEx(kBadPtx, jit);
    ADD_FAILURE() << "bad PTX loaded";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.log(), kFakeError);
  }
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_options"), 2U);
  EXPECT_EQ(jit.error_log(), kFakeError);
}

// Values the driver writes back reach the caller's array even when the wrapper added a
// log of its own (it passes a copy then).
TEST_F(JitOnFakeDriver, WrittenBackValuesReachTheCallersArray) {
  std::vector<char> info(64);
  std::vector<CUjit_option> options{CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                    CU_JIT_WALL_TIME};
  std::vector<void*> values{info.data(), reinterpret_cast<void*>(std::uintptr_t{64}), nullptr};
  const CUmodule module = drv::cuModuleLoadDataEx(kGoodPtx, options, values);
  EXPECT_EQ(module, reinterpret_cast<CUmodule>(std::uintptr_t{0xE0}));
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_options"), 5U) << "an error log was added";
  const std::string text = "ptxas info: fake kernel uses 8 registers";
  EXPECT_EQ(std::string(info.data()), text);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(values[1]), text.size() + 1);
  float ms = 0;
  std::memcpy(&ms, &values[2], sizeof ms);
  EXPECT_FLOAT_EQ(ms, 1.25F);
}

// JitOptions: logs and wall time read back after the call, and reusable.
TEST_F(JitOnFakeDriver, JitOptionsReadsLogsAndWallTimeBack) {
  drv::JitOptions jit;
  jit.set(CU_JIT_MAX_REGISTERS, 40U).info_log(8192).error_log(8192).wall_time();
  EXPECT_EQ(jit.size(), 6U);
  EXPECT_EQ(jit.info_log(), "");
  EXPECT_EQ(jit.wall_time_ms(), 0.0F);
  for (int round = 0; round < 2; ++round) {
    const CUmodule module = drv::cuModuleLoadDataEx(kGoodPtx, jit);
    EXPECT_EQ(module, reinterpret_cast<CUmodule>(std::uintptr_t{0xE0}));
    EXPECT_EQ(jit.info_log(), "ptxas info: fake kernel uses 8 registers") << round;
    EXPECT_EQ(jit.error_log(), "");
    EXPECT_FLOAT_EQ(jit.wall_time_ms(), 1.25F);
    EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_max_registers"), 40U);
    EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_options"), 6U) << "no log added";
  }
  // A later set replaces the value.
  jit.set(CU_JIT_MAX_REGISTERS, 24);
  EXPECT_EQ(jit.size(), 6U);
  (void)drv::cuModuleLoadDataEx(kGoodPtx, jit);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_jit_max_registers"), 24U);
}

TEST(JitOptions, RefusesLogOptionsThroughSetAndEmptyLogs) {
  drv::JitOptions jit;
  EXPECT_THROW(jit.set(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, 10U), std::invalid_argument);
  EXPECT_THROW(jit.set(CU_JIT_WALL_TIME, 0), std::invalid_argument);
  try {
    jit.error_log(0);
    ADD_FAILURE() << "an empty log was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bytes is 0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(jit.size(), 0U);
}

// Mixing the layers: a typed call failing with CUDA_ERROR_INVALID_CONTEXT while no
// context is current says so and names Device::set_current().
TEST_F(JitOnFakeDriver, InvalidContextWithNoCurrentContextSaysSo) {
  drv::cuCtxSetCurrent(nullptr);
  try {
    (void)drv::cuCtxGetDevice();
    ADD_FAILURE() << "cuCtxGetDevice worked without a context";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(e.function(), "cuCtxGetDevice");
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cuCtxGetDevice failed: CUDA_ERROR_INVALID_CONTEXT", 0), 0U) << what;
    EXPECT_NE(what.find("no CUDA context is current"), std::string::npos) << what;
    EXPECT_NE(what.find("Device::set_current()"), std::string::npos) << what;
  }
  // With a context current, the failure is the driver's alone.
  drv::cuCtxSetCurrent(fake_query<CUcontext>("cuwrap_fake_other_context"));
  try {
    drv::cuCtxSynchronize();
    ADD_FAILURE() << "cuCtxSynchronize worked in a context the fake refuses";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(std::string(e.what()).find("no CUDA context is current"), std::string::npos)
        << e.what();
  }
  drv::cuCtxSetCurrent(nullptr);
}

// cuLinkAddData's read-only input as bytes or text: no const_cast for the caller, the
// driver gets the bytes as given and text NUL-terminated (added where missing), and the
// JitOptions form passes its options.
TEST_F(JitOnFakeDriver, LinkAddDataTakesBytesAndTextWithoutACast) {
  const auto link = reinterpret_cast<CUlinkState>(std::uintptr_t{0x11A});
  const std::vector<std::byte> cubin = {std::byte{0x7F}, std::byte{'E'}, std::byte{'L'},
                                        std::byte{'F'}};
  drv::cuLinkAddData(link, CU_JIT_INPUT_CUBIN, std::span<const std::byte>(cubin), "k.cubin");
  EXPECT_EQ(fake_query<std::size_t>("cuwrap_fake_link_data_size"), 4U);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_link_data_last"), 'F') << "bytes pass as given";
  EXPECT_STREQ(fake_query<const char*>("cuwrap_fake_link_data_name"), "k.cubin");
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_link_options"), 0U);

  const std::string ptx = ".version 8.0\n.target sm_90\n";
  drv::cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, "a.ptx");
  EXPECT_EQ(fake_query<std::size_t>("cuwrap_fake_link_data_size"), ptx.size() + 1);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_link_data_last"), 0) << "text NUL-terminated";
  const std::string_view terminated(ptx.c_str(), ptx.size() + 1);
  drv::cuLinkAddData(link, CU_JIT_INPUT_PTX, terminated, "b.ptx");
  EXPECT_EQ(fake_query<std::size_t>("cuwrap_fake_link_data_size"), ptx.size() + 1)
      << "a NUL already there is not added again";

  drv::JitOptions jit;
  jit.set(CU_JIT_MAX_REGISTERS, 32U);
  drv::cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, "c.ptx", jit);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_link_options"), 1U);
  drv::cuLinkAddData(link, CU_JIT_INPUT_CUBIN, std::span<const std::byte>(cubin), "d.cubin", jit);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_link_options"), 1U);

  try {
    drv::cuLinkAddData(link, CU_JIT_INPUT_CUBIN, std::span<const std::byte>(), "empty");
    ADD_FAILURE() << "an empty input was accepted";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_IMAGE);
    EXPECT_EQ(e.function(), "cuLinkAddData");
  }
}

}  // namespace
