// launch() and LaunchConfig on a GPU: results checked against the host with random
// data, multi-dimensional grids, dynamic shared memory (also above 48 KiB), clusters,
// cooperative launch, argument checks, occupancy against the raw driver calls.
// The configuration checks that need no device run everywhere.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "kernel_sources.hpp"
#include "toolkit_libraries.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::CodeType;
using cuwrap::Kernel;
using cuwrap::LaunchConfig;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::Stream;
using cuwrap::TargetType;
using cuwrap::testing::contains;

// cuda.core's saxpy and vector_add, then kernels of these tests' own.
const std::string kLaunchKernels =
    std::string(cuwrap::testing::kSaxpySource) + cuwrap::testing::kVectorAddSource + R"(
// Every thread records its block and thread coordinates at its global linear index.
extern "C" __global__ void coordinates(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned index = block * blockDim.x * blockDim.y * blockDim.z + thread;
  out[2 * index] = blockIdx.x + 1000u * blockIdx.y + 1000000u * blockIdx.z;
  out[2 * index + 1] = threadIdx.x + 1000u * threadIdx.y + 1000000u * threadIdx.z;
}

// Reverse each block's slice through dynamic shared memory.
extern "C" __global__ void reverse_blocks(const int* in, int* out, unsigned per_block) {
  extern __shared__ int slice[];
  const unsigned base = blockIdx.x * per_block;
  for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x) slice[i] = in[base + i];
  __syncthreads();
  for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x)
    out[base + i] = slice[per_block - 1 - i];
}

extern "C" __global__ void count_launches(unsigned* counter, int step) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, static_cast<unsigned>(step));
}

struct Pair { int a; float b; };
extern "C" __global__ void take_struct(Pair p, double d, float* out) {
  out[0] = static_cast<float>(p.a) + p.b + static_cast<float>(d);
}
)";

constexpr const char* kClusterKernel = R"(
extern "C" __global__ void cluster_info(unsigned* out) {
  unsigned rank, count;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(count));
  if (threadIdx.x == 0) {
    const unsigned block = blockIdx.x + gridDim.x * blockIdx.y;
    out[2 * block] = rank;
    out[2 * block + 1] = count;
  }
}
)";

constexpr const char* kCooperativeKernel = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// Each block publishes a value, the whole grid synchronises, then each block reads its
// neighbour's value: only correct when grid.sync() really is a grid-wide barrier.
extern "C" __global__ void grid_rotate(unsigned* stage, unsigned* out, unsigned* valid) {
  cg::grid_group grid = cg::this_grid();
  if (threadIdx.x == 0) stage[blockIdx.x] = blockIdx.x * 3u + 1u;
  grid.sync();
  if (threadIdx.x == 0) {
    out[blockIdx.x] = stage[(blockIdx.x + 1) % gridDim.x];
    valid[blockIdx.x] = grid.is_valid() ? 1u : 0u;
  }
}
)";

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> dist(T(-100), T(100));
    for (T& x : v)
      x = dist(rng);
  } else {
    std::uniform_int_distribution<T> dist(1, 1 << 30);
    for (T& x : v)
      x = dist(rng);
  }
  return v;
}

// ---- configuration checks (no GPU needed) -----------------------------------------

TEST(LaunchConfig, Dim3DefaultsAndConversions) {
  const cuwrap::Dim3 d;
  EXPECT_EQ(d.x, 1u);
  EXPECT_EQ(d.y, 1u);
  EXPECT_EQ(d.z, 1u);
  const LaunchConfig config{.grid = 40, .block = {16, 8}};
  EXPECT_EQ(config.grid, cuwrap::Dim3(40, 1, 1));
  EXPECT_EQ(config.block.volume(), 128u);
  EXPECT_FALSE(config.cluster.has_value());
  EXPECT_EQ(config.shmem_size, 0u);
  EXPECT_FALSE(config.cooperative_launch);
}

TEST(LaunchConfig, InvalidConfigurationsAreRejected) {
  auto message = [](const LaunchConfig& config) {
    try {
      cuwrap::detail::check_config(config);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(contains(message({.grid = {0}, .block = 32}), "grid"));
  EXPECT_TRUE(contains(message({.grid = 1, .block = {32, 0}}), "block"));
  EXPECT_TRUE(contains(message({.grid = 1, .block = 2048}), "1024"));
  EXPECT_TRUE(contains(message({.grid = 1, .block = {32, 32, 2}}), "2048 threads"));
  EXPECT_TRUE(contains(message({.grid = 1, .block = {1, 1, 128}}), "z <= 64"));
  EXPECT_TRUE(
      contains(message({.grid = 4, .block = 32, .cluster = cuwrap::Dim3{3}}), "does not divide"));
  EXPECT_TRUE(contains(message({.grid = 4, .block = 32, .cluster = cuwrap::Dim3{0}}), "cluster"));
  EXPECT_EQ(message({.grid = {4, 2}, .block = {32, 32}, .cluster = cuwrap::Dim3{2, 2}}), "");
}

TEST(LaunchConfig, TypeNamesForMessages) {
  EXPECT_EQ(cuwrap::detail::type_name<float>(), "float");
  EXPECT_EQ(cuwrap::detail::type_name<double>(), "double");
  EXPECT_EQ(cuwrap::detail::type_name<int>(), "int");
}

// What launch_raw receives for an argument list: one pointer per argument, in order, each
// to a copy of that argument (arguments of one type included), with its size and name.
TEST(LaunchConfig, PackedArgumentsPointToCopiesInOrder) {
  struct Pair {
    int a;
    double b;
  };
  const float scale = 2.5F;
  const int first = 7;
  const int second = -3;
  const Pair pair{4, 0.25};
  bool called = false;
  cuwrap::detail::with_packed_arguments(
      [&](void** pointers, std::size_t count, const std::size_t* sizes,
          const std::string_view* names) {
        called = true;
        ASSERT_EQ(count, 4U);
        EXPECT_EQ(*static_cast<const float*>(pointers[0]), 2.5F);
        EXPECT_EQ(*static_cast<const int*>(pointers[1]), 7);
        EXPECT_EQ(*static_cast<const int*>(pointers[2]), -3);
        EXPECT_EQ(static_cast<const Pair*>(pointers[3])->a, 4);
        EXPECT_EQ(static_cast<const Pair*>(pointers[3])->b, 0.25);
        EXPECT_NE(pointers[1], pointers[2]) << "two arguments of one type are two copies";
        EXPECT_NE(pointers[1], static_cast<const void*>(&first)) << "a copy, not the caller's";
        EXPECT_EQ(sizes[0], sizeof(float));
        EXPECT_EQ(sizes[1], sizeof(int));
        EXPECT_EQ(sizes[3], sizeof(Pair));
        EXPECT_EQ(names[0], "float");
        EXPECT_EQ(names[2], "int");
      },
      scale, first, second, pair);
  EXPECT_TRUE(called);

  std::size_t none = 1;
  cuwrap::detail::with_packed_arguments([&](void** /*pointers*/, std::size_t count,
                                            const std::size_t* /*sizes*/,
                                            const std::string_view* /*names*/) { none = count; });
  EXPECT_EQ(none, 0U) << "a kernel without parameters";
}

// ---- with a GPU ------------------------------------------------------------------

class LaunchGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    CUWRAP_REQUIRE_NVRTC();
    Program program(kLaunchKernels, CodeType::Cxx);  // arch: the current device's
    const std::vector<std::string> expressions{"vector_add<float>", "vector_add<double>"};
    code_.emplace(program.compile(TargetType::Cubin, expressions));
  }

  Buffer upload(const auto& host) {
    Buffer b = device_->allocate(host.size() * sizeof(host[0]), *stream_);
    b.copy_from(host, *stream_);
    return b;
  }

  template <class T>
  std::vector<T> download(const Buffer& b) {
    std::vector<T> host(b.size() / sizeof(T));
    b.copy_to(host, *stream_);
    stream_->sync();
    return host;
  }

  int major() const { return device_->compute_capability().major; }

  std::optional<ObjectCode> code_;
};

TEST_F(LaunchGpu, SaxpyMatchesTheHost) {
  const Kernel saxpy = code_->get_kernel("saxpy");
  constexpr std::size_t kN = 10007;
  const auto x = random_vector<float>(kN, 1);
  const auto y = random_vector<float>(kN, 2);
  Buffer dx = upload(x);
  Buffer dy = upload(y);
  Buffer out = device_->allocate(kN * sizeof(float), *stream_);
  out.fill(std::uint8_t{0xAB}, *stream_);
  const float a = 2.5f;
  cuwrap::launch(*stream_, {.grid = (kN + 255) / 256, .block = 256}, saxpy, a, dx, dy, out, kN);
  const auto result = download<float>(out);
  for (std::size_t i = 0; i < kN; ++i) {
    // NVRTC contracts a * x + y into one fused multiply-add (fmad defaults to true).
    ASSERT_EQ(result[i], std::fma(a, x[i], y[i])) << i;
  }
}

TEST_F(LaunchGpu, TemplatedVectorAddWithEveryPointerKind) {
  constexpr std::size_t kN = 4099;
  {
    const Kernel add = code_->get_kernel("vector_add<float>");
    const auto a = random_vector<float>(kN, 3);
    const auto b = random_vector<float>(kN, 4);
    Buffer da = upload(a);
    Buffer db = upload(b);
    Buffer dc = device_->allocate(kN * sizeof(float), *stream_);
    // Buffer, raw CUdeviceptr and typed pointer arguments.
    const CUdeviceptr raw_b = db.handle();
    auto* typed_c = reinterpret_cast<float*>(dc.handle());
    cuwrap::launch(*stream_, {.grid = 8, .block = 128}, add, da, raw_b, typed_c, kN);
    const auto c = download<float>(dc);
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(c[i], a[i] + b[i]) << i;
    }
  }
  {
    const Kernel add = code_->get_kernel("vector_add<double>");
    const auto a = random_vector<double>(kN, 5);
    const auto b = random_vector<double>(kN, 6);
    Buffer da = upload(a);
    Buffer db = upload(b);
    Buffer dc = device_->allocate(kN * sizeof(double), *stream_);
    cuwrap::launch(*stream_, {.grid = 3, .block = 512}, add, da, db, dc, kN);
    const auto c = download<double>(dc);
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(c[i], a[i] + b[i]) << i;
    }
  }
}

TEST_F(LaunchGpu, MultiDimensionalGrids) {
  const Kernel kernel = code_->get_kernel("coordinates");
  for (const LaunchConfig& config : {LaunchConfig{.grid = {5, 3}, .block = {8, 4}},
                                     LaunchConfig{.grid = {3, 4, 2}, .block = {4, 2, 8}}}) {
    const std::size_t threads = config.grid.volume() * config.block.volume();
    Buffer out = device_->allocate(threads * 2 * sizeof(unsigned), *stream_);
    out.fill(std::uint32_t{0xFFFFFFFF}, *stream_);
    cuwrap::launch(*stream_, config, kernel, out);
    const auto got = download<unsigned>(out);
    std::size_t index = 0;
    for (unsigned bz = 0; bz < config.grid.z; ++bz)
      for (unsigned by = 0; by < config.grid.y; ++by)
        for (unsigned bx = 0; bx < config.grid.x; ++bx)
          for (unsigned tz = 0; tz < config.block.z; ++tz)
            for (unsigned ty = 0; ty < config.block.y; ++ty)
              for (unsigned tx = 0; tx < config.block.x; ++tx, ++index) {
                ASSERT_EQ(got[2 * index], bx + 1000u * by + 1000000u * bz) << index;
                ASSERT_EQ(got[2 * index + 1], tx + 1000u * ty + 1000000u * tz) << index;
              }
    EXPECT_EQ(index, threads);
  }
}

TEST_F(LaunchGpu, DynamicSharedMemoryIncludingAbove48KiB) {
  const Kernel kernel = code_->get_kernel("reverse_blocks");
  const auto optin = static_cast<std::size_t>(
      device_->attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  std::vector<unsigned> sizes{256, 4096};
  if (optin >= 100 * 1024) {
    sizes.push_back(100 * 1024 / sizeof(int));  // needs the raised limit
  }
  for (unsigned per_block : sizes) {
    constexpr unsigned kBlocks = 6;
    const auto in = random_vector<int>(std::size_t{per_block} * kBlocks, per_block);
    Buffer din = upload(in);
    Buffer dout = device_->allocate(in.size() * sizeof(int), *stream_);
    cuwrap::launch(*stream_, {.grid = kBlocks, .block = 256, .shmem_size = per_block * sizeof(int)},
                   kernel, din, dout, per_block);
    const auto out = download<int>(dout);
    for (unsigned b = 0; b < kBlocks; ++b) {
      for (unsigned i = 0; i < per_block; ++i) {
        ASSERT_EQ(out[b * per_block + i], in[b * per_block + per_block - 1 - i])
            << "per_block=" << per_block << " block=" << b << " i=" << i;
      }
    }
  }
  if (optin >= 100 * 1024) {
    EXPECT_GE(kernel.attributes().max_dynamic_shared_size_bytes(*device_), 100 * 1024);
  }
}

TEST_F(LaunchGpu, StructAndScalarArguments) {
  struct Pair {
    int a;
    float b;
  };
  const Kernel kernel = code_->get_kernel("take_struct");
  Buffer out = device_->allocate(sizeof(float), *stream_);
  cuwrap::launch(*stream_, {.grid = 1, .block = 1}, kernel, Pair{40, 1.5f}, 0.25, out);
  EXPECT_EQ(download<float>(out)[0], 41.75f);
}

TEST_F(LaunchGpu, ClusterLaunchOnSm90) {
  const Kernel counter = code_->get_kernel("count_launches");
  Buffer count = device_->allocate(sizeof(unsigned), *stream_);
  count.fill(std::uint32_t{0}, *stream_);
  if (major() < 9) {
    try {
      cuwrap::launch(*stream_, {.grid = 4, .block = 32, .cluster = cuwrap::Dim3{2}}, counter, count,
                     1);
      FAIL() << "expected std::invalid_argument before sm_90";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "sm_90")) << e.what();
    }
    GTEST_SKIP() << "cluster launches need sm_90; this device is sm_" << device_->arch()
                 << " (the refusal was checked)";
  }
  Program program(kClusterKernel, CodeType::Cxx);
  const Kernel kernel = program.compile(TargetType::Cubin).get_kernel("cluster_info");
  struct Case {
    cuwrap::Dim3 grid, cluster;
  };
  for (const Case& c : {Case{{8, 2}, {2, 1}}, Case{{4, 4}, {2, 2}}, Case{{8, 1}, {4, 1}}}) {
    const std::size_t blocks = c.grid.volume();
    Buffer out = device_->allocate(blocks * 2 * sizeof(unsigned), *stream_);
    out.fill(std::uint32_t{0xFFFFFFFF}, *stream_);
    cuwrap::launch(*stream_, {.grid = c.grid, .block = 64, .cluster = c.cluster}, kernel, out);
    const auto got = download<unsigned>(out);
    for (unsigned by = 0; by < c.grid.y; ++by) {
      for (unsigned bx = 0; bx < c.grid.x; ++bx) {
        const unsigned block = bx + c.grid.x * by;
        const unsigned rank = (bx % c.cluster.x) + c.cluster.x * (by % c.cluster.y);
        ASSERT_EQ(got[2 * block], rank) << "block " << bx << "," << by;
        ASSERT_EQ(got[2 * block + 1], c.cluster.volume()) << "block " << bx << "," << by;
      }
    }
  }
  // The cluster must divide the grid: refused before the driver sees it.
  Buffer unused = device_->allocate(64, *stream_);
  EXPECT_THROW(cuwrap::launch(*stream_, {.grid = 5, .block = 64, .cluster = cuwrap::Dim3{2}},
                              kernel, unused),
               std::invalid_argument);
}

TEST_F(LaunchGpu, CooperativeLaunchSynchronisesTheGrid) {
  // The headers NVRTC compiles against belong with the NVRTC library in use: the build's
  // toolkit, or CUWRAP_NVRTC_INCLUDE_DIR where a build from another toolkit's headers
  // alone runs with this machine's NVRTC.
  const char* override_dir = std::getenv("CUWRAP_NVRTC_INCLUDE_DIR");
  const std::string include_dir =
      override_dir != nullptr && *override_dir != '\0' ? override_dir : CUWRAP_CUDA_INCLUDE_DIR;
  if (!std::filesystem::exists(include_dir + "/cooperative_groups.h")) {
    GTEST_SKIP() << include_dir << " has no cooperative_groups.h (toolkit headers only); "
                 << "set CUWRAP_NVRTC_INCLUDE_DIR to the include directory of the NVRTC in use";
  }
  ProgramOptions options;
  options.include_path = {include_dir, include_dir + "/cccl"};
  Program program(kCooperativeKernel, CodeType::Cxx, options);
  const Kernel kernel = program.compile(TargetType::Cubin).get_kernel("grid_rotate");
  const int sms = device_->attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const int per_sm = kernel.occupancy().max_active_blocks_per_multiprocessor(128, 0);
  ASSERT_GT(per_sm, 0);
  const unsigned blocks = static_cast<unsigned>(sms * std::min(per_sm, 2));
  Buffer stage = device_->allocate(blocks * sizeof(unsigned), *stream_);
  Buffer out = device_->allocate(blocks * sizeof(unsigned), *stream_);
  Buffer valid = device_->allocate(blocks * sizeof(unsigned), *stream_);
  stage.fill(std::uint32_t{0}, *stream_);
  out.fill(std::uint32_t{0xFFFFFFFF}, *stream_);
  valid.fill(std::uint32_t{0}, *stream_);
  cuwrap::launch(*stream_, {.grid = blocks, .block = 128, .cooperative_launch = true}, kernel,
                 stage, out, valid);
  const auto got = download<unsigned>(out);
  const auto ok = download<unsigned>(valid);
  for (unsigned b = 0; b < blocks; ++b) {
    ASSERT_EQ(got[b], ((b + 1) % blocks) * 3u + 1u) << b;
    ASSERT_EQ(ok[b], 1u) << b;
  }
  // A cooperative grid larger than the device holds is refused before the driver,
  // naming the grid and the limit; check(device, kernel) says the same without launching.
  const unsigned too_many = static_cast<unsigned>(sms * per_sm + 1);
  const LaunchConfig too_large{.grid = too_many, .block = 128, .cooperative_launch = true};
  try {
    cuwrap::launch(*stream_, too_large, kernel, stage, out, valid);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), std::to_string(too_many) + " blocks")) << e.what();
    EXPECT_TRUE(contains(e.what(), "at most " + std::to_string(sms * per_sm))) << e.what();
  }
  EXPECT_THROW(too_large.check(*device_, kernel), std::invalid_argument);
  // The same through a StreamRef made from the bare CUstream (no cuwrap state: the
  // stream's own context answers the occupancy query).
  const cuwrap::StreamRef bare(stream_->handle());
  EXPECT_THROW(cuwrap::launch(bare, too_large, kernel, stage, out, valid), std::invalid_argument);
  EXPECT_NO_THROW((LaunchConfig{.grid = blocks, .block = 128, .cooperative_launch = true}.check(
      *device_, kernel)));
  stream_->sync();
}

TEST_F(LaunchGpu, ArgumentMismatchesThrowBeforeAnythingRuns) {
  const Kernel counter = code_->get_kernel("count_launches");
  const Kernel saxpy = code_->get_kernel("saxpy");
  Buffer count = device_->allocate(sizeof(unsigned), *stream_);
  count.fill(std::uint32_t{0}, *stream_);
  const LaunchConfig config{.grid = 1, .block = 32};
  try {
    cuwrap::launch(*stream_, config, counter, count);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "kernel 'count_launches' takes 2 parameters but 1 argument was given");
  }
  try {
    cuwrap::launch(*stream_, config, counter, count, 1, 2);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "takes 2 parameters but 3 arguments")) << e.what();
  }
  try {
    cuwrap::launch(*stream_, config, counter, count, 1.0);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "kernel 'count_launches' parameter 1 is 4 bytes but argument 1 is 8 bytes "
                 "(double)");
  }
  float x = 0;
  try {
    cuwrap::launch(*stream_, config, saxpy, 2.0, &x, &x, &x, std::size_t{1});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "kernel 'saxpy' parameter 0 is 4 bytes but argument 0 is 8 bytes "
                 "(double)");
  }
  try {
    cuwrap::launch(*stream_, {.grid = 1, .block = 2048}, counter, count, 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "LaunchConfig::block")) << e.what();
  }
  EXPECT_EQ(download<unsigned>(count)[0], 0u) << "a refused launch must not run";
  cuwrap::launch(*stream_, config, counter, count, 5);
  cuwrap::launch(*stream_, config, counter, count, 7);
  EXPECT_EQ(download<unsigned>(count)[0], 12u);
}

TEST_F(LaunchGpu, DefaultStreamOfTheCurrentContext) {
  const Kernel counter = code_->get_kernel("count_launches");
  Buffer count = device_->allocate(sizeof(unsigned), *stream_);
  count.fill(std::uint32_t{0}, *stream_);
  stream_->sync();
  const cuwrap::StreamRef legacy = cuwrap::StreamRef::from_handle(nullptr);
  cuwrap::launch(legacy, {.grid = 1, .block = 1}, counter, count, 3);
  legacy.sync();
  EXPECT_EQ(download<unsigned>(count)[0], 3u);
}

TEST_F(LaunchGpu, OccupancyAgreesWithTheDriver) {
  const Kernel kernel = code_->get_kernel("reverse_blocks");
  const auto occupancy = kernel.occupancy();
  const CUfunction function = cuwrap::driver::cuKernelGetFunction(kernel.handle());
  for (int block : {32, 128, 256, 1024}) {
    for (std::size_t smem : {std::size_t{0}, std::size_t{4096}, std::size_t{16384}}) {
      EXPECT_EQ(occupancy.max_active_blocks_per_multiprocessor(block, smem),
                cuwrap::driver::cuOccupancyMaxActiveBlocksPerMultiprocessor(function, block, smem))
          << block << " " << smem;
    }
    EXPECT_EQ(occupancy.available_dynamic_shared_memory_per_block(2, block),
              cuwrap::driver::cuOccupancyAvailableDynamicSMemPerBlock(function, 2, block));
  }
  const auto literal = occupancy.max_potential_block_size(0, 0);  // not ambiguous
  EXPECT_GT(literal.max_block_size, 0);
  for (int limit : {0, 256}) {
    const auto ours = occupancy.max_potential_block_size(1024, limit);
    const auto [min_grid, block] =
        cuwrap::driver::cuOccupancyMaxPotentialBlockSize(function, nullptr, 1024, limit);
    EXPECT_EQ(ours.min_grid_size, min_grid);
    EXPECT_EQ(ours.max_block_size, block);
    EXPECT_GT(ours.max_block_size, 0);
  }
  const auto per_block = occupancy.max_potential_block_size(
      [](int block_size) -> std::size_t { return static_cast<std::size_t>(block_size) * 4; });
  const auto [min_grid, block] = cuwrap::driver::cuOccupancyMaxPotentialBlockSize(
      function,
      [](int block_size) -> std::size_t { return static_cast<std::size_t>(block_size) * 4; }, 0, 0);
  EXPECT_EQ(per_block.min_grid_size, min_grid);
  EXPECT_EQ(per_block.max_block_size, block);

  if (major() >= 9) {
    const LaunchConfig config{.grid = 64, .block = 128, .cluster = cuwrap::Dim3{2}};
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = 2;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = 1;
    CUlaunchConfig raw{};
    raw.gridDimX = 64;
    raw.gridDimY = raw.gridDimZ = 1;
    raw.blockDimX = 128;
    raw.blockDimY = raw.blockDimZ = 1;
    raw.attrs = &attribute;
    raw.numAttrs = 1;
    EXPECT_EQ(occupancy.max_potential_cluster_size(config),
              cuwrap::driver::cuOccupancyMaxPotentialClusterSize(function, &raw));
    EXPECT_EQ(occupancy.max_active_clusters(config),
              cuwrap::driver::cuOccupancyMaxActiveClusters(function, &raw));
    EXPECT_GT(occupancy.max_active_clusters(config), 0);
    // A stream, as cuda.core's (config, stream): the same answers in its context.
    raw.hStream = stream_->handle();
    EXPECT_EQ(occupancy.max_potential_cluster_size(config, *stream_),
              cuwrap::driver::cuOccupancyMaxPotentialClusterSize(function, &raw));
    EXPECT_EQ(occupancy.max_active_clusters(config, *stream_),
              cuwrap::driver::cuOccupancyMaxActiveClusters(function, &raw));
    // No cluster: a count (the driver's answer for the kernel's own cluster size), as
    // cuda.core's max_active_clusters(config), not an error. For a kernel without a
    // compile-time cluster the H100's driver 580 answers 0.
    const LaunchConfig plain{.grid = 64, .block = 128};
    raw.attrs = nullptr;
    raw.numAttrs = 0;
    raw.hStream = nullptr;
    const int without_cluster = occupancy.max_active_clusters(plain);
    EXPECT_EQ(without_cluster, cuwrap::driver::cuOccupancyMaxActiveClusters(function, &raw));
    EXPECT_GE(without_cluster, 0);
    EXPECT_EQ(occupancy.max_active_clusters(plain, *stream_), without_cluster);
  }
}

}  // namespace
