// Port of cuda.core's tests/test_device.py: one TEST per Python test function (see
// README.md for those not ported and why).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "gpu.hpp"

#include <cuda.h>

#include <concepts>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Device;
using cuwrap::DeviceProperties;
using cuwrap::testing::DeviceTest;
namespace driver = cuwrap::driver;

class test_device : public DeviceTest {};

// cuda.core: DeviceProperties cannot be made directly, only through Device.properties.
// Its C++ form has no constructor without a device.
TEST(test_device_cpu, test_device_init_disabled) {
  EXPECT_FALSE(std::is_default_constructible_v<DeviceProperties>);
  EXPECT_FALSE((std::is_convertible_v<Device, DeviceProperties>));
}

TEST_F(test_device, test_device_set_current) {
  const Device dev(0);
  dev.set_current();
  EXPECT_NE(driver::cuCtxGetCurrent(), nullptr);
  EXPECT_EQ(driver::cuCtxGetDevice(), dev.handle());
}

// cuda.core's str(device) is cuwrap's operator<<.
TEST_F(test_device, test_device_repr) {
  const Device dev(0);
  dev.set_current();
  std::ostringstream text;
  text << dev;
  EXPECT_TRUE(text.str().starts_with("<Device 0")) << text.str();
}

TEST_F(test_device, test_device_alloc) {
  const cuwrap::Buffer buffer = device().allocate(1024);
  device().sync();
  EXPECT_NE(buffer.handle(), CUdeviceptr{0});
  EXPECT_EQ(buffer.size(), 1024U);
  EXPECT_EQ(buffer.device_id(), device().device_id());
}

TEST_F(test_device, test_device_alloc_zero_bytes) {
  const cuwrap::Buffer buffer = device().allocate(0);
  device().sync();
  EXPECT_EQ(buffer.size(), 0U);
  EXPECT_EQ(buffer.device_id(), device().device_id());
}

TEST_F(test_device, test_device_id) {
  for (const Device& dev : Device::all()) {
    dev.set_current();
    EXPECT_EQ(driver::cuCtxGetDevice(), dev.handle());
    EXPECT_EQ(driver::cuDeviceGet(dev.device_id()), dev.handle());
  }
  device().set_current();
}

TEST_F(test_device, test_device_create_stream) {
  const cuwrap::Stream stream = device().create_stream();
  EXPECT_TRUE(stream.is_open());
  EXPECT_NE(stream.handle(), nullptr);
}

TEST_F(test_device, test_device_create_event) {
  const cuwrap::Event event = device().create_event();
  EXPECT_TRUE(event.is_open());
  EXPECT_NE(event.handle(), nullptr);
}

TEST_F(test_device, test_pci_bus_id) {
  const std::string bus_id = driver::cuDeviceGetPCIBusId(device().handle());
  EXPECT_EQ(device().pci_bus_id(), bus_id.substr(0, 12));
}

// cuda.core's format: 8-4-4-4-12 lower-case hex digits, no "GPU-" prefix.
TEST_F(test_device, test_uuid) {
  const CUuuid uuid = driver::cuDeviceGetUuid(device().handle());
  std::string hex;
  for (const char byte : uuid.bytes) {
    char digits[3];
    std::snprintf(digits, sizeof digits, "%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(byte)));
    hex += digits;
  }
  const std::string expected = hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) +
                               "-" + hex.substr(16, 4) + "-" + hex.substr(20);
  EXPECT_EQ(device().uuid(), expected);
}

TEST_F(test_device, test_name) {
  EXPECT_EQ(device().name(), driver::cuDeviceGetName(device().handle()));
}

TEST_F(test_device, test_compute_capability) {
  const int major =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device().handle());
  const int minor =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device().handle());
  EXPECT_EQ(device().compute_capability(), (cuwrap::ComputeCapability{major, minor}));
}

TEST_F(test_device, test_arch) {
  const cuwrap::ComputeCapability cc = device().compute_capability();
  EXPECT_EQ(device().arch(), std::to_string(cc.major) + std::to_string(cc.minor));
}

// cuda.core's table of properties and their Python types (int or bool), checked on the
// accessors' C++ types. The types are the declarations', so no GPU is needed.
TEST(test_device_cpu, test_device_property_types) {
  std::vector<std::string> wrong;
#define CUWRAP_PROPERTY_TYPE(name, type)                                                 \
  if (!std::is_same_v<decltype(std::declval<const DeviceProperties&>().name()), type>) { \
    wrong.emplace_back(#name " is not " #type);                                          \
  }
  CUWRAP_PROPERTY_TYPE(max_threads_per_block, int)
  CUWRAP_PROPERTY_TYPE(max_block_dim_x, int)
  CUWRAP_PROPERTY_TYPE(max_block_dim_y, int)
  CUWRAP_PROPERTY_TYPE(max_block_dim_z, int)
  CUWRAP_PROPERTY_TYPE(max_grid_dim_x, int)
  CUWRAP_PROPERTY_TYPE(max_grid_dim_y, int)
  CUWRAP_PROPERTY_TYPE(max_grid_dim_z, int)
  CUWRAP_PROPERTY_TYPE(max_shared_memory_per_block, int)
  CUWRAP_PROPERTY_TYPE(total_constant_memory, int)
  CUWRAP_PROPERTY_TYPE(warp_size, int)
  CUWRAP_PROPERTY_TYPE(max_pitch, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture1d_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture1d_linear_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture1d_mipmapped_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_linear_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_linear_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_linear_pitch, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_mipmapped_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_mipmapped_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture3d_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture3d_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture3d_depth, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture3d_width_alternate, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture3d_height_alternate, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture3d_depth_alternate, int)
  CUWRAP_PROPERTY_TYPE(maximum_texturecubemap_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture1d_layered_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture1d_layered_layers, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_layered_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_layered_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_layered_layers, int)
  CUWRAP_PROPERTY_TYPE(maximum_texturecubemap_layered_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texturecubemap_layered_layers, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface1d_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface2d_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface2d_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface3d_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface3d_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface3d_depth, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface1d_layered_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface1d_layered_layers, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface2d_layered_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface2d_layered_height, int)
  CUWRAP_PROPERTY_TYPE(maximum_surface2d_layered_layers, int)
  CUWRAP_PROPERTY_TYPE(maximum_surfacecubemap_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surfacecubemap_layered_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_surfacecubemap_layered_layers, int)
  CUWRAP_PROPERTY_TYPE(max_registers_per_block, int)
  CUWRAP_PROPERTY_TYPE(clock_rate, int)
  CUWRAP_PROPERTY_TYPE(texture_alignment, int)
  CUWRAP_PROPERTY_TYPE(texture_pitch_alignment, int)
  CUWRAP_PROPERTY_TYPE(gpu_overlap, bool)
  CUWRAP_PROPERTY_TYPE(multiprocessor_count, int)
  CUWRAP_PROPERTY_TYPE(kernel_exec_timeout, bool)
  CUWRAP_PROPERTY_TYPE(integrated, bool)
  CUWRAP_PROPERTY_TYPE(can_map_host_memory, bool)
  CUWRAP_PROPERTY_TYPE(compute_mode, int)
  CUWRAP_PROPERTY_TYPE(concurrent_kernels, bool)
  CUWRAP_PROPERTY_TYPE(ecc_enabled, bool)
  CUWRAP_PROPERTY_TYPE(pci_bus_id, int)
  CUWRAP_PROPERTY_TYPE(pci_device_id, int)
  CUWRAP_PROPERTY_TYPE(pci_domain_id, int)
  CUWRAP_PROPERTY_TYPE(tcc_driver, bool)
  CUWRAP_PROPERTY_TYPE(memory_clock_rate, int)
  CUWRAP_PROPERTY_TYPE(global_memory_bus_width, int)
  CUWRAP_PROPERTY_TYPE(l2_cache_size, int)
  CUWRAP_PROPERTY_TYPE(max_threads_per_multiprocessor, int)
  CUWRAP_PROPERTY_TYPE(unified_addressing, bool)
  CUWRAP_PROPERTY_TYPE(compute_capability_major, int)
  CUWRAP_PROPERTY_TYPE(compute_capability_minor, int)
  CUWRAP_PROPERTY_TYPE(global_l1_cache_supported, bool)
  CUWRAP_PROPERTY_TYPE(local_l1_cache_supported, bool)
  CUWRAP_PROPERTY_TYPE(max_shared_memory_per_multiprocessor, int)
  CUWRAP_PROPERTY_TYPE(max_registers_per_multiprocessor, int)
  CUWRAP_PROPERTY_TYPE(managed_memory, bool)
  CUWRAP_PROPERTY_TYPE(multi_gpu_board, bool)
  CUWRAP_PROPERTY_TYPE(multi_gpu_board_group_id, int)
  CUWRAP_PROPERTY_TYPE(host_native_atomic_supported, bool)
  CUWRAP_PROPERTY_TYPE(single_to_double_precision_perf_ratio, int)
  CUWRAP_PROPERTY_TYPE(pageable_memory_access, bool)
  CUWRAP_PROPERTY_TYPE(concurrent_managed_access, bool)
  CUWRAP_PROPERTY_TYPE(compute_preemption_supported, bool)
  CUWRAP_PROPERTY_TYPE(can_use_host_pointer_for_registered_mem, bool)
  CUWRAP_PROPERTY_TYPE(cooperative_launch, bool)
  CUWRAP_PROPERTY_TYPE(max_shared_memory_per_block_optin, int)
  CUWRAP_PROPERTY_TYPE(pageable_memory_access_uses_host_page_tables, bool)
  CUWRAP_PROPERTY_TYPE(direct_managed_mem_access_from_host, bool)
  CUWRAP_PROPERTY_TYPE(virtual_memory_management_supported, bool)
  CUWRAP_PROPERTY_TYPE(handle_type_posix_file_descriptor_supported, bool)
  CUWRAP_PROPERTY_TYPE(handle_type_win32_handle_supported, bool)
  CUWRAP_PROPERTY_TYPE(handle_type_win32_kmt_handle_supported, bool)
  CUWRAP_PROPERTY_TYPE(max_blocks_per_multiprocessor, int)
  CUWRAP_PROPERTY_TYPE(generic_compression_supported, bool)
  CUWRAP_PROPERTY_TYPE(max_persisting_l2_cache_size, int)
  CUWRAP_PROPERTY_TYPE(max_access_policy_window_size, int)
  CUWRAP_PROPERTY_TYPE(gpu_direct_rdma_with_cuda_vmm_supported, bool)
  CUWRAP_PROPERTY_TYPE(reserved_shared_memory_per_block, int)
  CUWRAP_PROPERTY_TYPE(sparse_cuda_array_supported, bool)
  CUWRAP_PROPERTY_TYPE(read_only_host_register_supported, bool)
  CUWRAP_PROPERTY_TYPE(memory_pools_supported, bool)
  CUWRAP_PROPERTY_TYPE(gpu_direct_rdma_supported, bool)
  CUWRAP_PROPERTY_TYPE(gpu_direct_rdma_flush_writes_options, int)
  CUWRAP_PROPERTY_TYPE(gpu_direct_rdma_writes_ordering, int)
  CUWRAP_PROPERTY_TYPE(mempool_supported_handle_types, int)
  CUWRAP_PROPERTY_TYPE(deferred_mapping_cuda_array_supported, bool)
  CUWRAP_PROPERTY_TYPE(surface_alignment, int)
  CUWRAP_PROPERTY_TYPE(async_engine_count, int)
  CUWRAP_PROPERTY_TYPE(can_tex2d_gather, bool)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_gather_width, int)
  CUWRAP_PROPERTY_TYPE(maximum_texture2d_gather_height, int)
  CUWRAP_PROPERTY_TYPE(stream_priorities_supported, bool)
  CUWRAP_PROPERTY_TYPE(can_flush_remote_writes, bool)
  CUWRAP_PROPERTY_TYPE(host_register_supported, bool)
  CUWRAP_PROPERTY_TYPE(timeline_semaphore_interop_supported, bool)
  CUWRAP_PROPERTY_TYPE(cluster_launch, bool)
  CUWRAP_PROPERTY_TYPE(can_use_64_bit_stream_mem_ops, bool)
  CUWRAP_PROPERTY_TYPE(can_use_stream_wait_value_nor, bool)
  CUWRAP_PROPERTY_TYPE(dma_buf_supported, bool)
  CUWRAP_PROPERTY_TYPE(ipc_event_supported, bool)
  CUWRAP_PROPERTY_TYPE(mem_sync_domain_count, int)
  CUWRAP_PROPERTY_TYPE(tensor_map_access_supported, bool)
  CUWRAP_PROPERTY_TYPE(handle_type_fabric_supported, bool)
  CUWRAP_PROPERTY_TYPE(unified_function_pointers, bool)
  CUWRAP_PROPERTY_TYPE(numa_config, int)
  CUWRAP_PROPERTY_TYPE(numa_id, int)
  CUWRAP_PROPERTY_TYPE(multicast_supported, bool)
  CUWRAP_PROPERTY_TYPE(mps_enabled, bool)
  CUWRAP_PROPERTY_TYPE(host_numa_id, int)
#if CUDA_VERSION >= 12060
  CUWRAP_PROPERTY_TYPE(d3d12_cig_supported, bool)
#endif
#if CUDA_VERSION >= 13000
  CUWRAP_PROPERTY_TYPE(mem_decompress_algorithm_mask, int)
  CUWRAP_PROPERTY_TYPE(mem_decompress_maximum_length, int)
  CUWRAP_PROPERTY_TYPE(vulkan_cig_supported, bool)
  CUWRAP_PROPERTY_TYPE(gpu_pci_device_id, int)
  CUWRAP_PROPERTY_TYPE(gpu_pci_subsystem_id, int)
  CUWRAP_PROPERTY_TYPE(host_numa_virtual_memory_management_supported, bool)
  CUWRAP_PROPERTY_TYPE(host_numa_memory_pools_supported, bool)
  CUWRAP_PROPERTY_TYPE(host_numa_multinode_ipc_supported, bool)
  CUWRAP_PROPERTY_TYPE(host_memory_pools_supported, bool)
  CUWRAP_PROPERTY_TYPE(host_virtual_memory_management_supported, bool)
  CUWRAP_PROPERTY_TYPE(host_alloc_dma_buf_supported, bool)
  CUWRAP_PROPERTY_TYPE(only_partial_host_native_atomic_supported, bool)
#endif
#undef CUWRAP_PROPERTY_TYPE
  EXPECT_TRUE(wrong.empty()) << ::testing::PrintToString(wrong);
}

TEST_F(test_device, test_device_equality_same_id) {
  const Device dev1(0);
  const Device dev2(0);
  EXPECT_EQ(dev1, dev2);
}

TEST_F(test_device, test_device_equality_reflexive) {
  const Device dev(0);
  EXPECT_EQ(dev, dev);
}

TEST_F(test_device, test_device_inequality_different_id) {
  CUWRAP_REQUIRE_GPUS(2);
  const Device dev0(0);
  const Device dev1(1);
  EXPECT_NE(dev0, dev1);
  EXPECT_FALSE(dev0 == dev1);
}

// cuda.core: comparing a Device with another type is False; in C++ it does not compile.
TEST(test_device_cpu, test_device_type_safety) {
  EXPECT_FALSE((std::equality_comparable_with<Device, int>));
  EXPECT_FALSE((std::equality_comparable_with<Device, std::string>));
  EXPECT_TRUE(std::equality_comparable<Device>);
}

}  // namespace
