// Several GPUs of one host: peer access, peer copies, cross-device ordering with events,
// and per-device work while another device is current. Tests that need two GPUs skip
// with the reason on a machine with fewer; the rest run on one.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "gpu.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Stream;
using cuwrap::testing::contains;

// A kernel that writes one value per element; launched on several devices' streams.
constexpr const char* kFillKernel = R"(
extern "C" __global__ void fill_with(unsigned* out, unsigned value, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    out[i] = value + (unsigned)i;
  }
}
)";

// GPU clocks the ordering test's first kernel spins before writing: long enough (a few
// milliseconds) that a copy not ordered after it would read the old bytes.
constexpr long long kMultiGpuSpinCycles = 20'000'000;

// NCCL is never started here, but every environment a test starts keeps NVLS off.
[[maybe_unused]] const bool kNvlsOff = [] { return ::setenv("NCCL_NVLS_ENABLE", "0", 1) == 0; }();

// Skip unless at least two GPUs are there; device 0 is made current.
#define REQUIRE_TWO_GPUS()   \
  do {                       \
    CUWRAP_REQUIRE_GPUS(2);  \
    Device(0).set_current(); \
  } while (false)

using cuwrap::testing::all_equal;
using cuwrap::testing::download;

// ---- peer access ---------------------------------------------------------------------

TEST(PeerAccess, AccessToItselfIsAlwaysThereAndNeedsNoCall) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  EXPECT_TRUE(dev.peer_access_enabled(dev));
  EXPECT_NO_THROW(dev.enable_peer_access(dev));
  EXPECT_NO_THROW(dev.disable_peer_access(dev));
  EXPECT_TRUE(dev.peer_access_enabled(dev));
}

TEST(PeerAccess, EnableAndDisableAreIdempotentAndQueried) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  if (!d0.can_access_peer(d1)) {
    GTEST_SKIP() << "devices 0 and 1 cannot access each other's memory on this machine";
  }
  d0.disable_peer_access(d1);  // a clean start, whatever ran before in this process
  EXPECT_FALSE(d0.peer_access_enabled(d1));
  d0.enable_peer_access(d1);
  EXPECT_NO_THROW(d0.enable_peer_access(d1));  // already enabled: not an error
  EXPECT_TRUE(d0.peer_access_enabled(d1));
  EXPECT_FALSE(d1.peer_access_enabled(d0));  // one-way
  d0.disable_peer_access(d1);
  EXPECT_NO_THROW(d0.disable_peer_access(d1));  // already disabled: not an error
  EXPECT_FALSE(d0.peer_access_enabled(d1));
}

TEST(PeerAccess, RefusedTopologyNamesBothDevices) {
  REQUIRE_TWO_GPUS();
  const std::vector<Device> devices = Device::all();
  for (const Device& a : devices) {
    for (const Device& b : devices) {
      if (a == b || a.can_access_peer(b)) {
        continue;
      }
      try {
        a.enable_peer_access(b);
        ADD_FAILURE() << "enable_peer_access did not throw for a pair without peer access";
      } catch (const std::invalid_argument& e) {
        EXPECT_TRUE(contains(e.what(), "device " + std::to_string(a.device_id()))) << e.what();
        EXPECT_TRUE(contains(e.what(), "device " + std::to_string(b.device_id()))) << e.what();
      }
      return;
    }
  }
  GTEST_SKIP() << "every pair of devices here can access each other's memory";
}

bool has_device(const std::vector<Device>& devices, const Device& device) {
  for (const Device& d : devices) {
    if (d == device) {
      return true;
    }
  }
  return false;
}

// The obvious multi-GPU program: enable peer access, then a kernel on device 0 writes
// into a buffer of device 1's default pool (Device::allocate). Pool memory does not
// follow cuCtxEnablePeerAccess; enable_peer_access grants the default pool's access too.
TEST(PeerAccess, EnableReachesThePeersDefaultPoolAndDisableWithdrawsIt) {
  REQUIRE_TWO_GPUS();
  CUWRAP_REQUIRE_NVRTC();
  const Device d0(0);
  const Device d1(1);
  if (!d0.can_access_peer(d1)) {
    GTEST_SKIP() << "device 0 cannot access device 1's memory on this machine";
  }
  auto& pool1 = d1.memory_resource();
  d0.disable_peer_access(d1);  // a clean start
  EXPECT_FALSE(has_device(pool1.peer_accessible_by(), d0));
  d0.enable_peer_access(d1);
  EXPECT_TRUE(has_device(pool1.peer_accessible_by(), d0));
  EXPECT_FALSE(has_device(d0.memory_resource().peer_accessible_by(),
                          d1));  // one-way: device 1 gets no access to device 0's pool

  const cuwrap::testing::TestKernels kernels0(d0);
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  constexpr std::size_t kSize = std::size_t{1} << 16;
  Buffer src = d0.allocate(kSize, s0);
  Buffer dst = d1.allocate(kSize, s1);  // device 1's default pool
  src.fill(std::uint8_t{0x5A}, s0);
  dst.fill(std::uint8_t{0}, s1);
  s0.wait(s1);
  kernels0.copy_bytes(s0, src.handle(), dst.handle(), kSize);  // device 0 writes device 1's
  s1.wait(s0);
  EXPECT_TRUE(all_equal(download(dst, s1), 0x5A))
      << "device 0's kernel did not write device 1's buffer";
  s0.sync();

  d0.disable_peer_access(d1);
  EXPECT_FALSE(has_device(pool1.peer_accessible_by(), d0));
  EXPECT_FALSE(d0.peer_access_enabled(d1));
}

// Pools the user creates are not the device's default pool: they grant access through
// their own set_peer_accessible_by, whatever enable_peer_access did.
TEST(PeerAccess, PoolsTheUserCreatesKeepTheirOwnAccess) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  if (!d0.can_access_peer(d1)) {
    GTEST_SKIP() << "device 0 cannot access device 1's memory on this machine";
  }
  cuwrap::DeviceMemoryResource own(d1, cuwrap::DeviceMemoryResourceOptions{.create_pool = true});
  d0.enable_peer_access(d1);
  EXPECT_FALSE(has_device(own.peer_accessible_by(), d0));
  own.set_peer_accessible_by({d0});
  EXPECT_TRUE(has_device(own.peer_accessible_by(), d0));
  d0.disable_peer_access(d1);
  EXPECT_TRUE(has_device(own.peer_accessible_by(), d0));  // the pool's own grant stays
  own.set_peer_accessible_by({});
  EXPECT_FALSE(has_device(own.peer_accessible_by(), d0));
}

// ---- peer copies ---------------------------------------------------------------------

TEST(PeerCopy, CopiesWithinOneDevice) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  dev.set_current();
  const Stream s = dev.create_stream();
  Buffer src = dev.allocate(4096, s);
  Buffer dst = dev.allocate(4096, s);
  src.fill(std::uint8_t{0x5A}, s);
  dst.fill(std::uint8_t{0}, s);
  cuwrap::copy_peer(dst, src, s);
  EXPECT_TRUE(all_equal(download(dst, s), 0x5A));
}

TEST(PeerCopy, RejectsDifferentSizesClosedAndHostBuffers) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  dev.set_current();
  const Stream s = dev.create_stream();
  Buffer small = dev.allocate(100, s);
  Buffer large = dev.allocate(200, s);
  try {
    cuwrap::copy_peer(large, small, s);
    ADD_FAILURE() << "copy_peer accepted buffers of different sizes";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "200")) << e.what();
    EXPECT_TRUE(contains(e.what(), "100")) << e.what();
  }
  cuwrap::PinnedMemoryResource pinned;
  Buffer host = pinned.allocate(100, s);
  EXPECT_THROW(cuwrap::copy_peer(small, host, s), std::invalid_argument);
  Buffer closed = dev.allocate(100, s);
  closed.close(s);
  EXPECT_THROW(cuwrap::copy_peer(closed, small, s), std::logic_error);
  EXPECT_THROW(cuwrap::copy_peer(small, closed, s), std::logic_error);
  s.sync();
}

TEST(PeerCopy, PointerOverloadCopiesToTheLastDevice) {
  CUWRAP_REQUIRE_GPU();
  const Device first(0);
  const Device last(Device::count() - 1);  // device 0 itself on a one-GPU machine
  first.set_current();
  const Stream s = first.create_stream();
  const Stream s_last = last.create_stream();
  Buffer src = first.allocate(1000, s);
  Buffer dst = last.allocate(1000, s_last);
  src.fill(std::uint8_t{0xC3}, s);
  dst.fill(std::uint8_t{0}, s_last);
  s.wait(s_last);
  cuwrap::copy_peer(dst.handle(), last, src.handle(), first, 1000, s);
  // Copies between pageable host memory and a buffer run on a stream of the buffer's
  // device: the driver refuses another device's stream (CUDA_ERROR_INVALID_VALUE).
  s_last.wait(s);
  EXPECT_TRUE(all_equal(download(dst, s_last), 0xC3));
}

// Slices (BufferRef) of buffers of device 0 and the last device (device 0 itself on one
// GPU): the devices are found from the pointers, or given.
TEST(PeerCopy, CopiesSlicesOfBuffersOfTwoDevices) {
  CUWRAP_REQUIRE_GPU();
  const Device first(0);
  const Device last(Device::count() - 1);
  first.set_current();
  const Stream s = first.create_stream();
  const Stream s_last = last.create_stream();
  constexpr std::size_t kSize = 4096;
  Buffer src = first.allocate(kSize, s);
  Buffer dst = last.allocate(kSize, s_last);
  src.fill(std::uint8_t{0x11}, s);
  src.slice(0, 16).fill(std::uint8_t{0x22}, s);
  dst.fill(std::uint8_t{0}, s_last);
  s_last.wait(s);
  cuwrap::copy_peer(dst.slice(1024, 1024), src.slice(1024, 1024), s_last);       // devices found
  cuwrap::copy_peer(dst.slice(100, 16), last, src.slice(0, 16), first, s_last);  // given
  const std::vector<std::uint8_t> bytes = download(dst, s_last);
  for (std::size_t i = 0; i < kSize; ++i) {
    const std::uint8_t want = (i >= 1024 && i < 2048) ? 0x11 : (i >= 100 && i < 116) ? 0x22 : 0;
    ASSERT_EQ(bytes[i], want) << "byte " << i;
  }
  try {
    cuwrap::copy_peer(dst.slice(0, 8), src.slice(0, 9), s_last);
    ADD_FAILURE() << "slices of different sizes were copied";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "8 bytes")) << e.what();
    EXPECT_TRUE(contains(e.what(), "9")) << e.what();
  }
  cuwrap::LegacyPinnedMemoryResource pinned;
  Buffer host = pinned.allocate(16, s);
  try {
    cuwrap::copy_peer(dst.slice(0, 16), cuwrap::BufferRef(host), s_last);
    ADD_FAILURE() << "host memory was taken for a peer copy";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "source is host memory")) << e.what();
  }
  s.sync();
}

// A copy from device 0 to device 1 on device 1's stream, ordered after a slow kernel on
// device 0's stream by an event: without the wait it would read the bytes before the add.
void check_cross_device_copy_waits_for_event(bool with_peer_access) {
  const Device d0(0);
  const Device d1(1);
  if (with_peer_access) {
    if (!d0.can_access_peer(d1) || !d1.can_access_peer(d0)) {
      GTEST_SKIP() << "devices 0 and 1 cannot access each other's memory on this machine";
    }
    d0.enable_peer_access(d1);  // also grants access to each other's default pool
    d1.enable_peer_access(d0);
  }
  const cuwrap::testing::TestKernels kernels0(d0);
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  constexpr std::size_t kSize = std::size_t{1} << 20;
  Buffer on0 = d0.allocate(kSize, s0);
  Buffer on1 = d1.allocate(kSize, s1);
  on0.fill(std::uint8_t{1}, s0);
  on1.fill(std::uint8_t{0}, s1);
  kernels0.spin_then_add(s0, on0.handle(), kSize, kMultiGpuSpinCycles, 41);  // 1 → 42, late
  const cuwrap::Event written = s0.record();
  s1.wait(written);  // device 1's stream waits for an event of device 0
  cuwrap::copy_peer(on1, on0, s1);
  EXPECT_TRUE(all_equal(download(on1, s1), 42)) << "the copy ran before the kernel finished";
  if (with_peer_access) {
    // With access granted, a kernel on device 1 reads device 0's memory directly.
    const cuwrap::testing::TestKernels kernels1(d1);
    Buffer direct = d1.allocate(kSize, s1);
    direct.fill(std::uint8_t{0}, s1);
    kernels1.copy_bytes(s1, on0.handle(), direct.handle(), kSize);
    EXPECT_TRUE(all_equal(download(direct, s1), 42)) << "a peer kernel read the wrong bytes";
  }
  s0.sync();
  if (with_peer_access) {
    d0.disable_peer_access(d1);
    d1.disable_peer_access(d0);
  }
}

TEST(PeerCopy, CrossDeviceCopyWaitsForEventOfOtherDevice) {
  REQUIRE_TWO_GPUS();
  CUWRAP_REQUIRE_NVRTC();
  check_cross_device_copy_waits_for_event(false);
}

TEST(PeerCopy, CrossDeviceCopyWithPeerAccessEnabled) {
  REQUIRE_TWO_GPUS();
  CUWRAP_REQUIRE_NVRTC();
  check_cross_device_copy_waits_for_event(true);
}

TEST(PeerCopy, StreamOfDevice1WaitsForStreamOfDevice0) {
  REQUIRE_TWO_GPUS();
  CUWRAP_REQUIRE_NVRTC();
  const Device d0(0);
  const Device d1(1);
  const cuwrap::testing::TestKernels kernels0(d0);
  const cuwrap::testing::TestKernels kernels1(d1);
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  constexpr std::size_t kSize = 4096;
  Buffer on0 = d0.allocate(kSize, s0);
  Buffer on1 = d1.allocate(kSize, s1);
  on0.fill(std::uint8_t{3}, s0);
  s1.wait(s0);  // on0 is allocated and filled before device 1 reads it
  kernels0.spin_then_add(s0, on0.handle(), kSize, kMultiGpuSpinCycles, 4);  // 3 → 7, late
  s1.wait(s0);  // Stream::wait(Stream) across devices
  // Device 1 reads device 0's memory with a kernel only under peer access; the copy
  // engines need none, so the ordering is checked with a copy to device 1.
  cuwrap::copy_peer(on1, on0, s1);
  kernels1.spin_then_add(s1, on1.handle(), kSize, 0, 1);  // 7 → 8
  EXPECT_TRUE(all_equal(download(on1, s1), 8));
  s0.sync();
}

// ---- per-device work with another device current ------------------------------------

TEST(PerDevice, BufferOfDevice1AllocatedUsedAndFreedWhileDevice0IsCurrent) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  const Stream s1 = d1.create_stream();
  d0.set_current();
  {
    Buffer b = d1.allocate(std::size_t{1} << 16, s1);
    EXPECT_EQ(b.device_id(), 1);
    b.fill(std::uint8_t{9}, s1);
    EXPECT_TRUE(all_equal(download(b, s1), 9));
    EXPECT_EQ(cuwrap::detail::current_context(), d0.context());
  }  // freed (ordered on s1) while device 0 is current
  Buffer explicit_close = d1.allocate(256, s1);
  explicit_close.close(s1);
  EXPECT_NO_THROW(s1.sync());
  EXPECT_EQ(cuwrap::detail::current_context(), d0.context());
}

TEST(PerDevice, OneKernelLaunchedOnStreamsOfBothDevices) {
  REQUIRE_TWO_GPUS();
  CUWRAP_REQUIRE_NVRTC();
  const Device d0(0);
  const Device d1(1);
  if (d0.arch() != d1.arch()) {
    GTEST_SKIP() << "devices 0 and 1 have different architectures (sm_" << d0.arch() << ", sm_"
                 << d1.arch() << "): one CUBIN cannot serve both";
  }
  cuwrap::ProgramOptions options;
  options.arch = "sm_" + d0.arch();
  cuwrap::Program program(kFillKernel, cuwrap::CodeType::Cxx, options);
  const cuwrap::Kernel kernel = program.compile(cuwrap::TargetType::Cubin).get_kernel("fill_with");
  constexpr unsigned long long kN = 1000;
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  d0.set_current();
  Buffer out0 = d0.allocate(kN * sizeof(unsigned), s0);
  Buffer out1 = d1.allocate(kN * sizeof(unsigned), s1);
  const cuwrap::LaunchConfig config{.grid = 4, .block = 128};
  cuwrap::launch(s0, config, kernel, out0, 100U, kN);
  cuwrap::launch(s1, config, kernel, out1, 5000U, kN);  // device 0 still current
  d1.set_current();
  cuwrap::launch(s0, config, kernel, out0, 200U, kN);  // and the other way round
  d0.set_current();
  std::vector<unsigned> h0(kN);
  std::vector<unsigned> h1(kN);
  out0.copy_to(h0, s0);
  out1.copy_to(h1, s1);
  s0.sync();
  s1.sync();
  for (unsigned i = 0; i < kN; ++i) {
    ASSERT_EQ(h0[i], 200U + i) << "device 0, element " << i;
    ASSERT_EQ(h1[i], 5000U + i) << "device 1, element " << i;
  }
  EXPECT_EQ(cuwrap::detail::current_context(), d0.context());
}

// Occupancy says which device it answers for: a device given, else the current
// context's, else device 0 when none is current (on a thread that never touched one).
TEST(PerDevice, OccupancySaysWhichDeviceItAnswersFor) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  const Device first(0);
  const Device last(Device::count() - 1);  // device 0 itself on a one-GPU machine
  cuwrap::ProgramOptions options;
  options.arch = "sm_" + first.arch();
  cuwrap::Program program(kFillKernel, cuwrap::CodeType::Cxx, options);
  const cuwrap::Kernel kernel = program.compile(cuwrap::TargetType::Cubin).get_kernel("fill_with");
  int fresh_device = -1;
  int fresh_blocks = 0;
  bool none_current_after = false;
  std::thread fresh([&] {  // a thread on which no context was ever current
    fresh_device = kernel.occupancy().device().device_id();
    fresh_blocks = kernel.occupancy().max_active_blocks_per_multiprocessor(128, 0);
    none_current_after = cuwrap::detail::current_context() == nullptr;
  });
  fresh.join();
  EXPECT_EQ(fresh_device, 0);
  EXPECT_GT(fresh_blocks, 0);
  EXPECT_TRUE(none_current_after) << "the query left a context current";

  first.set_current();
  EXPECT_EQ(kernel.occupancy().device(), first);
  const cuwrap::KernelOccupancy on_last = kernel.occupancy(last);
  EXPECT_EQ(on_last.device(), last);  // whatever is current
  if (first.arch() == last.arch()) {
    EXPECT_EQ(on_last.max_active_blocks_per_multiprocessor(128, 0),
              kernel.occupancy().max_active_blocks_per_multiprocessor(128, 0));
  }
  EXPECT_EQ(cuwrap::detail::current_context(), first.context()) << "the current context changed";
  last.set_current();
  EXPECT_EQ(kernel.occupancy().device(), last);
  first.set_current();
}

// Pinned memory answers for every device: a buffer allocated on device 0's stream is
// written by a kernel of device 1 at its handle().
TEST(PerDevice, PinnedMemoryAllocatedOnDevice0IsWrittenByDevice1) {
  REQUIRE_TWO_GPUS();
  CUWRAP_REQUIRE_NVRTC();
  const Device d0(0);
  const Device d1(1);
  const cuwrap::testing::TestKernels kernels1(d1);
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  constexpr std::size_t kSize = 4096;
  cuwrap::PinnedMemoryResource pinned;
  cuwrap::LegacyPinnedMemoryResource legacy;
  for (cuwrap::MemoryResource* mr : {static_cast<cuwrap::MemoryResource*>(&pinned),
                                     static_cast<cuwrap::MemoryResource*>(&legacy)}) {
    EXPECT_EQ(mr->device_id(), -1);
    Buffer host = mr->allocate(kSize, s0);
    s0.sync();
    Buffer src = d1.allocate(kSize, s1);
    src.fill(std::uint8_t{0x4C}, s1);
    kernels1.copy_bytes(s1, src.handle(), host.handle(), kSize);
    s1.sync();
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(host.handle());
    EXPECT_TRUE(all_equal(std::vector<std::uint8_t>(bytes, bytes + kSize), 0x4C));
  }
}

TEST(PerDevice, EventsAndStreamsQueryTheirOwnDevice) {
  REQUIRE_TWO_GPUS();
  const Device d1(1);
  const Stream s1 = d1.create_stream();
  const cuwrap::Event e1 = s1.record();
  EXPECT_EQ(s1.device().device_id(), 1);
  EXPECT_EQ(e1.device().device_id(), 1);
  e1.sync();
  EXPECT_TRUE(e1.is_done());
  s1.sync();
  EXPECT_TRUE(s1.is_done());
  EXPECT_EQ(cuwrap::detail::current_context(), Device(0).context());
}

TEST(PerDevice, DeviceAllLoopSplitsComputesAndGathers) {
  CUWRAP_REQUIRE_GPU();
  // As cuda.core's multi-GPU example: a stream and a slice of the data per device.
  const std::vector<Device> devices = Device::all();
  ASSERT_EQ(devices.size(), static_cast<std::size_t>(Device::count()));
  constexpr std::size_t kSlice = 1024;
  std::vector<Stream> streams;
  std::vector<Buffer> slices;
  for (const Device& dev : devices) {
    dev.set_current();
    streams.push_back(dev.create_stream());
    slices.push_back(dev.allocate(kSlice, streams.back()));
    slices.back().fill(static_cast<std::uint8_t>(10 + dev.device_id()), streams.back());
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_TRUE(all_equal(download(slices[i], streams[i]), static_cast<std::uint8_t>(10 + i)))
        << "device " << i;
  }
}

}  // namespace
