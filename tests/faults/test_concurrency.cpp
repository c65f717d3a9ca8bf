// CPU-side concurrency, without a GPU: cuwrap's first use from many threads at once
// (loading the driver, resolving entry points, initialising it, retaining the primary
// context, creating and destroying streams) against the fake driver seen through the
// interposer (tracing and handle counting on, so its own locking is exercised too), and
// the release-failure handler replaced while other threads report. scripts/tsan.sh runs
// this under ThreadSanitizer.
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 16;

// Before any cuwrap call: the loader reads CUWRAP_LIBCUDA once, at first use.
const bool kEnvironment = [] {
  ::setenv("CUWRAP_LIBCUDA", CUWRAP_INTERPOSER_PATH, 1);
  ::setenv("CUWRAP_INTERPOSER_LIBCUDA", CUWRAP_FAKE_DRIVER_PATH, 1);
  ::setenv("CUWRAP_TRACE_FILE", "/dev/null", 1);
  ::setenv("CUWRAP_HANDLE_REPORT", "/dev/null", 1);
  return true;
}();

// Run `body(thread index)` on kThreads threads released at the same moment.
template <typename Body>
void on_many_threads(Body body) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
}

TEST(Concurrency, FirstUseFromManyThreadsLoadsOnceAndAnswersEveryThread) {
  ASSERT_TRUE(kEnvironment);
  std::atomic<int> versions{0};
  std::atomic<int> allocations{0};
  std::vector<std::string> errors(kThreads);
  on_many_threads([&](int t) {
    try {
      if (cuwrap::driver::cuDriverGetVersion() == 13000) {
        ++versions;
      }
      cuwrap::driver::cuInit(0);
      const CUdeviceptr p = cuwrap::driver::cuMemAlloc(256 + static_cast<std::size_t>(t));
      if (p != 0) {
        ++allocations;
      }
      cuwrap::driver::cuMemFree(p);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(t)] = e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_EQ(e, "");
  }
  EXPECT_EQ(versions.load(), kThreads);
  EXPECT_EQ(allocations.load(), kThreads);
}

TEST(Concurrency, DevicesAndStreamsFromManyThreads) {
  std::atomic<int> streams{0};
  std::vector<std::string> errors(kThreads);
  on_many_threads([&](int t) {
    try {
      const cuwrap::Device device(0);
      device.set_current();
      for (int i = 0; i < 8; ++i) {
        const cuwrap::Stream stream = device.create_stream();
        stream.sync();
        ++streams;
      }
      if (cuwrap::Device::count() != 1) {
        errors[static_cast<std::size_t>(t)] = "Device::count() != 1";
      }
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(t)] = e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_EQ(e, "");
  }
  EXPECT_EQ(streams.load(), kThreads * 8);
}

TEST(Concurrency, ReleaseHandlerReplacedWhileOtherThreadsReport) {
  constexpr int kReports = 200;
  std::atomic<int> first{0};
  std::atomic<int> second{0};
  const auto count_into = [](std::atomic<int>& counter) {
    return cuwrap::ReleaseFailureHandler(
        [](const cuwrap::ReleaseFailure& failure, void* user_data) {
          if (failure.code == CUDA_ERROR_INVALID_VALUE) {
            ++*static_cast<std::atomic<int>*>(user_data);
          }
        },
        &counter);
  };
  cuwrap::ReleaseFailureHandler previous = cuwrap::set_release_failure_handler(count_into(first));
  on_many_threads([&](int t) {
    for (int i = 0; i < kReports; ++i) {
      if (t % 4 == 0) {  // a quarter of the threads keep swapping the handler
        cuwrap::set_release_failure_handler(count_into(i % 2 == 0 ? second : first));
      } else {
        cuwrap::detail::report_release_failure(CUDA_ERROR_INVALID_VALUE, "cuStreamDestroy",
                                               "Stream");
      }
    }
  });
  cuwrap::set_release_failure_handler(previous);
  const int reporters = kThreads - kThreads / 4;
  EXPECT_EQ(first.load() + second.load(), reporters * kReports)
      << "every report reaches exactly one installed handler";
}

}  // namespace
