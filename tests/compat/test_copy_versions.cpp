// copy_batch against older and newer drivers, without a GPU: the process loads
// tests/compat/fake_libcuda.cpp as libcuda (CUDA 12.4 unless CUWRAP_FAKE_DRIVER_VERSION
// says otherwise, in a child process). A 12.4 driver gets the cuMemcpyAsync loop and
// CopyOptions are refused there; a 12.8 driver gets the 12.8 form of cuMemcpyBatchAsync
// (with failIdx) even from bindings of 13.0 headers, a 13.0 driver the 13.0 form; equal
// neighbouring options reach the driver as one attribute run.
#include <gtest/gtest.h>
#include <cuwrap/copy.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/version.hpp>

#include "fake_driver.hpp"
#include "gtest_compat.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

cuwrap::StreamRef fake_stream() {
  return cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
}

std::vector<cuwrap::CopyOp> four_copies() {
  return {{0x1000, 0x2000, 16}, {0x1100, 0x2100, 16}, {0x1200, 0x2200, 0}, {0x1300, 0x2300, 8}};
}

class CopyOnFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kFakeInstalled);
    CUWRAP_GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(CopyOnFakeDriver, OldDriverLoopsAndRefusesOptions) {
  EXPECT_FALSE(cuwrap::has_native_copy_batch());
  const cuwrap::StreamRef stream = fake_stream();
  const auto ops = four_copies();
  const int before = fake_query<int>("cuwrap_fake_memcpy_async_calls");
  cuwrap::copy_batch(ops, stream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memcpy_async_calls"), before + 3)
      << "the empty copy is left out";

  const cuwrap::CopyOptions any{.src_access_order = cuwrap::MemcpySrcAccessOrder::Any};
  try {
    cuwrap::copy_batch(ops, stream, any);
    ADD_FAILURE() << "options were dropped on a driver without cuMemcpyBatchAsync";
  } catch (const cuwrap::UnsupportedError& e) {
    EXPECT_EQ(e.required_version(), 12080);
    // What falls short: the toolkit the bindings come from when it is older than 12.8
    // (12.4, 12.6), else the fake 12.4 driver.
    EXPECT_EQ(e.available_version(),
              cuwrap::bindings_version() < 12080 ? cuwrap::bindings_version() : 12040);
    EXPECT_NE(std::string(e.what()).find("CopyOptions"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memcpy_async_calls"), before + 3) << "nothing was copied";
  // The defaults, given explicitly, are no options at all.
  EXPECT_NO_THROW(cuwrap::copy_batch(ops, stream, cuwrap::CopyOptions{}));
}

#if CUDA_VERSION >= 12080
// The statement of a child process (EXPECT_EXIT) whose fake driver reports `version`:
// run `body`, print "form=<which batch entry point ran> count=<copies> runs=<attribute
// runs>" and exit 0 (`body` exits 2 when it finds the attributes wrong).
[[noreturn]] void run_batch_child(const char* version, void (*body)()) {
  setenv("CUWRAP_FAKE_DRIVER_VERSION", version, 1);
  body();
  std::fprintf(stderr, "form=%d count=%zu runs=%zu\n", fake_query<int>("cuwrap_fake_batch_form"),
               fake_query<std::size_t>("cuwrap_fake_batch_count"),
               fake_query<std::size_t>("cuwrap_fake_batch_runs"));
  std::exit(0);
}

TEST_F(CopyOnFakeDriver, Driver12_8GetsTheFormWithFailIdxOneRunForSharedOptions) {
  EXPECT_EXIT(
      run_batch_child("12080",
                      [] {
                        const cuwrap::StreamRef stream = fake_stream();
                        const cuwrap::CopyOptions host{.src_location_hint = cuwrap::Host{},
                                                       .dst_location_hint = cuwrap::Host::numa(1)};
                        cuwrap::copy_batch(four_copies(), stream, host);
                        const CUmemcpyAttributes a =
                            fake_query<CUmemcpyAttributes>("cuwrap_fake_batch_first_attributes");
                        if (a.srcLocHint.type != CU_MEM_LOCATION_TYPE_HOST ||
                            a.dstLocHint.type != CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                            a.dstLocHint.id != 1 ||
                            a.srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM) {
                          std::exit(2);
                        }
                      }),
      ::testing::ExitedWithCode(0), "form=12080 count=3 runs=1");
}

TEST_F(CopyOnFakeDriver, Driver13GetsTheFormWithoutFailIdxAndARunPerChange) {
  EXPECT_EXIT(
      run_batch_child(
          "13000",
          [] {
            const cuwrap::StreamRef stream = fake_stream();
            const cuwrap::CopyOptions stream_order{.src_location_hint = cuwrap::Host{},
                                                   .dst_location_hint = cuwrap::Host{}};
            cuwrap::CopyOptions any = stream_order;
            any.src_access_order = cuwrap::MemcpySrcAccessOrder::Any;
            any.overlap_mode = cuwrap::MemcpyOverlapMode::PreferOverlapWithCompute;
            // Copy 2 is empty and left out: the runs are {0}, {1}, {3} -> 3 runs.
            const std::vector<cuwrap::CopyOptions> options{stream_order, any, any, stream_order};
            cuwrap::copy_batch(four_copies(), stream, options);
            const CUmemcpyAttributes last =
                fake_query<CUmemcpyAttributes>("cuwrap_fake_batch_last_attributes");
            if (last.srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || last.flags != 0) {
              std::exit(2);
            }
          }),
      ::testing::ExitedWithCode(0),
      cuwrap::bindings_version() >= 13000 ? "form=13000 count=3 runs=3"
                                          : "form=12080 count=3 runs=3");
}
#else
TEST_F(CopyOnFakeDriver, Driver12_8GetsTheFormWithFailIdxOneRunForSharedOptions) {
  GTEST_SKIP() << "built against CUDA headers older than 12.8: no cuMemcpyBatchAsync";
}
#endif

}  // namespace
