// Imports from another process are checked against what the driver shared, without a
// GPU: the stand-in libcuda (tests/compat/fake_libcuda.cpp) imports pools from any file
// descriptor but a socket, maps an imported pointer over an allocation whose size the
// export data's first 8 bytes give, and answers cuMemGetAddressRange for it.
#include <gtest/gtest.h>
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include "fake_driver.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

cuwrap::StreamRef fake_stream() {
  return cuwrap::StreamRef::from_handle(
      reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5700)));
}

int open_fds() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

const cuwrap::IPCPoolId kPool = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

// A descriptor of an allocation of `shared` bytes (what the fake maps) claiming `claimed`.
cuwrap::IPCBufferDescriptor descriptor(std::uint64_t shared, std::uint64_t claimed) {
  cuwrap::IPCBufferDescriptor d;
  std::memcpy(d.payload.data(), &shared, sizeof(shared));
  d.size = claimed;
  d.pool_id = kPool;
  return d;
}

class IpcImportOnFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kFakeInstalled); }

  // An imported pool on the fake (its "file descriptor": one of /dev/null).
  static cuwrap::DeviceMemoryResource imported_pool() {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    return cuwrap::DeviceMemoryResource::from_allocation_handle(
        cuwrap::Device(0), cuwrap::IPCAllocationHandle(fd, kPool));
  }
};

TEST_F(IpcImportOnFakeDriver, OversizedDescriptorIsRefusedNamingBothSizesAndReleasesTheImport) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::StreamRef stream = fake_stream();
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  try {
    const cuwrap::Buffer lie =
        cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 6400), stream);
    ADD_FAILURE() << "a Buffer of " << lie.size() << " bytes over a 64-byte allocation";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("6400"), std::string::npos) << what;
    EXPECT_NE(what.find("shared 64 bytes"), std::string::npos) << what;
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live) << "the refused import was kept";
  // One byte over is as much a lie; wrapping sizes too.
  EXPECT_THROW(cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 65), stream),
               std::invalid_argument);
  EXPECT_THROW(cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, ~std::uint64_t{0}), stream),
               std::invalid_argument);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
}

TEST_F(IpcImportOnFakeDriver, HonestOrSmallerDescriptorImportsAndCloseReleasesIt) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::StreamRef stream = fake_stream();
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  {
    cuwrap::Buffer whole = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
    cuwrap::Buffer part = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(4096, 100), stream);
    EXPECT_EQ(whole.size(), 64U);
    EXPECT_EQ(part.size(), 100U);
    EXPECT_TRUE(whole.is_mapped());
    EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live + 2);
    whole.close(stream);
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
}

// The driver maps one export once per process and pool and does not count imports (the
// fake does the same): a second import of one descriptor is a Buffer over the same
// memory, and only the last Buffer's close frees it, once (cuda.core's import cache).
TEST_F(IpcImportOnFakeDriver, DuplicateImportSharesTheMemoryAndOnlyTheLastCloseFreesIt) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::StreamRef stream = fake_stream();
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  const int frees = fake_query<int>("cuwrap_fake_import_frees");
  const int bad = fake_query<int>("cuwrap_fake_bad_import_frees");
  const int imports = fake_query<int>("cuwrap_fake_pointer_imports");
  cuwrap::Buffer first = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
  cuwrap::Buffer second = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
  EXPECT_EQ(first.handle(), second.handle());
  EXPECT_TRUE(second.is_mapped());
  EXPECT_EQ(fake_query<int>("cuwrap_fake_pointer_imports"), imports + 1)
      << "a held import was imported again (a pinned pool's driver refuses that)";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live + 1);
  // Moving a holder moves its hold: still two holders.
  cuwrap::Buffer moved = std::move(first);
  EXPECT_NO_THROW(moved.close(stream));
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees) << "freed while still held";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live + 1);
  EXPECT_NO_THROW(second.close(stream));
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees + 1);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_bad_import_frees"), bad);
  // Closed through the destructor (the non-throwing close) too.
  {
    const cuwrap::Buffer a = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
    const cuwrap::Buffer b = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
    const cuwrap::Buffer c = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 32), stream);
    EXPECT_EQ(a.handle(), c.handle());
    EXPECT_EQ(c.size(), 32U);
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees + 2);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_bad_import_frees"), bad);
}

// A repeated import is checked as the first was, and its refusal leaves the memory that
// the first Buffer holds mapped.
TEST_F(IpcImportOnFakeDriver, RefusedDuplicateImportKeepsTheFirstImport) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::StreamRef stream = fake_stream();
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  const int frees = fake_query<int>("cuwrap_fake_import_frees");
  const int bad = fake_query<int>("cuwrap_fake_bad_import_frees");
  cuwrap::Buffer held = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
  EXPECT_THROW(cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 6400), stream),
               std::invalid_argument);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees) << "the held import was freed";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live + 1);
  held.close(stream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees + 1);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_bad_import_frees"), bad);
}

// release() hands this Buffer's hold to the caller: the other holder no longer counts it.
TEST_F(IpcImportOnFakeDriver, ReleasedDuplicateImportNoLongerHoldsTheMemory) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::StreamRef stream = fake_stream();
  const int frees = fake_query<int>("cuwrap_fake_import_frees");
  cuwrap::Buffer kept = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
  cuwrap::Buffer given = cuwrap::Buffer::from_ipc_descriptor(mr, descriptor(64, 64), stream);
  EXPECT_EQ(given.release(), kept.handle());
  kept.close(stream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees + 1);
}

// Threads importing and closing one descriptor at once (cuda.core's
// test_ipc_concurrent_import): every import succeeds, no free hits unmapped memory, and a
// Buffer held throughout keeps the memory mapped.
TEST_F(IpcImportOnFakeDriver, ConcurrentDuplicateImportsFreeOnceAndNeverTwice) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::StreamRef stream = fake_stream();
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  const int frees = fake_query<int>("cuwrap_fake_import_frees");
  const int bad = fake_query<int>("cuwrap_fake_bad_import_frees");
  const cuwrap::IPCBufferDescriptor shared = descriptor(4096, 4096);
  cuwrap::Buffer held = cuwrap::Buffer::from_ipc_descriptor(mr, shared, stream);
  const int imports = fake_query<int>("cuwrap_fake_pointer_imports");
  std::barrier start(kThreads);
  std::atomic<int> failures{0};
  std::atomic<int> other_address{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        try {
          cuwrap::Buffer buffer = cuwrap::Buffer::from_ipc_descriptor(mr, shared, stream);
          if (buffer.handle() != held.handle()) {
            ++other_address;
          }
          buffer.close(stream);
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(other_address.load(), 0);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_pointer_imports"), imports)
      << "a held import was imported again (a pinned pool's driver refuses that)";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees) << "freed while held";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live + 1);
  held.close(stream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees"), frees + 1);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);

  // Without a Buffer held throughout, imports and last frees interleave: each free is of
  // mapped memory, and nothing stays mapped at the end.
  const int imports_before = fake_query<int>("cuwrap_fake_pointer_imports");
  threads.clear();
  std::barrier again(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      again.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        try {
          const cuwrap::Buffer buffer = cuwrap::Buffer::from_ipc_descriptor(mr, shared, stream);
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  // Each driver import is freed exactly once.
  EXPECT_EQ(fake_query<int>("cuwrap_fake_import_frees") - (frees + 1),
            fake_query<int>("cuwrap_fake_pointer_imports") - imports_before);
  EXPECT_GE(fake_query<int>("cuwrap_fake_import_frees"), frees + 2);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_bad_import_frees"), bad) << "a free of unmapped memory";
}

TEST_F(IpcImportOnFakeDriver, DescriptorOfAnotherPoolReachesNoDriverCall) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  cuwrap::IPCBufferDescriptor other = descriptor(64, 64);
  other.pool_id[0] ^= 0xFFU;
  const int live = fake_query<int>("cuwrap_fake_live_imports");
  EXPECT_THROW(cuwrap::Buffer::from_ipc_descriptor(mr, other, fake_stream()),
               std::invalid_argument);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_imports"), live);
}

// A process that imported a pool can export it again (cuda.core keeps the descriptor it
// imported; the driver does not export an imported pool): get_allocation_handle hands out
// a duplicate of that descriptor, naming the same pool, each time; the resource keeps its
// own until it is closed.
TEST_F(IpcImportOnFakeDriver, ImportedPoolIsExportedAgain) {
  const int before = open_fds();
  {
    cuwrap::DeviceMemoryResource mr = imported_pool();
    EXPECT_EQ(open_fds(), before + 1) << "the imported pool keeps its descriptor";
    cuwrap::IPCAllocationHandle again = mr.get_allocation_handle();
    EXPECT_TRUE(again.is_open());
    EXPECT_EQ(again.pool_id(), kPool);
    const cuwrap::IPCAllocationHandle third = mr.get_allocation_handle();
    EXPECT_NE(third.handle(), again.handle());
    // The duplicate imports like the original.
    const cuwrap::DeviceMemoryResource reimported =
        cuwrap::DeviceMemoryResource::from_allocation_handle(cuwrap::Device(0), std::move(again));
    EXPECT_TRUE(reimported.is_mapped());
    EXPECT_EQ(reimported.pool_id(), kPool);
  }
  EXPECT_EQ(open_fds(), before) << "a descriptor outlived its resource or handle";
}

// An event opened from another process's descriptor passes it on: get_ipc_descriptor
// returns what it was opened from (the driver does not export an opened event), with the
// exporter's blocking_sync flag.
TEST_F(IpcImportOnFakeDriver, ImportedEventIsExportedAgainWithItsFlags) {
  cuwrap::IPCEventDescriptor sent;
  for (std::size_t i = 0; i < sizeof sent.handle.reserved; ++i) {
    sent.handle.reserved[i] = static_cast<char>(i + 1);
  }
  sent.blocking_sync = 1;
  const cuwrap::Event event = cuwrap::Event::from_ipc_descriptor(sent, cuwrap::Device(0));
  EXPECT_TRUE(event.is_blocking_sync());
  const cuwrap::IPCEventDescriptor again = event.get_ipc_descriptor();
  EXPECT_EQ(std::memcmp(again.handle.reserved, sent.handle.reserved, sizeof sent.handle.reserved),
            0);
  EXPECT_EQ(again.blocking_sync, 1);
  sent.blocking_sync = 0;
  EXPECT_EQ(cuwrap::Event::from_ipc_descriptor(sent).get_ipc_descriptor().blocking_sync, 0);
}

TEST_F(IpcImportOnFakeDriver, RefusedPoolImportClosesTheFileDescriptor) {
  const int pools = fake_query<int>("cuwrap_fake_live_pools");
  int pair[2] = {-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ::close(pair[1]);
  const int before = open_fds();
  cuwrap::IPCAllocationHandle handle(pair[0], kPool);  // a socket: the fake refuses it
  EXPECT_THROW(
      cuwrap::DeviceMemoryResource::from_allocation_handle(cuwrap::Device(0), std::move(handle)),
      cuwrap::DriverError);
  EXPECT_FALSE(handle.is_open());  // NOLINT(bugprone-use-after-move): consumed either way
  EXPECT_EQ(open_fds(), before - 1) << "the refused handle's file descriptor leaked";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_pools"), pools);
}

TEST_F(IpcImportOnFakeDriver, PoolAttributesOfAClosedResourceThrowBeforeTheDriver) {
  cuwrap::DeviceMemoryResource mr = imported_pool();
  const cuwrap::MemoryPoolAttributes attributes = mr.attributes();
  const int pools = fake_query<int>("cuwrap_fake_live_pools");
  mr.close();
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_pools"), pools - 1);
  try {
    static_cast<void>(attributes.used_mem_current());
    ADD_FAILURE() << "a view of a destroyed pool reached the driver";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attributes.reset_reserved_mem_high(), std::logic_error);
  // The setters view the same dead handle: each throws naming itself.
  const auto expect_closed = [](const char* name, const auto& set) {
    try {
      set();
      ADD_FAILURE() << name << " reached the driver with a destroyed pool";
    } catch (const std::logic_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_NE(what.find("closed"), std::string::npos) << what;
    }
  };
  expect_closed("set_release_threshold", [&] { attributes.set_release_threshold(0); });
  expect_closed("set_reuse_follow_event_dependencies",
                [&] { attributes.set_reuse_follow_event_dependencies(false); });
  expect_closed("set_reuse_allow_opportunistic",
                [&] { attributes.set_reuse_allow_opportunistic(false); });
  expect_closed("set_reuse_allow_internal_dependencies",
                [&] { attributes.set_reuse_allow_internal_dependencies(false); });
}

TEST_F(IpcImportOnFakeDriver, EventDescriptorWithUnknownFlagsIsRefusedBeforeTheDriver) {
  cuwrap::IPCEventDescriptor descriptor;
  descriptor.blocking_sync = 7;  // a peer's byte, not a flag
  try {
    static_cast<void>(cuwrap::Event::from_ipc_descriptor(descriptor));
    ADD_FAILURE() << "an event descriptor with flag byte 7 was opened";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("blocking_sync is 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(cuwrap::Event::from_ipc_descriptor(descriptor, cuwrap::Device(0))),
               std::invalid_argument);
}

}  // namespace
