// Peer access reaching pool memory (Device::enable_peer_access grants the peer's
// default pool), and copy_peer between BufferRefs (slices of buffers of one or two
// devices).
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::BufferRef;
using cuwrap::Device;
using cuwrap::Stream;

std::vector<std::uint8_t> download(const Buffer& buffer, const Stream& stream) {
  std::vector<std::uint8_t> host(buffer.size());
  buffer.copy_to(std::as_writable_bytes(std::span(host)), stream);
  stream.sync();
  return host;
}

TEST(PeerCopyRefs, RefusesDifferentSizesBeforeTheDriver) {
  try {
    cuwrap::copy_peer(BufferRef(0x1000, 8), BufferRef(0x2000, 16), cuwrap::StreamRef::legacy());
    FAIL() << "sizes 8 and 16 were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("16"), std::string::npos) << e.what();
  }
}

TEST(PeerCopyRefs, CopiesASliceWithinOneDevice) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  const Stream s = dev.create_stream();
  Buffer src = dev.allocate(1024, s);
  Buffer dst = dev.allocate(1024, s);
  src.fill(std::uint8_t{0x11}, s);
  dst.fill(std::uint8_t{0}, s);
  cuwrap::copy_peer(BufferRef(dst).slice(512, 256), BufferRef(src).slice(0, 256), s);
  const std::vector<std::uint8_t> host = download(dst, s);
  EXPECT_EQ(std::count(host.begin(), host.end(), std::uint8_t{0x11}), 256);
  EXPECT_EQ(host[511], 0);
  EXPECT_EQ(host[512], 0x11);
  EXPECT_EQ(host[767], 0x11);
  EXPECT_EQ(host[768], 0);
}

TEST(PeerCopyRefs, RefusesHostMemory) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  const Stream s = dev.create_stream();
  Buffer dst = dev.allocate(64, s);
  std::vector<std::uint8_t> host(64);
  const BufferRef plain_host(reinterpret_cast<CUdeviceptr>(host.data()), host.size());
  EXPECT_THROW(cuwrap::copy_peer(dst, plain_host, s), std::invalid_argument);
  s.sync();
}

TEST(PeerCopyRefs, CopiesAHaloBetweenTwoDevices) {
  CUWRAP_REQUIRE_GPUS(2);
  const Device d0(0);
  const Device d1(1);
  const Stream s0 = d0.create_stream();
  const Stream s1 = d1.create_stream();
  Buffer left = d0.allocate(4096, s0);
  Buffer right = d1.allocate(4096, s1);
  left.fill(std::uint8_t{0x22}, s0);
  right.fill(std::uint8_t{0}, s1);
  s1.wait(s0.record());
  cuwrap::copy_peer(BufferRef(right).slice(0, 128), BufferRef(left).slice(4096 - 128, 128), s1);
  const std::vector<std::uint8_t> host = download(right, s1);
  EXPECT_EQ(std::count(host.begin(), host.end(), std::uint8_t{0x22}), 128);
  EXPECT_EQ(host[127], 0x22);
  EXPECT_EQ(host[128], 0);
}

TEST(PeerPools, EnablePeerAccessGrantsThePeersDefaultPool) {
  CUWRAP_REQUIRE_GPUS(2);
  const Device d0(0);
  const Device d1(1);
  if (!d0.can_access_peer(d1)) {
    GTEST_SKIP() << "devices 0 and 1 cannot access each other's memory on this machine";
  }
  if (d1.attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) == 0) {
    GTEST_SKIP() << "device 1 has no memory pools";
  }
  d0.enable_peer_access(d1);
  auto& pool = dynamic_cast<cuwrap::DeviceMemoryResource&>(d1.memory_resource());
  const std::vector<Device> peers = pool.peer_accessible_by();
  EXPECT_NE(std::find(peers.begin(), peers.end(), d0), peers.end())
      << "device 0 cannot reach device 1's default pool after enable_peer_access";
  d0.disable_peer_access(d1);
}

}  // namespace
