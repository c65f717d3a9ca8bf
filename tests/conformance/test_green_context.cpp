// Port of cuda.core's tests/test_green_context.py: one TEST per Python test function
// (classes become fixtures of the same name; see README.md for those not ported and why).
//
// cuda.core's SMResourceOptions(count=None) (the driver's smallest group) is an empty
// `count` here; a scalar count is a one-element vector.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <cuda.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Context;
using cuwrap::ContextOptions;
using cuwrap::SMResource;
using cuwrap::SMResourceOptions;
using cuwrap::SMResourceSplit;

constexpr int kGreenContextDriver = 12040;
constexpr int kGreenStreamDriver = 12050;

// Device 0 and its SM resource (cuda.core's sm_resource fixture): skips where green
// contexts cannot be had.
class GreenTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (cuwrap::driver_version() < kGreenContextDriver) {
      GTEST_SKIP() << "green contexts need a CUDA 12.4 driver";
    }
    try {
      sm_.emplace(device().resources().sm());
    } catch (const cuwrap::Error& e) {
      GTEST_SKIP() << e.what();
    }
  }
  const SMResource& sm() const { return *sm_; }
  // A context over the smallest group (cuda.core's green_ctx fixture).
  Context green_context() const {
    const SMResourceSplit split = sm().split(SMResourceOptions{});
    return device().create_context(ContextOptions{.resources = {split.groups.at(0)}});
  }
  void require_streams() {
    if (cuwrap::driver_version() < kGreenStreamDriver) {
      GTEST_SKIP() << "green-context streams need a CUDA 12.5 driver";
    }
  }
  // Split into `n` groups of the smallest count the device accepts, trying even counts
  // upward; nullopt when none works.
  std::optional<std::pair<unsigned, SMResourceSplit>> find_split(unsigned n, bool backfill) const {
    unsigned start = std::max(2U, sm().min_partition_size());
    start += start % 2;
    for (unsigned count = start; count <= sm().sm_count() / n; count += 2) {
      try {
        SMResourceSplit split = sm().split(
            SMResourceOptions{.count = std::vector<unsigned>(n, count), .backfill = backfill});
        if (split.groups.size() == n) {
          return std::pair{count, std::move(split)};
        }
      } catch (const std::invalid_argument&) {
      } catch (const cuwrap::DriverError&) {
      }
    }
    return std::nullopt;
  }

  // Two green contexts over the two groups of any split the device accepts (cuda.core's
  // _find_any_two_group_split): without backfill, else with it; nullopt when none.
  std::optional<std::pair<Context, Context>> two_group_contexts() const {
    std::optional<std::pair<unsigned, SMResourceSplit>> found = find_split(2, false);
    if (!found && cuwrap::driver_version() >= 12060) {
      found = find_split(2, true);
    }
    if (!found) {
      return std::nullopt;
    }
    const SMResourceSplit& split = found->second;
    return std::pair{device().create_context(ContextOptions{.resources = {split.groups[0]}}),
                     device().create_context(ContextOptions{.resources = {split.groups[1]}})};
  }

  std::optional<SMResource> sm_;
};

// ---- construction ----

TEST(test_green_context, test_not_user_constructible) {
  EXPECT_FALSE(std::is_default_constructible_v<cuwrap::DeviceResources>);
  EXPECT_FALSE(std::is_default_constructible_v<SMResource>);
}

class test_green_context_gpu : public GreenTest {};

TEST_F(test_green_context_gpu, test_create_context_requires_resources) {
  // cuda.core raises ValueError for options without resources; cuwrap (API.md 5.1) makes a
  // regular context then, and refuses only what cannot make a green context: flags beside
  // resources (docs/high-level.md, "Differences from cuda.core").
  const cuwrap::Context regular = device().create_context(ContextOptions{});
  EXPECT_FALSE(regular.is_green());
  const SMResourceSplit split = device().resources().sm().split({.count = {8}});
  EXPECT_THROW(static_cast<void>(device().create_context(
                   ContextOptions{.resources = {split.groups.at(0)}, .flags = 1})),
               std::invalid_argument);
}

// ---- TestSMResourceQuery ----

class TestSMResourceQuery : public GreenTest {};

TEST_F(TestSMResourceQuery, test_properties) {
  EXPECT_GT(sm().sm_count(), 0U);
  EXPECT_GT(sm().min_partition_size(), 0U);
  EXPECT_GT(sm().coscheduled_alignment(), 0U);
  EXPECT_EQ(sm().handle().type, CU_DEV_RESOURCE_TYPE_SM);
}

TEST_F(TestSMResourceQuery, test_arch_constraints_pre_hopper) {
  if (device().compute_capability() >= cuwrap::ComputeCapability{9, 0}) {
    GTEST_SKIP() << "for architectures before Hopper";
  }
  EXPECT_GE(sm().min_partition_size(), 2U);
  EXPECT_GE(sm().coscheduled_alignment(), 2U);
}

TEST_F(TestSMResourceQuery, test_arch_constraints_hopper_plus) {
  if (device().compute_capability() < cuwrap::ComputeCapability{9, 0}) {
    GTEST_SKIP() << "for Hopper and later";
  }
  EXPECT_GE(sm().min_partition_size(), 2U);
  EXPECT_GE(sm().coscheduled_alignment(), 2U);
  EXPECT_EQ(sm().min_partition_size() % 2, 0U);
  EXPECT_EQ(sm().coscheduled_alignment() % 2, 0U);
}

// ---- TestSMResourceSplitValidation ----

class TestSMResourceSplitValidation : public GreenTest {};

TEST_F(TestSMResourceSplitValidation, test_sequence_length_mismatch_raises) {
  const unsigned count = sm().min_partition_size();
  EXPECT_THROW(static_cast<void>(sm().split(SMResourceOptions{
                   .count = {count, count}, .coscheduled_sm_count = {count, count, count}})),
               std::invalid_argument);
}

// cuda.core: count=-1 is a ValueError; the counts are unsigned here, and a count above
// the resource's SMs is refused before the driver.
TEST_F(TestSMResourceSplitValidation, test_negative_count_raises) {
  static_assert(std::is_same_v<decltype(SMResourceOptions::count), std::vector<unsigned>>);
  EXPECT_THROW(static_cast<void>(sm().split(SMResourceOptions{.count = {sm().sm_count() + 1}})),
               std::invalid_argument);
}

TEST_F(TestSMResourceSplitValidation, test_dry_run_cannot_create_context) {
  const SMResourceSplit split = sm().split(SMResourceOptions{}, true);
  ASSERT_EQ(split.groups.size(), 1U);
  EXPECT_THROW(
      static_cast<void>(device().create_context(ContextOptions{.resources = {split.groups[0]}})),
      std::invalid_argument);
}

// ---- TestSMResourceSplit ----

class TestSMResourceSplit : public GreenTest {};

TEST_F(TestSMResourceSplit, test_single_group_counts) {
  const auto found = find_split(1, false);
  if (!found) {
    GTEST_SKIP() << "the device has no explicit single-group split";
  }
  const auto& [requested, split] = *found;
  ASSERT_EQ(split.groups.size(), 1U);
  EXPECT_GE(split.groups[0].sm_count(), requested);
  unsigned rest = 0;
  for (const SMResource& each : split.remainder) {
    rest += each.sm_count();
  }
  EXPECT_LE(split.groups[0].sm_count() + rest, sm().sm_count());
}

TEST_F(TestSMResourceSplit, test_discovery_mode) {
  const SMResourceSplit split = sm().split(SMResourceOptions{});
  ASSERT_EQ(split.groups.size(), 1U);
  EXPECT_GE(split.groups[0].sm_count(), sm().min_partition_size());
}

TEST_F(TestSMResourceSplit, test_discovery_respects_alignment) {
  const SMResourceSplit split = sm().split(SMResourceOptions{});
  ASSERT_EQ(split.groups.size(), 1U);
  ASSERT_GT(sm().coscheduled_alignment(), 0U);
  EXPECT_EQ(split.groups[0].sm_count() % sm().coscheduled_alignment(), 0U);
}

TEST_F(TestSMResourceSplit, test_two_groups) {
  const auto found = find_split(2, false);
  if (!found) {
    GTEST_SKIP() << "the device has no two-group split without backfill";
  }
  const auto& [count, split] = *found;
  ASSERT_EQ(split.groups.size(), 2U);
  EXPECT_GE(split.groups[0].sm_count(), count);
  EXPECT_GE(split.groups[1].sm_count(), count);
  EXPECT_LE(split.groups[0].sm_count() + split.groups[1].sm_count(), sm().sm_count());
}

TEST_F(TestSMResourceSplit, test_two_groups_backfill) {
  if (cuwrap::driver_version() < 12060) {
    GTEST_SKIP() << "backfill needs a CUDA 12.6 driver";
  }
  // The largest even count that only backfill can split into two groups.
  for (unsigned count = sm().sm_count() / 2; count >= 2; count -= 1) {
    if (count % 2 != 0) {
      continue;
    }
    const SMResourceOptions plain{.count = {count, count}};
    bool plain_works = false;
    try {
      plain_works = sm().split(plain).groups.size() == 2;
    } catch (const std::exception&) {
    }
    if (plain_works) {
      continue;
    }
    SMResourceOptions backfill = plain;
    backfill.backfill = true;
    std::optional<SMResourceSplit> split;
    try {
      split = sm().split(backfill);
    } catch (const std::exception&) {
      continue;
    }
    if (split->groups.size() != 2) {
      continue;
    }
    EXPECT_GE(split->groups[0].sm_count(), count);
    EXPECT_GE(split->groups[1].sm_count(), count);
    EXPECT_LE(split->groups[0].sm_count() + split->groups[1].sm_count(), sm().sm_count());
    return;
  }
  GTEST_SKIP() << "the device has no two-group split that needs backfill";
}

TEST_F(TestSMResourceSplit, test_dry_run_matches_real) {
  const SMResourceSplit dry = sm().split(SMResourceOptions{}, true);
  const SMResourceSplit real = sm().split(SMResourceOptions{}, false);
  ASSERT_EQ(dry.groups.size(), real.groups.size());
  for (std::size_t i = 0; i < dry.groups.size(); ++i) {
    EXPECT_EQ(dry.groups[i].sm_count(), real.groups[i].sm_count());
  }
}

// ---- TestGreenContextLifecycle ----

class TestGreenContextLifecycle : public GreenTest {};

TEST_F(TestGreenContextLifecycle, test_is_green) {
  const Context context = green_context();
  EXPECT_TRUE(context.is_green());
  EXPECT_NE(context.handle(), nullptr);
}

// cuda.core: create_stream on the primary context is refused; cuwrap's Context is a
// green context only (the primary context is the Device's), so the call cannot be made.
TEST_F(TestGreenContextLifecycle, test_create_stream_on_primary_raises) {
  EXPECT_FALSE((std::is_constructible_v<Context, CUcontext>));
  EXPECT_FALSE((std::is_convertible_v<cuwrap::Device, const Context&>));
}

TEST_F(TestGreenContextLifecycle, test_create_stream_blocking_raises) {
  require_streams();
  if (IsSkipped())
    return;
  const Context context = green_context();
  EXPECT_THROW(
      static_cast<void>(context.create_stream(cuwrap::StreamOptions{.nonblocking = false})),
      std::invalid_argument);
}

TEST_F(TestGreenContextLifecycle, test_create_stream_explicit) {
  require_streams();
  if (IsSkipped())
    return;
  const Context context = green_context();
  const cuwrap::Stream stream = context.create_stream();
  EXPECT_TRUE(stream.is_open());
  EXPECT_EQ(stream.context(), context.handle());
}

TEST_F(TestGreenContextLifecycle, test_stream_and_event_track_green_context) {
  require_streams();
  if (IsSkipped())
    return;
  const Context context = green_context();
  const cuwrap::Stream stream = context.create_stream();
  const cuwrap::Event event = stream.record();
  EXPECT_EQ(stream.context(), context.handle());
  EXPECT_EQ(event.context(), context.handle());
  EXPECT_NO_THROW(stream.sync());
  EXPECT_NO_THROW(event.sync());
}

// ---- TestContextResources ----

class TestContextResources : public GreenTest {};

TEST_F(TestContextResources, test_green_ctx_sm_resources) {
  const Context context = green_context();
  const SMResource context_sm = context.resources().sm();
  EXPECT_GT(context_sm.sm_count(), 0U);
  EXPECT_LE(context_sm.sm_count(), sm().sm_count());
}

TEST_F(TestContextResources, test_green_ctx_resources_reflect_partition) {
  const std::optional<std::pair<Context, Context>> contexts = two_group_contexts();
  if (!contexts) {
    GTEST_SKIP() << "the device has no two-group split";
  }
  const auto& [a, b] = *contexts;
  const unsigned sm_a = a.resources().sm().sm_count();
  const unsigned sm_b = b.resources().sm().sm_count();
  EXPECT_GT(sm_a, 0U);
  EXPECT_GT(sm_b, 0U);
  EXPECT_LE(sm_a + sm_b, sm().sm_count());
}

// ---- TestGreenContextKernelLaunch ----

constexpr const char* kFill = R"(
extern "C" __global__ void fill(int* out, int value, int n) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < n) {
    out[tid] = value;
  }
})";

class TestGreenContextKernelLaunch : public GreenTest {
 protected:
  void SetUp() override {
    GreenTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    require_streams();
    if (IsSkipped()) {
      return;
    }
    CUWRAP_REQUIRE_NVRTC();
    cuwrap::ProgramOptions options;
    options.std = "c++17";
    options.arch = "sm_" + device().arch();
    kernel_.emplace(cuwrap::Program(kFill, cuwrap::CodeType::Cxx, options)
                        .compile(cuwrap::TargetType::Cubin)
                        .get_kernel("fill"));
  }
  // Fill n ints with `value` on `stream` and return what the host reads back.
  std::vector<int> fill(const cuwrap::Stream& stream, int n, int value) const {
    cuwrap::Buffer buffer = device().allocate(static_cast<std::size_t>(n) * sizeof(int), stream);
    cuwrap::launch(stream,
                   cuwrap::LaunchConfig{.grid = static_cast<unsigned>((n + 31) / 32), .block = 32},
                   *kernel_, buffer, value, n);
    std::vector<int> host(static_cast<std::size_t>(n));
    buffer.copy_to(std::as_writable_bytes(std::span<int>(host)), stream);
    stream.sync();
    return host;
  }

  std::optional<cuwrap::Kernel> kernel_;
};

TEST_F(TestGreenContextKernelLaunch, test_launch_and_verify) {
  const Context context = green_context();
  const cuwrap::Stream stream = context.create_stream();
  EXPECT_EQ(fill(stream, 64, 42), std::vector<int>(64, 42));
}

TEST_F(TestGreenContextKernelLaunch, test_two_green_contexts_independent) {
  const std::optional<std::pair<Context, Context>> contexts = two_group_contexts();
  if (!contexts) {
    GTEST_SKIP() << "the device has no two-group split";
  }
  const auto& [a, b] = *contexts;
  EXPECT_EQ(fill(a.create_stream(), 64, 10), std::vector<int>(64, 10));
  EXPECT_EQ(fill(b.create_stream(), 64, 20), std::vector<int>(64, 20));
}

}  // namespace
