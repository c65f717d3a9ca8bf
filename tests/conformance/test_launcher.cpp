// Port of cuda.core's tests/test_launcher.py: one TEST per Python test function (see
// README.md for those not ported and why).
//
// cuda.core's LaunchConfig checks its values when it is made; cuwrap's is a plain
// aggregate checked by launch (detail::check_config, which these tests call directly
// where cuda.core's do not launch). cuda.core counts `grid` in clusters when a cluster
// is given, cuwrap in thread blocks (docs/high-level.md, "Grids with clusters count
// blocks"): those tests use the documented translation.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Dim3;
using cuwrap::LaunchConfig;
using cuwrap::testing::DeviceTest;

class test_launcher : public DeviceTest {
 protected:
  // Compile `code` for the device (C++17) and return the object code.
  cuwrap::ObjectCode compile(const std::string& code, std::initializer_list<std::string> names = {},
                             std::vector<std::string> include_path = {}) const {
    cuwrap::ProgramOptions options;
    options.std = "c++17";
    options.arch = "sm_" + device().arch();
    options.include_path = std::move(include_path);
    cuwrap::Program program(code, cuwrap::CodeType::Cxx, options);
    return program.compile(cuwrap::TargetType::Cubin, names);
  }
};

// The toolkit's include directories as cuda.core's tests pass them (helpers'
// CCCL_INCLUDE_PATHS): <include>/cccl first where it exists (CUDA 13 moved libcu++, which
// cooperative_groups.h includes, there), then <include>. cuda.core's Program adds no
// include directory itself, so neither does cuwrap's.
std::vector<std::string> cccl_include_paths() {
  const std::string include = CUWRAP_CUDA_INCLUDE_DIR;
  std::vector<std::string> paths;
  if (std::filesystem::is_directory(include + "/cccl")) {
    paths.push_back(include + "/cccl");
  }
  paths.push_back(include);
  return paths;
}

// The driver's launch configuration for `config` (cuda.core's _to_native_launch_config).
struct Native {
  CUlaunchConfig config{};
  CUlaunchAttribute attributes[cuwrap::detail::kMaxLaunchAttributes]{};
  explicit Native(const LaunchConfig& launch_config) {
    cuwrap::detail::to_cu_launch_config(launch_config, nullptr, config, attributes);
  }
};

TEST(test_launcher_cpu, test_launch_config_init) {
  LaunchConfig config{.grid = {1, 1, 1}, .block = {1, 1, 1}, .shmem_size = 0};
  EXPECT_EQ(config.grid, (Dim3{1, 1, 1}));
  EXPECT_EQ(config.block, (Dim3{1, 1, 1}));
  EXPECT_EQ(config.shmem_size, 0U);

  config = LaunchConfig{.grid = {2, 2, 2}, .block = {2, 2, 2}, .shmem_size = 1024};
  EXPECT_EQ(config.grid, (Dim3{2, 2, 2}));
  EXPECT_EQ(config.block, (Dim3{2, 2, 2}));
  EXPECT_EQ(config.shmem_size, 1024U);
}

TEST(test_launcher_cpu, test_launch_config_invalid_values) {
  using cuwrap::detail::check_config;
  EXPECT_THROW(check_config(LaunchConfig{.grid = 0, .block = 1}), std::invalid_argument);
  EXPECT_THROW(check_config(LaunchConfig{.grid = {0, 1}, .block = 1}), std::invalid_argument);
  EXPECT_THROW(check_config(LaunchConfig{.grid = {1, 1, 1}, .block = 0}), std::invalid_argument);
  EXPECT_THROW(check_config(LaunchConfig{.grid = {1, 1, 1}, .block = {0, 1}}),
               std::invalid_argument);
  EXPECT_NO_THROW(check_config(LaunchConfig{.grid = 1, .block = 1}));
}

TEST(test_launcher_cpu, test_launch_config_shmem_size) {
  const LaunchConfig with{.grid = {1, 1, 1}, .block = {1, 1, 1}, .shmem_size = 2048};
  EXPECT_EQ(with.shmem_size, 2048U);
  const LaunchConfig without{.grid = {1, 1, 1}, .block = {1, 1, 1}};
  EXPECT_EQ(without.shmem_size, 0U);
}

// cuda.core's LaunchConfig(grid=G, cluster=C) is cuwrap's {.grid = G*C, .cluster = C}.
TEST(test_launcher_cpu, test_launch_config_cluster_grid_conversion) {
  LaunchConfig config{.grid = 4 * 2, .block = 32, .cluster = Dim3{2}};
  EXPECT_EQ(config.grid, (Dim3{8, 1, 1}));
  EXPECT_EQ(config.cluster, (Dim3{2, 1, 1}));
  EXPECT_EQ(config.block, (Dim3{32, 1, 1}));

  config = LaunchConfig{.grid = {2 * 2, 3 * 2}, .block = 32, .cluster = Dim3{2, 2}};
  EXPECT_EQ(config.grid, (Dim3{4, 6, 1}));
  EXPECT_EQ(config.cluster, (Dim3{2, 2, 1}));

  config = LaunchConfig{.grid = {6, 6, 6}, .block = {8, 8, 8}, .cluster = Dim3{3, 3, 3}};
  EXPECT_EQ(config.cluster, (Dim3{3, 3, 3}));

  config = LaunchConfig{.grid = 1, .block = 32, .cluster = Dim3{1}};
  EXPECT_EQ(config.grid, (Dim3{1, 1, 1}));

  config = LaunchConfig{.grid = 4, .block = 32};
  EXPECT_EQ(config.grid, (Dim3{4, 1, 1}));
  EXPECT_FALSE(config.cluster.has_value());
}

TEST(test_launcher_cpu, test_launch_config_native_conversion) {
  const Native one(LaunchConfig{.grid = 4 * 2, .block = 32, .cluster = Dim3{2}});
  EXPECT_EQ(one.config.gridDimX, 8U);
  EXPECT_EQ(one.config.gridDimY, 1U);
  EXPECT_EQ(one.config.gridDimZ, 1U);

  const Native two(LaunchConfig{.grid = {2 * 2, 3 * 2}, .block = 32, .cluster = Dim3{2, 2}});
  EXPECT_EQ(two.config.gridDimX, 4U);
  EXPECT_EQ(two.config.gridDimY, 6U);
  EXPECT_EQ(two.config.gridDimZ, 1U);

  const Native none(LaunchConfig{.grid = 4, .block = 32});
  EXPECT_EQ(none.config.gridDimX, 4U);
  EXPECT_EQ(none.config.gridDimY, 1U);
  EXPECT_EQ(none.config.gridDimZ, 1U);
}

TEST(test_launcher_cpu, test_to_native_launch_config_no_cluster) {
  const Native native(LaunchConfig{.grid = {4, 5, 6}, .block = {7, 8, 9}, .shmem_size = 128});
  EXPECT_EQ(native.config.gridDimX, 4U);
  EXPECT_EQ(native.config.gridDimY, 5U);
  EXPECT_EQ(native.config.gridDimZ, 6U);
  EXPECT_EQ(native.config.blockDimX, 7U);
  EXPECT_EQ(native.config.blockDimY, 8U);
  EXPECT_EQ(native.config.blockDimZ, 9U);
  EXPECT_EQ(native.config.sharedMemBytes, 128U);
  EXPECT_EQ(native.config.numAttrs, 0U);
}

TEST(test_launcher_cpu, test_launch_config_cooperative_defers_device_check) {
  const LaunchConfig config{.grid = 1, .block = 1, .cooperative_launch = true};
  EXPECT_TRUE(config.cooperative_launch);
  EXPECT_NO_THROW(cuwrap::detail::check_config(config));
}

TEST(test_launcher_cpu, test_to_native_launch_config_cooperative) {
  const Native native(LaunchConfig{.grid = 2, .block = 4, .cooperative_launch = true});
  EXPECT_EQ(native.config.gridDimX, 2U);
  EXPECT_EQ(native.config.blockDimX, 4U);
  ASSERT_EQ(native.config.numAttrs, 1U);
  EXPECT_EQ(native.attributes[0].id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(native.attributes[0].value.cooperative, 1);
}

TEST(test_launcher_cpu, test_launch_config_cluster_defers_device_check) {
  const LaunchConfig config{.grid = {4, 6}, .block = 32, .cluster = Dim3{2, 2}};
  EXPECT_EQ(config.cluster, (Dim3{2, 2, 1}));
  EXPECT_EQ(config.grid, (Dim3{4, 6, 1}));
  EXPECT_NO_THROW(cuwrap::detail::check_config(config));
}

TEST(test_launcher_cpu, test_to_native_launch_config_cluster_branch) {
  const Native native(
      LaunchConfig{.grid = {2 * 2, 3 * 2, 4 * 2}, .block = {5, 6, 7}, .cluster = Dim3{2, 2, 2}});
  EXPECT_EQ(native.config.gridDimX, 4U);
  EXPECT_EQ(native.config.gridDimY, 6U);
  EXPECT_EQ(native.config.gridDimZ, 8U);
  EXPECT_EQ(native.config.blockDimX, 5U);
  EXPECT_EQ(native.config.blockDimY, 6U);
  EXPECT_EQ(native.config.blockDimZ, 7U);
  ASSERT_EQ(native.config.numAttrs, 1U);
  const CUlaunchAttribute& attribute = native.attributes[0];
  EXPECT_EQ(attribute.id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  EXPECT_EQ(attribute.value.clusterDim.x, 2U);
  EXPECT_EQ(attribute.value.clusterDim.y, 2U);
  EXPECT_EQ(attribute.value.clusterDim.z, 2U);
}

// cuda.core's TypeErrors for None are calls that do not compile in C++.
template <class S, class C, class K>
concept Launchable = requires(S stream, C config, K kernel) {
  cuwrap::launch(stream, config, kernel);
};
TEST_F(test_launcher, test_launch_invalid_values) {
  EXPECT_FALSE((Launchable<std::nullptr_t, const LaunchConfig&, const cuwrap::Kernel&>));
  EXPECT_FALSE((Launchable<cuwrap::StreamRef, std::nullptr_t, const cuwrap::Kernel&>));
  EXPECT_TRUE((Launchable<cuwrap::StreamRef, const LaunchConfig&, const cuwrap::Kernel&>));

  const cuwrap::ObjectCode code = compile(R"(extern "C" __global__ void my_kernel() {})");
  const cuwrap::Stream stream = device().create_stream();
  const cuwrap::Kernel kernel = code.get_kernel("my_kernel");
  const LaunchConfig config{.grid = {1, 1, 1}, .block = {1, 1, 1}, .shmem_size = 0};
  EXPECT_NO_THROW(cuwrap::launch(stream, config, kernel));
  stream.sync();
}

constexpr const char* kWriteScalar = R"(
template <typename T>
__global__ void write_scalar(T* arr, T val) {
  arr[0] = val;
}
)";

template <class T>
void expect_scalar_arrives(const cuwrap::ObjectCode& code, const cuwrap::Device& device,
                           const std::string& cpp_type, T value) {
  SCOPED_TRACE(cpp_type);
  cuwrap::LegacyPinnedMemoryResource resource;
  cuwrap::Buffer buffer = resource.allocate(sizeof(T));
  buffer.host_span<T>()[0] = T{};
  const cuwrap::Kernel kernel = code.get_kernel("write_scalar<" + cpp_type + ">");
  const cuwrap::StreamRef stream = device.default_stream();
  cuwrap::launch(stream, LaunchConfig{.grid = 1, .block = 1}, kernel,
                 reinterpret_cast<T*>(buffer.handle()), value);
  stream.sync();
  EXPECT_EQ(buffer.host_span<T>()[0], value);
}

TEST_F(test_launcher, test_launch_scalar_argument) {
  const cuwrap::ObjectCode code = compile(
      kWriteScalar,
      {"write_scalar<bool>", "write_scalar<double>", "write_scalar<signed char>",
       "write_scalar<signed short>", "write_scalar<signed int>", "write_scalar<signed long long>",
       "write_scalar<unsigned char>", "write_scalar<unsigned short>", "write_scalar<unsigned int>",
       "write_scalar<unsigned long long>", "write_scalar<float>"});
  ASSERT_EQ(code.name_expressions().size(), 11U);
  expect_scalar_arrives<bool>(code, device(), "bool", true);
  expect_scalar_arrives<double>(code, device(), "double", 2.718);
  expect_scalar_arrives<signed char>(code, device(), "signed char", -42);
  expect_scalar_arrives<short>(code, device(), "signed short", -1234);
  expect_scalar_arrives<int>(code, device(), "signed int", -123456);
  expect_scalar_arrives<long long>(code, device(), "signed long long", -123456789);
  expect_scalar_arrives<unsigned char>(code, device(), "unsigned char", 42);
  expect_scalar_arrives<unsigned short>(code, device(), "unsigned short", 1234);
  expect_scalar_arrives<unsigned>(code, device(), "unsigned int", 123456);
  expect_scalar_arrives<unsigned long long>(code, device(), "unsigned long long", 123456789);
  expect_scalar_arrives<float>(code, device(), "float", 3.14F);
}

TEST_F(test_launcher, test_cooperative_launch) {
  const cuwrap::Stream stream = device().create_stream(cuwrap::StreamOptions{.nonblocking = true});
  const cuwrap::ObjectCode code = compile(R"(
#include <cooperative_groups.h>
extern "C" __global__ void test_grid_sync() {
  namespace cg = cooperative_groups;
  auto grid = cg::this_grid();
  grid.sync();
})",
                                          {}, cccl_include_paths());
  const cuwrap::Kernel kernel = code.get_kernel("test_grid_sync");

  // A grid far larger than can be resident at once cannot be cooperative.
  constexpr unsigned kBlock = 128;
  const auto too_many = static_cast<unsigned>(device().properties().max_grid_dim_x()) / kBlock + 1;
  EXPECT_THROW(
      cuwrap::launch(stream,
                     LaunchConfig{.grid = too_many, .block = kBlock, .cooperative_launch = true},
                     kernel),
      std::invalid_argument);

  cuwrap::launch(stream, LaunchConfig{.grid = 1, .block = 1, .cooperative_launch = true}, kernel);
  EXPECT_NO_THROW(stream.sync());
}

// cuda.core fills the buffer with CuPy/NumPy; here the host copies in and out.
TEST_F(test_launcher, test_launch_with_buffers_allocated_by_memory_resource) {
  const cuwrap::Stream stream = device().create_stream();
  const cuwrap::ObjectCode code = compile(R"(
extern "C" __global__ void memory_ops(float* data, size_t N) {
  const unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
  if (tid < N) {
    data[tid] = data[tid] * 3.0f;
  }
})");
  const cuwrap::Kernel kernel = code.get_kernel("memory_ops");
  constexpr std::size_t kSize = 1024;
  std::vector<float> original(kSize);
  for (std::size_t i = 0; i < kSize; ++i) {
    original[i] = static_cast<float>(i % 97) * 0.25F;
  }

  cuwrap::LegacyPinnedMemoryResource pinned;
  for (cuwrap::MemoryResource* resource :
       {static_cast<cuwrap::MemoryResource*>(&device().memory_resource()),
        static_cast<cuwrap::MemoryResource*>(&pinned)}) {
    SCOPED_TRACE(resource->is_host_accessible() ? "pinned" : "device");
    cuwrap::Buffer buffer = resource->allocate(kSize * sizeof(float), stream);
    buffer.copy_from(std::as_bytes(std::span<const float>(original)), stream);
    stream.sync();
    constexpr unsigned kBlock = 256;
    cuwrap::launch(stream, LaunchConfig{.grid = (kSize + kBlock - 1) / kBlock, .block = kBlock},
                   kernel, buffer, static_cast<std::uint64_t>(kSize));
    std::vector<float> result(kSize);
    buffer.copy_to(std::as_writable_bytes(std::span<float>(result)), stream);
    stream.sync();
    for (std::size_t i = 0; i < kSize; ++i) {
      ASSERT_FLOAT_EQ(result[i], original[i] * 3.0F) << "at " << i;
    }
    buffer.close(stream);
    EXPECT_FALSE(buffer.is_open());
  }
}

}  // namespace
