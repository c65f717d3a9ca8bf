// cuda_core/tests/memory_ipc/test_leaks.py, ported in part: exporting a pool's
// allocation handle leaves no file descriptor open once the handles are gone. README.md
// says what is ported.
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_wire.hpp"

#include <vector>

namespace {

class TestLeaks : public cuwrap::testing::DeviceTest {};

TEST_F(TestLeaks, TestAllocHandle) {
  const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  cuwrap::DeviceMemoryResource mr(device(),
                                  cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
  static_cast<void>(mr.get_allocation_handle());  // anything the driver opens once
  const int before = cuwrap::testing::open_fd_count();
  {
    std::vector<cuwrap::IPCAllocationHandle> handles;
    for (int i = 0; i < 10; ++i) {
      handles.push_back(mr.get_allocation_handle());
    }
    EXPECT_EQ(cuwrap::testing::open_fd_count(), before + 10);
  }
  EXPECT_EQ(cuwrap::testing::open_fd_count(), before);
}

}  // namespace
