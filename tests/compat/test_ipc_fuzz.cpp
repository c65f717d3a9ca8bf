// A deterministic mutation fuzzer over what another process can send (no GPU): buffer
// descriptors (Buffer::from_ipc_descriptor, against the stand-in driver's address
// ranges) and IPCChannel messages (framed handles and shared buffers, with any number
// of file descriptors, cut anywhere). Every input must end in a result that holds the
// invariants or in an exception; file descriptors and imports must not leak.
//
// CUWRAP_IPC_FUZZ_ITERATIONS sets the iterations of each part (default: 100000 in a
// sanitizer build, scripts/sanitize.sh; 20000 otherwise); CUWRAP_IPC_FUZZ_SEED the seed
// (default fixed). Both are printed, so a failure can be run again.
#include <gtest/gtest.h>
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include "fake_driver.hpp"
#include "ipc_wire.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CUWRAP_FUZZ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUWRAP_FUZZ_SANITIZED 1
#endif
#endif

namespace {

using cuwrap::IPCBufferDescriptor;
using cuwrap::IPCPoolId;
using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;
using cuwrap::testing::open_fd_count;
using cuwrap::testing::RawPeer;
using cuwrap::testing::WireHeader;

std::uint64_t setting(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : fallback;
}

std::uint64_t iterations() {
#ifdef CUWRAP_FUZZ_SANITIZED
  constexpr std::uint64_t kDefault = 100000;
#else
  constexpr std::uint64_t kDefault = 20000;
#endif
  return setting("CUWRAP_IPC_FUZZ_ITERATIONS", kDefault);
}

std::uint64_t seed() { return setting("CUWRAP_IPC_FUZZ_SEED", 20261127); }

// Sizes that find edges: 0, 1, powers of two and their neighbours, the maxima.
std::uint64_t interesting(std::mt19937_64& rng) {
  static constexpr std::uint64_t kValues[] = {0,
                                              1,
                                              63,
                                              64,
                                              65,
                                              4096,
                                              std::uint64_t{1} << 20,
                                              (std::uint64_t{1} << 20) + 1,
                                              std::uint64_t{1} << 32,
                                              (std::uint64_t{1} << 40) - 1,
                                              std::uint64_t{1} << 40,
                                              std::uint64_t{1} << 63,
                                              std::numeric_limits<std::uint64_t>::max() - 1,
                                              std::numeric_limits<std::uint64_t>::max()};
  const std::uint64_t pick = rng() % (std::size(kValues) + 2);
  if (pick < std::size(kValues)) {
    return kValues[pick];
  }
  return pick == std::size(kValues) ? rng() : rng() % 10000;
}

// Change `bytes` a few times: flip bits, set bytes, write interesting 8-byte values,
// cut, insert or duplicate.
void mutate(std::vector<std::byte>& bytes, std::mt19937_64& rng) {
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int step = 0; step < steps; ++step) {
    const auto at = [&] {
      return bytes.empty() ? 0 : static_cast<std::size_t>(rng() % bytes.size());
    };
    switch (rng() % 7) {
      case 0:
        if (!bytes.empty()) {
          bytes[at()] ^= static_cast<std::byte>(1U << (rng() % 8));
        }
        break;
      case 1:
        if (!bytes.empty()) {
          bytes[at()] = static_cast<std::byte>(rng());
        }
        break;
      case 2:
        if (bytes.size() >= 8) {
          const std::uint64_t value = interesting(rng);
          std::memcpy(bytes.data() + rng() % (bytes.size() - 7), &value, sizeof(value));
        }
        break;
      case 3:
        bytes.resize(at());
        break;
      case 4:
        bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at()),
                     static_cast<std::size_t>(1 + rng() % 16), static_cast<std::byte>(rng()));
        break;
      case 5:  // the header's length field (bytes 8..15)
        if (bytes.size() >= 16) {
          const std::uint64_t value = interesting(rng);
          std::memcpy(bytes.data() + 8, &value, sizeof(value));
        }
        break;
      default:  // the shared-buffers count (bytes 32..39)
        if (bytes.size() >= 40) {
          const std::uint64_t value = interesting(rng);
          std::memcpy(bytes.data() + 32, &value, sizeof(value));
        }
        break;
    }
  }
}

// A pool id from the fuzzer's generator (not detail::new_pool_id: a run must repeat).
IPCPoolId random_pool(std::mt19937_64& rng) {
  IPCPoolId id{};
  for (auto& byte : id) {
    byte = static_cast<std::uint8_t>(rng());
  }
  return id;
}

IPCBufferDescriptor random_descriptor(const IPCPoolId& pool, std::mt19937_64& rng) {
  IPCBufferDescriptor d;
  for (auto& byte : d.payload) {
    byte = static_cast<unsigned char>(rng());
  }
  d.size = rng() % 4096;
  d.pool_id = pool;
  return d;
}

// A genuine message as IPCChannel::send writes it (handle or shared buffers).
std::vector<std::byte> genuine_message(bool shared, const IPCPoolId& pool, std::mt19937_64& rng) {
  std::vector<std::byte> body;
  const auto append = [&](std::span<const std::byte> part) {
    body.insert(body.end(), part.begin(), part.end());
  };
  append(std::as_bytes(std::span(pool)));
  if (shared) {
    const std::uint64_t count = rng() % 5;
    append(std::as_bytes(std::span(&count, 1)));
    for (std::uint64_t i = 0; i < count; ++i) {
      const IPCBufferDescriptor d = random_descriptor(pool, rng);
      append(std::as_bytes(std::span(&d, 1)));
    }
  }
  WireHeader header;
  header.kind = shared ? 2 : 1;
  header.length = body.size();
  std::vector<std::byte> bytes(sizeof(header));
  std::memcpy(bytes.data(), &header, sizeof(header));
  bytes.insert(bytes.end(), body.begin(), body.end());
  return bytes;
}

class IpcFuzz : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kFakeInstalled); }
};

TEST_F(IpcFuzz, ChannelMessagesNeverCrashLeakOrLie) {
  const std::uint64_t n = iterations();
  std::mt19937_64 rng(seed());
  std::printf("IpcFuzz.ChannelMessages: %llu iterations, seed %llu\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(seed()));
  const int fds_before = open_fd_count();
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const IPCPoolId pool = random_pool(rng);
    const bool send_shared = (rng() & 1U) != 0;
    std::vector<std::byte> bytes = genuine_message(send_shared, pool, rng);
    if (rng() % 8 != 0) {  // one in eight stays genuine
      mutate(bytes, rng);
    }
    RawPeer peer;
    peer.channel.set_receive_timeout(10);  // a bug that waits for more fails, not hangs
    std::vector<int> fds(static_cast<std::size_t>(rng() % 4 == 0 ? rng() % 4 : 1));
    for (int& fd : fds) {
      fd = cuwrap::testing::dev_null();
    }
    if (!bytes.empty()) {
      // The descriptors go with a prefix; the rest follows as plain bytes.
      const std::size_t cut = 1 + static_cast<std::size_t>(rng() % bytes.size());
      peer.write(std::span(bytes).first(cut), fds);
      if (cut < bytes.size()) {
        peer.write(std::span(bytes).subspan(cut));
      }
    }
    for (const int fd : fds) {
      ::close(fd);
    }
    peer.hang_up();
    const bool receive_shared = (rng() & 1U) != 0;
    try {
      if (receive_shared) {
        const cuwrap::IPCSharedBuffers got = peer.channel.receive_shared_buffers();
        ASSERT_TRUE(got.pool.is_open());
        ASSERT_LE(got.buffers.size(), cuwrap::kIPCMaxSharedBuffers);
        for (const IPCBufferDescriptor& d : got.buffers) {
          ASSERT_EQ(d.pool_id, got.pool.pool_id()) << "iteration " << i;
        }
      } else {
        const cuwrap::IPCAllocationHandle got = peer.channel.receive_allocation_handle();
        ASSERT_TRUE(got.is_open());
      }
      ++accepted;
    } catch (const std::exception&) {
      ++refused;
    }
    if (i % 1024 == 0) {  // open here: the channel's socket only
      ASSERT_EQ(open_fd_count(), fds_before + 1) << "file descriptors leaked by iteration " << i;
    }
  }
  EXPECT_EQ(open_fd_count(), fds_before);
  EXPECT_GT(accepted, 0U) << "no genuine message got through: the fuzzer tests nothing";
  EXPECT_GT(refused, 0U);
  std::printf("IpcFuzz.ChannelMessages: %llu accepted, %llu refused, 0 crashes\n",
              static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(refused));
}

TEST_F(IpcFuzz, BufferDescriptorsNeverYieldMoreThanWasShared) {
  const std::uint64_t n = iterations();
  std::mt19937_64 rng(seed() + 1);
  std::printf("IpcFuzz.BufferDescriptors: %llu iterations, seed %llu\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(seed()) + 1);
  const IPCPoolId pool = random_pool(rng);
  cuwrap::DeviceMemoryResource mr = cuwrap::DeviceMemoryResource::from_allocation_handle(
      cuwrap::Device(0),
      cuwrap::IPCAllocationHandle(::open("/dev/null", O_RDONLY | O_CLOEXEC), pool));
  const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    IPCBufferDescriptor d = random_descriptor(pool, rng);
    std::uint64_t shared = 1 + rng() % 8192;  // what the exporter allocated
    std::memcpy(d.payload.data(), &shared, sizeof(shared));
    d.size = shared;
    std::vector<std::byte> bytes(sizeof(d));
    std::memcpy(bytes.data(), &d, sizeof(d));
    if (rng() % 4 != 0) {
      const std::size_t size = bytes.size();
      mutate(bytes, rng);
      bytes.resize(size);  // a descriptor has its size; its contents are the peer's
      if (rng() % 2 == 0) {
        const std::uint64_t claim = interesting(rng);
        std::memcpy(bytes.data() + offsetof(IPCBufferDescriptor, size), &claim, sizeof(claim));
      }
    }
    std::memcpy(&d, bytes.data(), sizeof(d));
    std::memcpy(&shared, d.payload.data(), sizeof(shared));
    try {
      cuwrap::Buffer buffer = cuwrap::Buffer::from_ipc_descriptor(mr, d, stream);
      ASSERT_EQ(d.pool_id, pool) << "iteration " << i;
      ASSERT_LE(buffer.size(), shared) << "iteration " << i << ": more than was shared";
      ASSERT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live + 1);
      buffer.close(stream);
      ++accepted;
    } catch (const std::invalid_argument&) {
      ++refused;
    } catch (const cuwrap::DriverError&) {  // the stand-in refused the export data
      ++refused;
    }
    ASSERT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live) << "iteration " << i;
  }
  EXPECT_GT(accepted, 0U);
  EXPECT_GT(refused, 0U);
  std::printf("IpcFuzz.BufferDescriptors: %llu accepted, %llu refused, 0 crashes\n",
              static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(refused));
}

}  // namespace
