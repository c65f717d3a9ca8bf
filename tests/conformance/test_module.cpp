// Port of cuda.core's tests/test_module.py (ObjectCode, Kernel, KernelAttributes,
// KernelOccupancy): one TEST per Python test function (see README.md for those not
// ported and why).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "nvrtc_fixture.hpp"
#include "temp_dir.hpp"
#include "toolkit_libraries.hpp"

#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::CodeType;
using cuwrap::Kernel;
using cuwrap::KernelAttributes;
using cuwrap::KernelOccupancy;
using cuwrap::LaunchConfig;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;

constexpr const char* kSaxpy = R"(
template<typename T>
__global__ void saxpy(const T a,
                      const T* x,
                      const T* y,
                      T* out,
                      size_t N) {
  const unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
  for (size_t i=tid; i<N; i+=gridDim.x*blockDim.x) {
    out[tid] = a * x[tid] + y[tid];
  }
}
)";

TEST(test_module_cpu, test_kernel_attributes_init_disabled) {
  EXPECT_FALSE(std::is_default_constructible_v<KernelAttributes>);
}

TEST(test_module_cpu, test_kernel_occupancy_init_disabled) {
  EXPECT_FALSE(std::is_default_constructible_v<KernelOccupancy>);
}

TEST(test_module_cpu, test_kernel_init_disabled) {
  EXPECT_FALSE(std::is_default_constructible_v<Kernel>);
}

TEST(test_module_cpu, test_object_code_init_disabled) {
  EXPECT_FALSE(std::is_default_constructible_v<ObjectCode>);
}

using cuwrap::testing::TempDir;

class test_module : public cuwrap::testing::DeviceNvrtcTest {
 protected:
  static ObjectCode saxpy(TargetType target, bool lto = false) {
    ProgramOptions options;
    options.link_time_optimization = lto;
    return Program(kSaxpy, CodeType::Cxx, options)
        .compile(target, {"saxpy<float>", "saxpy<double>"});
  }
  static std::span<const char> bytes(const ObjectCode& code) { return code.code(); }
};

TEST_F(test_module, test_get_kernel) {
  ProgramOptions options;
  options.relocatable_device_code = true;
  const ObjectCode code = Program(R"(extern "C" __global__ void ABC() { })", CodeType::Cxx, options)
                              .compile(TargetType::Ptx);
  const Kernel kernel = code.get_kernel("ABC");
  EXPECT_NE(code.handle(), nullptr);
  EXPECT_NE(kernel.handle(), nullptr);
}

// cuda.core's types of the attributes: the accessors' C++ types (no GPU needed).
TEST(test_module_cpu, test_read_only_kernel_attributes) {
  std::vector<std::string> wrong;
#define CUWRAP_ATTRIBUTE_TYPE(name, type)                                                \
  if (!std::is_same_v<decltype(std::declval<const KernelAttributes&>().name()), type>) { \
    wrong.emplace_back(#name " is not " #type);                                          \
  }
  CUWRAP_ATTRIBUTE_TYPE(max_threads_per_block, int)
  CUWRAP_ATTRIBUTE_TYPE(shared_size_bytes, int)
  CUWRAP_ATTRIBUTE_TYPE(const_size_bytes, int)
  CUWRAP_ATTRIBUTE_TYPE(local_size_bytes, int)
  CUWRAP_ATTRIBUTE_TYPE(num_regs, int)
  CUWRAP_ATTRIBUTE_TYPE(ptx_version, int)
  CUWRAP_ATTRIBUTE_TYPE(binary_version, int)
  CUWRAP_ATTRIBUTE_TYPE(cache_mode_ca, bool)
  CUWRAP_ATTRIBUTE_TYPE(cluster_size_must_be_set, bool)
  CUWRAP_ATTRIBUTE_TYPE(max_dynamic_shared_size_bytes, int)
  CUWRAP_ATTRIBUTE_TYPE(preferred_shared_memory_carveout, int)
  CUWRAP_ATTRIBUTE_TYPE(required_cluster_width, int)
  CUWRAP_ATTRIBUTE_TYPE(required_cluster_height, int)
  CUWRAP_ATTRIBUTE_TYPE(required_cluster_depth, int)
  CUWRAP_ATTRIBUTE_TYPE(non_portable_cluster_size_allowed, bool)
  CUWRAP_ATTRIBUTE_TYPE(cluster_scheduling_policy_preference, int)
#undef CUWRAP_ATTRIBUTE_TYPE
  EXPECT_TRUE(wrong.empty()) << ::testing::PrintToString(wrong);
}

// The values, for the current device and for each device by object.
TEST_F(test_module, test_read_only_kernel_attributes_values) {
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  const KernelAttributes attributes = kernel.attributes();
  EXPECT_GT(attributes.max_threads_per_block(), 0);
  EXPECT_GT(attributes.num_regs(), 0);
  for (const cuwrap::Device& each : cuwrap::Device::all()) {
    EXPECT_GT(attributes.max_threads_per_block(each), 0);
    EXPECT_GT(attributes.binary_version(each), 0);
  }
}

TEST_F(test_module, test_object_code_load_ptx) {
  const ObjectCode compiled = saxpy(TargetType::Ptx);
  const std::string ptx(compiled.code().begin(), compiled.code().end());
  const ObjectCode loaded = ObjectCode::from_ptx(ptx, "", compiled.name_expressions());
  EXPECT_EQ(std::string(loaded.code().begin(), loaded.code().end()), ptx);
  EXPECT_EQ(loaded.get_kernel("saxpy<double>").symbol(), compiled.lowered_name("saxpy<double>"));
}

TEST_F(test_module, test_object_code_load_ptx_from_file) {
  const ObjectCode compiled = saxpy(TargetType::Ptx);
  const TempDir dir("load_ptx_from_file");
  const ObjectCode loaded =
      ObjectCode::from_file(dir.write("test.ptx", bytes(compiled)), compiled.name_expressions());
  EXPECT_EQ(loaded.code_type(), TargetType::Ptx);
  EXPECT_NO_THROW(static_cast<void>(loaded.get_kernel("saxpy<double>")));
}

TEST_F(test_module, test_object_code_load_cubin) {
  const ObjectCode compiled = saxpy(TargetType::Cubin);
  const ObjectCode loaded =
      ObjectCode::from_cubin(std::as_bytes(bytes(compiled)), "", compiled.name_expressions());
  EXPECT_TRUE(std::equal(loaded.code().begin(), loaded.code().end(), compiled.code().begin(),
                         compiled.code().end()));
  EXPECT_NO_THROW(static_cast<void>(loaded.get_kernel("saxpy<double>")));
}

TEST_F(test_module, test_object_code_load_cubin_from_file) {
  const ObjectCode compiled = saxpy(TargetType::Cubin);
  const TempDir dir("load_cubin_from_file");
  const ObjectCode loaded =
      ObjectCode::from_file(dir.write("test.cubin", bytes(compiled)), compiled.name_expressions());
  EXPECT_EQ(loaded.code_type(), TargetType::Cubin);
  EXPECT_NO_THROW(static_cast<void>(loaded.get_kernel("saxpy<double>")));
}

TEST_F(test_module, test_object_code_handle) {
  const ObjectCode compiled = saxpy(TargetType::Cubin);
  EXPECT_NE(compiled.handle(), nullptr);
}

// LTO-IR is linker input: no kernel can be taken from it.
TEST_F(test_module, test_object_code_load_ltoir) {
  const ObjectCode compiled = saxpy(TargetType::Ltoir, true);
  const ObjectCode loaded =
      ObjectCode::from_ltoir(std::as_bytes(bytes(compiled)), "", compiled.name_expressions());
  EXPECT_EQ(loaded.code_type(), TargetType::Ltoir);
  EXPECT_TRUE(std::equal(loaded.code().begin(), loaded.code().end(), compiled.code().begin(),
                         compiled.code().end()));
  EXPECT_ANY_THROW(static_cast<void>(loaded.get_kernel("saxpy<float>")));
}

TEST_F(test_module, test_object_code_load_ltoir_from_file) {
  const ObjectCode compiled = saxpy(TargetType::Ltoir, true);
  const TempDir dir("load_ltoir_from_file");
  const ObjectCode loaded =
      ObjectCode::from_file(dir.write("test.ltoir", bytes(compiled)), compiled.name_expressions());
  EXPECT_EQ(loaded.code_type(), TargetType::Ltoir);
  EXPECT_ANY_THROW(static_cast<void>(loaded.get_kernel("saxpy<float>")));
}

TEST_F(test_module, test_saxpy_arguments) {
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  ASSERT_EQ(kernel.num_arguments(), 5U);
  struct Expected {
    float a;
    const float* x;
    const float* y;
    float* out;
    std::size_t n;
  };
  const std::span<const cuwrap::ParamInfo> info = kernel.arguments_info();
  ASSERT_EQ(info.size(), 5U);
  EXPECT_EQ(info[0].offset, offsetof(Expected, a));
  EXPECT_EQ(info[1].offset, offsetof(Expected, x));
  EXPECT_EQ(info[2].offset, offsetof(Expected, y));
  EXPECT_EQ(info[3].offset, offsetof(Expected, out));
  EXPECT_EQ(info[4].offset, offsetof(Expected, n));
  EXPECT_EQ(info[0].size, sizeof(float));
  EXPECT_EQ(info[1].size, sizeof(const float*));
  EXPECT_EQ(info[4].size, sizeof(std::size_t));
}

TEST_F(test_module, test_num_arguments) {
  for (const auto& [type_name, type_size] :
       {std::pair<std::string, std::size_t>{"int", sizeof(int)}, {"short", sizeof(short)}}) {
    for (const int nargs : {0, 1, 2, 3, 16}) {
      SCOPED_TRACE(type_name + " x " + std::to_string(nargs));
      std::string parameters;
      for (int i = 0; i < nargs; ++i) {
        parameters += (i == 0 ? "" : ", ") + type_name + " p_" + std::to_string(i);
      }
      const std::string name = "foo" + std::to_string(nargs);
      const ObjectCode code =
          Program("__global__ void " + name + "(" + parameters + ") { }", CodeType::Cxx)
              .compile(TargetType::Cubin, {name});
      const Kernel kernel = code.get_kernel(name);
      EXPECT_EQ(kernel.num_arguments(), static_cast<std::size_t>(nargs));
      const std::span<const cuwrap::ParamInfo> info = kernel.arguments_info();
      ASSERT_EQ(info.size(), static_cast<std::size_t>(nargs));
      for (std::size_t i = 0; i < info.size(); ++i) {
        EXPECT_EQ(info[i].offset, i * type_size);
        EXPECT_EQ(info[i].size, type_size);
      }
    }
  }
}

TEST_F(test_module, test_occupancy_max_active_block_per_multiprocessor) {
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  const cuwrap::DeviceProperties properties = device().properties();
  for (const int block_size : {32, 64, 96, 120, 128, 256}) {
    for (const int smem : {0, 32, 4096}) {
      SCOPED_TRACE(std::to_string(block_size) + " threads, " + std::to_string(smem) + " bytes");
      const int blocks = kernel.occupancy().max_active_blocks_per_multiprocessor(
          block_size, static_cast<std::size_t>(smem));
      EXPECT_GT(blocks, 0);
      EXPECT_LE(blocks * block_size, properties.max_threads_per_multiprocessor());
      EXPECT_LE(blocks * smem, properties.max_shared_memory_per_multiprocessor());
      EXPECT_LE(kernel.attributes().num_regs() * blocks,
                properties.max_registers_per_multiprocessor());
    }
  }
}

// cuda.core: a non-number for the shared memory is a TypeError; in C++ it does not compile.
template <class T>
concept TakesSharedMemory = requires(const KernelOccupancy& occupancy, T smem) {
  occupancy.max_potential_block_size(smem, 0);
};
TEST_F(test_module, test_occupancy_max_potential_block_size_constant) {
  EXPECT_FALSE(TakesSharedMemory<std::string>);
  EXPECT_FALSE(TakesSharedMemory<const char*>);
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  const int max_threads = device().properties().max_threads_per_block();
  for (const int limit : {32, 64, 96, 120, 128, 256, 0}) {
    for (const std::size_t smem : {std::size_t{0}, std::size_t{32}, std::size_t{4096}}) {
      SCOPED_TRACE(std::to_string(limit) + " limit, " + std::to_string(smem) + " bytes");
      const cuwrap::MaxPotentialBlockSizeOccupancyResult result =
          kernel.occupancy().max_potential_block_size(smem, limit);
      EXPECT_GT(result.min_grid_size, 0);
      EXPECT_GT(result.max_block_size, 0);
      EXPECT_LE(result.max_block_size, limit > 0 ? limit : max_threads);
    }
  }
}

std::size_t shared_memory_needed(int block_size) {
  return 1024 * static_cast<std::size_t>(block_size / 32);
}

// cuda.core needs Numba for the callback; in C++ it is a plain function.
TEST_F(test_module, test_occupancy_max_potential_block_size_b2dsize) {
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  const int max_threads = device().properties().max_threads_per_block();
  for (const int limit : {32, 64, 96, 120, 128, 277, 0}) {
    SCOPED_TRACE(limit);
    const cuwrap::MaxPotentialBlockSizeOccupancyResult result =
        kernel.occupancy().max_potential_block_size(&shared_memory_needed, limit);
    EXPECT_GT(result.min_grid_size, 0);
    EXPECT_GT(result.max_block_size, 0);
    EXPECT_LE(result.max_block_size, limit > 0 ? limit : max_threads);
  }
}

TEST_F(test_module, test_occupancy_available_dynamic_shared_memory_per_block) {
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  const cuwrap::DeviceProperties properties = device().properties();
  for (const auto& [blocks, block_size] :
       {std::pair{4, 32}, std::pair{2, 64}, std::pair{2, 96}, std::pair{3, 120}, std::pair{2, 128},
        std::pair{1, 256}}) {
    SCOPED_TRACE(std::to_string(blocks) + " x " + std::to_string(block_size));
    const std::size_t smem =
        kernel.occupancy().available_dynamic_shared_memory_per_block(blocks, block_size);
    EXPECT_LE(smem, static_cast<std::size_t>(properties.max_shared_memory_per_block()));
    EXPECT_LE(static_cast<std::size_t>(blocks) * smem,
              static_cast<std::size_t>(properties.max_shared_memory_per_multiprocessor()));
  }
}

TEST_F(test_module, test_occupancy_max_active_clusters) {
  if (device().compute_capability() < cuwrap::ComputeCapability{9, 0}) {
    GTEST_SKIP() << "clusters need compute capability 9.0";
  }
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  // cuda.core: LaunchConfig(grid=128, cluster=C) counts clusters; cuwrap counts blocks.
  const LaunchConfig without{.grid = 128, .block = 64};
  EXPECT_GE(kernel.occupancy().max_active_clusters(without), 0);
  const LaunchConfig with{.grid = 128 * 2, .block = 64, .cluster = cuwrap::Dim3{2}};
  EXPECT_GE(kernel.occupancy().max_active_clusters(with), 0);
}

TEST_F(test_module, test_occupancy_max_potential_cluster_size) {
  if (device().compute_capability() < cuwrap::ComputeCapability{9, 0}) {
    GTEST_SKIP() << "clusters need compute capability 9.0";
  }
  const Kernel kernel = saxpy(TargetType::Cubin).get_kernel("saxpy<float>");
  const LaunchConfig config{.grid = 128, .block = 64};
  EXPECT_GE(kernel.occupancy().max_potential_cluster_size(config), 0);
}

}  // namespace
