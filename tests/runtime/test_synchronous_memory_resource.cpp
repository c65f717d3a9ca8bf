// SynchronousMemoryResource on a GPU: cuMemAlloc memory of a device, used on a stream and
// freed after it; and, with two GPUs, reached from the other device through the
// contexts' peer access (Device::enable_peer_access). The CPU tests are in
// tests/compat/test_synchronous_memory_resource.cpp (on the stand-in driver).
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "gpu.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Stream;
using cuwrap::SynchronousMemoryResource;

using cuwrap::testing::all_equal;
using cuwrap::testing::download;

TEST(SynchronousMemoryResource, AllocatesDeviceMemoryOutsidePools) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  SynchronousMemoryResource mr(dev);
  const Stream stream = dev.create_stream();
  Buffer buffer = mr.allocate(4096, stream);
  EXPECT_EQ(buffer.device_id(), 0);
  EXPECT_EQ(buffer.memory_resource(), &mr);
  // cuMemAlloc memory belongs to no memory pool (a pool's memory answers its pool).
  CUmemoryPool pool = nullptr;
  const CUresult status = cuwrap::driver::raw::cuPointerGetAttribute(
      &pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, buffer.handle());
  EXPECT_TRUE(status != CUDA_SUCCESS || pool == nullptr) << "the memory came from a pool";
  buffer.fill(std::uint8_t{0x33}, stream);
  EXPECT_TRUE(all_equal(download(buffer, stream), 0x33));
  buffer.close(stream);  // syncs `stream`, then cuMemFree
  EXPECT_FALSE(buffer.is_open());
}

// The memory follows the contexts' peer access: a kernel on device 0 writes device 1's
// cuMemAlloc memory once device 0 has access to device 1.
TEST(SynchronousMemoryResource, PeerAccessReachesItsMemoryOnAnotherDevice) {
  CUWRAP_REQUIRE_GPUS(2);
  CUWRAP_REQUIRE_NVRTC();
  const Device d0(0);
  const Device d1(1);
  if (!d0.can_access_peer(d1)) {
    GTEST_SKIP() << "device 0 cannot access device 1's memory on this machine";
  }
  d0.enable_peer_access(d1);
  SynchronousMemoryResource mr1(d1);
  const cuwrap::testing::TestKernels kernels0(d0);
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  constexpr std::size_t kSize = std::size_t{1} << 16;
  Buffer src = d0.allocate(kSize, s0);
  Buffer dst = mr1.allocate(kSize, s1);
  EXPECT_EQ(dst.device_id(), 1);
  src.fill(std::uint8_t{0x6B}, s0);
  dst.fill(std::uint8_t{0}, s1);
  s0.wait(s1);
  kernels0.copy_bytes(s0, src.handle(), dst.handle(), kSize);  // device 0 writes device 1's
  s1.wait(s0);
  EXPECT_TRUE(all_equal(download(dst, s1), 0x6B));
  s0.sync();
  d0.disable_peer_access(d1);
}

}  // namespace
