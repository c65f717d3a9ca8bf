// The generated layer's typed launches (cuwrap::driver::cuLaunchKernel / cuLaunchKernelEx
// with packed arguments, <cuwrap/kernel_arguments.hpp>) against the stand-in driver
// (tests/compat/fake_libcuda.cpp), without a GPU. The fake's function handles carry their
// parameter count in the low 4 bits, each parameter 8 bytes; 0xBAD has no parameter info.
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>

#include "fake_driver.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

namespace drv = cuwrap::driver;
using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

CUfunction fake_function(std::uintptr_t bits) { return reinterpret_cast<CUfunction>(bits); }

class TypedLaunchOnFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kFakeInstalled);
    drv::cuInit(0);
  }
  static int launches() { return fake_query<int>("cuwrap_fake_launches"); }
};

TEST_F(TypedLaunchOnFakeDriver, PacksTheArgumentsOfAMatchingLaunch) {
  const CUfunction f = fake_function(0x7002);  // two 8-byte parameters
  const int before = launches();
  drv::cuLaunchKernel(f, {4}, {128}, 0, nullptr, 42ULL, 1.5);
  EXPECT_EQ(launches(), before + 1);
  EXPECT_EQ(fake_query<CUfunction>("cuwrap_fake_launched_function"), f);
  EXPECT_EQ(fake_query<unsigned long long>("cuwrap_fake_first_argument"), 42U);

  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  drv::cuLaunchKernelEx(config, f, 7ULL, static_cast<const float*>(nullptr));
  EXPECT_EQ(launches(), before + 2);
  EXPECT_EQ(fake_query<unsigned long long>("cuwrap_fake_first_argument"), 7U);
}

TEST_F(TypedLaunchOnFakeDriver, WrongSizeOrCountThrowsBeforeLaunching) {
  const CUfunction f = fake_function(0x7002);
  const int before = launches();
  try {
    drv::cuLaunchKernel(f, {1}, {1}, 0, nullptr, 1, 2.0);  // an int where 8 bytes are taken
    ADD_FAILURE() << "a 4-byte argument for an 8-byte parameter launched";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "cuLaunchKernel: argument 0 is 4 bytes; the kernel's parameter 0 is 8 bytes");
  }
  try {
    drv::cuLaunchKernel(f, {1}, {1}, 0, nullptr, 1ULL, 2ULL, 3ULL);
    ADD_FAILURE() << "three arguments for two parameters launched";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cuLaunchKernel: the kernel takes 2 arguments; 3 were given");
  }
  CUlaunchConfig config{};
  try {
    drv::cuLaunchKernelEx(config, f, 1ULL);
    ADD_FAILURE() << "one argument for two parameters launched";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cuLaunchKernelEx: the kernel takes more than 1 argument; 1 was given");
  }
  EXPECT_EQ(launches(), before) << "nothing launched";
}

// Where the driver has no parameter information for the function, the launch goes
// unchecked, as the C form does; the C form itself stays.
TEST_F(TypedLaunchOnFakeDriver, UncheckedWhereTheDriverCannotSayAndTheCFormStays) {
  const int before = launches();
  drv::cuLaunchKernel(fake_function(0xBAD), {1}, {1}, 0, nullptr, 1, 2, 3);
  EXPECT_EQ(launches(), before + 1);
  const CUfunction none = fake_function(0x7000);
  drv::cuLaunchKernel(none, {1}, {1}, 0, nullptr);  // no arguments, none taken
  drv::cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
  EXPECT_EQ(launches(), before + 3);
  EXPECT_LE(fake_query<int>("cuwrap_fake_max_requested_version"), cuwrap::driver_version());
}

// The import takes what the export returns: a POSIX file descriptor as an int, passed as
// the void* value itself; the fabric handle by address.
static_assert(
    std::is_same_v<
        decltype(drv::cuMemImportFromShareableHandle<CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR>(0)),
        CUmemGenericAllocationHandle>);

TEST_F(TypedLaunchOnFakeDriver, ImportTakesTheFileDescriptorAsAnInt) {
  const int fd = 42;
  const CUmemGenericAllocationHandle handle =
      drv::cuMemImportFromShareableHandle<CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR>(fd);
  EXPECT_EQ(handle, 0x1AU);
  EXPECT_EQ(fake_query<void*>("cuwrap_fake_imported_os_handle"),
            reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)));
}

}  // namespace
