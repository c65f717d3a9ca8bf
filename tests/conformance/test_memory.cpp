// Port of cuda.core's tests/test_memory.py: one TEST per Python test function (see
// README.md for those not ported and why). cuda.core's Dummy*MemoryResource classes
// become MemoryResource subclasses here, on the same driver calls.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/dlpack.hpp>

#include "device_fixture.hpp"
#include "gpu.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::BufferRef;
using cuwrap::Device;
using cuwrap::MemoryResource;
using cuwrap::StreamRef;
namespace driver = cuwrap::driver;

constexpr std::size_t kPoolSize = 2097152;  // 2 MiB

class DummyDeviceMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return false; }
  int device_id() const override { return 0; }

  Buffer allocate(std::size_t size, StreamRef /*stream*/) override {
    return Buffer::adopt(driver::cuMemAlloc(size), size, this);
  }
  void deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef /*stream*/) override {
    driver::cuMemFree(ptr);
  }
};

class DummyHostMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;
  bool is_device_accessible() const override { return false; }
  bool is_host_accessible() const override { return true; }

  Buffer allocate(std::size_t size, StreamRef /*stream*/) override {
    auto* bytes = new std::byte[size == 0 ? 1 : size];
    return Buffer::adopt(reinterpret_cast<CUdeviceptr>(bytes), size, this);
  }
  void deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef /*stream*/) override {
    delete[] reinterpret_cast<std::byte*>(ptr);
  }
};

class DummyUnifiedMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return true; }
  int device_id() const override { return 0; }

  Buffer allocate(std::size_t size, StreamRef /*stream*/) override {
    return Buffer::adopt(driver::cuMemAllocManaged(size, CU_MEM_ATTACH_GLOBAL), size, this);
  }
  void deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef /*stream*/) override {
    driver::cuMemFree(ptr);
  }
};

class DummyPinnedMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return true; }

  Buffer allocate(std::size_t size, StreamRef /*stream*/) override {
    return Buffer::adopt(reinterpret_cast<CUdeviceptr>(driver::cuMemAllocHost(size)), size, this);
  }
  void deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef /*stream*/) override {
    driver::cuMemFreeHost(reinterpret_cast<void*>(ptr));
  }
};

// Host memory that says it is not host-accessible either.
class NullMemoryResource : public DummyHostMemoryResource {
 public:
  bool is_host_accessible() const override { return false; }
};

class test_memory : public cuwrap::testing::DeviceTest {};

// A device that supports memory pools, else the test skips.
class test_memory_mempool : public test_memory {
 protected:
  void SetUp() override {
    test_memory::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (!device().properties().memory_pools_supported()) {
      GTEST_SKIP() << "the device does not support memory pools";
    }
  }
};

void buffer_initialization(MemoryResource& mr) {
  Buffer buffer = mr.allocate(1024);
  EXPECT_NE(buffer.handle(), CUdeviceptr{0});
  EXPECT_EQ(buffer.size(), 1024U);
  EXPECT_EQ(buffer.memory_resource(), &mr);
  EXPECT_EQ(buffer.is_device_accessible(), mr.is_device_accessible());
  EXPECT_EQ(buffer.is_host_accessible(), mr.is_host_accessible());
  EXPECT_FALSE(buffer.is_mapped());
  buffer.close();
}

TEST_F(test_memory, test_buffer_initialization) {
  DummyDeviceMemoryResource device_mr;
  DummyHostMemoryResource host_mr;
  DummyUnifiedMemoryResource unified_mr;
  DummyPinnedMemoryResource pinned_mr;
  for (MemoryResource* mr :
       std::vector<MemoryResource*>{&device_mr, &host_mr, &unified_mr, &pinned_mr}) {
    EXPECT_NO_FATAL_FAILURE(buffer_initialization(*mr));
  }
}

// Fill the source with 0, 1, 2, ... where the host can write it, copy with `copy`,
// and compare the first bytes.
template <class Copy>
void buffer_copy(MemoryResource& mr, const Device& device, bool check, Copy copy) {
  Buffer src = mr.allocate(1024);
  Buffer dst = mr.allocate(1024);
  const cuwrap::Stream stream = device.create_stream();
  if (check) {
    auto* bytes = reinterpret_cast<unsigned char*>(src.handle());
    for (std::size_t i = 0; i < 1024; ++i) {
      bytes[i] = static_cast<unsigned char>(i);
    }
  }
  copy(src, dst, stream);
  device.sync();
  if (check) {
    EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(src.handle()),
                          reinterpret_cast<const void*>(dst.handle()), 10),
              0);
  }
  dst.close();
  src.close();
}

TEST_F(test_memory, test_buffer_copy_to) {
  DummyDeviceMemoryResource device_mr;
  DummyUnifiedMemoryResource unified_mr;
  DummyPinnedMemoryResource pinned_mr;
  const auto copy_to = [](Buffer& src, Buffer& dst, const cuwrap::Stream& stream) {
    src.copy_to(dst, stream);
  };
  EXPECT_NO_FATAL_FAILURE(buffer_copy(device_mr, device(), false, copy_to));
  EXPECT_NO_FATAL_FAILURE(buffer_copy(unified_mr, device(), false, copy_to));
  EXPECT_NO_FATAL_FAILURE(buffer_copy(pinned_mr, device(), true, copy_to));
}

TEST_F(test_memory, test_buffer_copy_from) {
  DummyDeviceMemoryResource device_mr;
  DummyUnifiedMemoryResource unified_mr;
  DummyPinnedMemoryResource pinned_mr;
  const auto copy_from = [](Buffer& src, Buffer& dst, const cuwrap::Stream& stream) {
    dst.copy_from(src, stream);
  };
  EXPECT_NO_FATAL_FAILURE(buffer_copy(device_mr, device(), false, copy_from));
  EXPECT_NO_FATAL_FAILURE(buffer_copy(unified_mr, device(), false, copy_from));
  EXPECT_NO_FATAL_FAILURE(buffer_copy(pinned_mr, device(), true, copy_from));
}

void buffer_fill(MemoryResource& mr, const Device& device, bool check) {
  const cuwrap::Stream stream = device.create_stream();

  Buffer buffer1 = mr.allocate(1024);
  buffer1.fill(0x42, 1, stream);
  device.sync();
  if (check) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(buffer1.handle());
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(bytes[i], 0x42);
    }
  }
  for (int bad_width = -10; bad_width < 10; ++bad_width) {
    if (bad_width != 1 && bad_width != 2 && bad_width != 4) {
      EXPECT_THROW(buffer1.fill(0x42, bad_width, stream), std::invalid_argument) << bad_width;
    }
  }
  for (const std::int64_t bad_value : {-42, -1, 256}) {
    EXPECT_THROW(buffer1.fill(bad_value, 1, stream), std::invalid_argument) << bad_value;
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    Buffer odd = mr.allocate(1025);
    EXPECT_THROW(odd.fill(0x1234, 2, stream), std::invalid_argument);
    odd.close();
  }
  buffer1.close();

  Buffer buffer2 = mr.allocate(1024);
  buffer2.fill(0x1234, 2, stream);
  device.sync();
  if (check) {
    const auto* words = reinterpret_cast<const std::uint16_t*>(buffer2.handle());
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(words[i], 0x1234);
    }
  }
  for (const std::int64_t bad_value : {-42LL, -1LL, 65536LL, 65537LL, 100000LL}) {
    EXPECT_THROW(buffer2.fill(bad_value, 2, stream), std::invalid_argument) << bad_value;
  }
  buffer2.close();

  Buffer buffer4 = mr.allocate(1024);
  buffer4.fill(0xDEADBEEF, 4, stream);
  device.sync();
  if (check) {
    const auto* words = reinterpret_cast<const std::uint32_t*>(buffer4.handle());
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(words[i], 0xDEADBEEFU);
    }
  }
  for (const std::int64_t bad_value : {-42LL, -1LL, 4294967296LL, 4294967297LL, 5000000000LL}) {
    EXPECT_THROW(buffer4.fill(bad_value, 4, stream), std::invalid_argument) << bad_value;
  }
  for (const std::size_t bad_size : {1025U, 1026U, 1027U, 1029U, 1030U, 1031U}) {
    Buffer odd = mr.allocate(bad_size);
    EXPECT_THROW(odd.fill(0xDEADBEEF, 4, stream), std::invalid_argument) << bad_size;
    odd.close();
  }
  buffer4.close();
}

TEST_F(test_memory, test_buffer_fill) {
  DummyDeviceMemoryResource device_mr;
  DummyUnifiedMemoryResource unified_mr;
  DummyPinnedMemoryResource pinned_mr;
  EXPECT_NO_FATAL_FAILURE(buffer_fill(device_mr, device(), false));
  EXPECT_NO_FATAL_FAILURE(buffer_fill(unified_mr, device(), false));
  EXPECT_NO_FATAL_FAILURE(buffer_fill(pinned_mr, device(), true));
}

// cuda.core: a closed buffer's handle is 0 and its memory_resource None; cuwrap's
// closed Buffer is not open, has no resource, and its handle is misuse.
void buffer_close(MemoryResource& mr) {
  Buffer buffer = mr.allocate(1024);
  buffer.close();
  EXPECT_FALSE(buffer.is_open());
  EXPECT_EQ(buffer.memory_resource(), nullptr);
  EXPECT_THROW(static_cast<void>(buffer.handle()), std::logic_error);
}

TEST_F(test_memory, test_buffer_close) {
  DummyDeviceMemoryResource device_mr;
  DummyHostMemoryResource host_mr;
  DummyUnifiedMemoryResource unified_mr;
  DummyPinnedMemoryResource pinned_mr;
  EXPECT_NO_FATAL_FAILURE(buffer_close(device_mr));
  EXPECT_NO_FATAL_FAILURE(buffer_close(host_mr));
  EXPECT_NO_FATAL_FAILURE(buffer_close(unified_mr));
  EXPECT_NO_FATAL_FAILURE(buffer_close(pinned_mr));
}

TEST_F(test_memory, test_buffer_external_host) {
  std::vector<std::byte> bytes(20);
  BufferRef buffer =
      BufferRef::from_handle(reinterpret_cast<CUdeviceptr>(bytes.data()), bytes.size());
  EXPECT_FALSE(buffer.is_device_accessible());
  EXPECT_TRUE(buffer.is_host_accessible());
  EXPECT_EQ(buffer.device_id(), -1);
}

// Memory of the last device, seen through a BufferRef (from_handle), with the last or
// the first device current (cuda.core's change_device parameter).
class test_memory_external : public test_memory {
 protected:
  int last_ordinal() const { return Device::count() - 1; }
  void make_current(bool change_device) const {
    Device(change_device ? 0 : last_ordinal()).set_current();
  }
};

TEST_F(test_memory_external, test_buffer_external_device) {
  for (const bool change_device : {true, false}) {
    SCOPED_TRACE(change_device);
    const Device owner(last_ordinal());
    owner.set_current();
    Buffer original = owner.allocate(32);
    make_current(change_device);
    BufferRef buffer = BufferRef::from_handle(original.handle(), 32);
    EXPECT_TRUE(buffer.is_device_accessible());
    EXPECT_FALSE(buffer.is_host_accessible());
    EXPECT_EQ(buffer.device_id(), last_ordinal());
    original.close();
  }
}

TEST_F(test_memory_external, test_buffer_external_pinned_alloc) {
  for (const bool change_device : {true, false}) {
    SCOPED_TRACE(change_device);
    Device(last_ordinal()).set_current();
    DummyPinnedMemoryResource mr;
    Buffer original = mr.allocate(32);
    make_current(change_device);
    BufferRef buffer = BufferRef::from_handle(original.handle(), 32);
    EXPECT_TRUE(buffer.is_device_accessible());
    EXPECT_TRUE(buffer.is_host_accessible());
    EXPECT_EQ(buffer.device_id(), last_ordinal());
    original.close();
  }
}

TEST_F(test_memory_external, test_buffer_external_pinned_registered) {
  for (const bool change_device : {true, false}) {
    SCOPED_TRACE(change_device);
    Device(last_ordinal()).set_current();
    std::vector<std::byte> bytes(20);
    const auto ptr = reinterpret_cast<CUdeviceptr>(bytes.data());
    BufferRef plain = BufferRef::from_handle(ptr, bytes.size());
    EXPECT_FALSE(plain.is_device_accessible());
    EXPECT_TRUE(plain.is_host_accessible());
    EXPECT_EQ(plain.device_id(), -1);

    driver::cuMemHostRegister(bytes.data(), bytes.size(), 0);
    make_current(change_device);
    BufferRef registered = BufferRef::from_handle(ptr, bytes.size());
    EXPECT_TRUE(registered.is_device_accessible());
    EXPECT_TRUE(registered.is_host_accessible());
    EXPECT_EQ(registered.device_id(), last_ordinal());
    driver::cuMemHostUnregister(bytes.data());
  }
}

TEST_F(test_memory_external, test_buffer_external_managed) {
  for (const bool change_device : {true, false}) {
    SCOPED_TRACE(change_device);
    Device(last_ordinal()).set_current();
    const CUdeviceptr ptr = driver::cuMemAllocManaged(32, CU_MEM_ATTACH_GLOBAL);
    make_current(change_device);
    BufferRef buffer = BufferRef::from_handle(ptr, 32);
    EXPECT_TRUE(buffer.is_device_accessible());
    EXPECT_TRUE(buffer.is_host_accessible());
    EXPECT_EQ(buffer.device_id(), last_ordinal());
    driver::cuMemFree(ptr);
  }
}

#if defined(CUWRAP_DLPACK_DECLARED)
TEST_F(test_memory, test_buffer_dunder_dlpack_device_success) {
  if (!cuwrap::has_dlpack()) {
    GTEST_SKIP() << "cuwrap was built without dlpack.h";
  }
  DummyDeviceMemoryResource device_mr;
  DummyHostMemoryResource host_mr;
  DummyUnifiedMemoryResource unified_mr;
  DummyPinnedMemoryResource pinned_mr;
  const struct {
    MemoryResource* mr;
    DLDeviceType type;
  } cases[] = {{&device_mr, kDLCUDA},
               {&host_mr, kDLCPU},
               {&unified_mr, kDLCUDAHost},
               {&pinned_mr, kDLCUDAHost}};
  for (const auto& each : cases) {
    const Buffer buffer = each.mr->allocate(1024);
    const DLDevice where = cuwrap::dlpack_device(buffer);
    EXPECT_EQ(where.device_type, each.type);
    EXPECT_EQ(where.device_id, 0);
  }
}

// cuda.core raises BufferError: memory neither side can reach has no DLPack device.
TEST_F(test_memory, test_buffer_dunder_dlpack_device_failure) {
  if (!cuwrap::has_dlpack()) {
    GTEST_SKIP() << "cuwrap was built without dlpack.h";
  }
  NullMemoryResource mr;
  const Buffer buffer = mr.allocate(1024);
  EXPECT_ANY_THROW(static_cast<void>(cuwrap::dlpack_device(buffer)));
}
#endif

TEST_F(test_memory_mempool, test_device_memory_resource_initialization) {
  for (const bool use_device_object : {true, false}) {
    SCOPED_TRACE(use_device_object);
    std::unique_ptr<cuwrap::DeviceMemoryResource> mr =
        use_device_object ? std::make_unique<cuwrap::DeviceMemoryResource>(device())
                          : std::make_unique<cuwrap::DeviceMemoryResource>(device().device_id());
    EXPECT_EQ(mr->device_id(), device().device_id());
    EXPECT_TRUE(mr->is_device_accessible());
    EXPECT_FALSE(mr->is_host_accessible());
    EXPECT_FALSE(mr->is_ipc_enabled());
    Buffer buffer = mr->allocate(1024);
    EXPECT_EQ(buffer.size(), 1024U);
    EXPECT_EQ(buffer.device_id(), device().device_id());
    buffer.close();
  }
}

TEST_F(test_memory, test_vmm_allocator_basic_allocation) {
  if (!device().properties().virtual_memory_management_supported()) {
    GTEST_SKIP() << "the device does not support virtual memory management";
  }
  cuwrap::VirtualMemoryResourceOptions options;
  options.handle_type = cuwrap::VirtualMemoryHandleType::PosixFd;
  cuwrap::VirtualMemoryResource mr(device(), options);
  Buffer buffer = mr.allocate(4096);
  EXPECT_GE(buffer.size(), 4096U);
  EXPECT_EQ(buffer.device_id(), device().device_id());
  EXPECT_EQ(buffer.memory_resource(), &mr);
  buffer.close();
  std::vector<Buffer> buffers;
  for (std::size_t i = 0; i < 5; ++i) {
    buffers.push_back(mr.allocate(1024 * (i + 1)));
    EXPECT_GE(buffers.back().size(), 1024 * (i + 1));
  }
}

// cuda.core also changes the policy in modify_allocation(config=...); cuwrap's
// modify_allocation only resizes (README.md).
TEST_F(test_memory, test_vmm_allocator_policy_configuration) {
  if (!device().properties().virtual_memory_management_supported()) {
    GTEST_SKIP() << "the device does not support virtual memory management";
  }
  if (!device().properties().gpu_direct_rdma_with_cuda_vmm_supported()) {
    GTEST_SKIP() << "the device does not support GPUDirect RDMA with virtual memory management";
  }
  cuwrap::VirtualMemoryResourceOptions options;
  options.granularity = cuwrap::VirtualMemoryGranularity::Minimum;
  options.gpu_direct_rdma = true;
  cuwrap::VirtualMemoryResource mr(device(), options);
  EXPECT_TRUE(mr.options().gpu_direct_rdma);
  EXPECT_EQ(mr.options().granularity, cuwrap::VirtualMemoryGranularity::Minimum);
  Buffer buffer = mr.allocate(8192);
  EXPECT_GE(buffer.size(), 8192U);
  EXPECT_EQ(buffer.device_id(), device().device_id());
  mr.modify_allocation(buffer, 16384);
  EXPECT_GE(buffer.size(), 16384U);
}

TEST_F(test_memory, test_vmm_allocator_grow_allocation) {
  if (!device().properties().virtual_memory_management_supported()) {
    GTEST_SKIP() << "the device does not support virtual memory management";
  }
  cuwrap::VirtualMemoryResource mr(device());
  Buffer buffer = mr.allocate(2 * 1024 * 1024);
  const std::size_t original_size = buffer.size();
  mr.modify_allocation(buffer, 4 * 1024 * 1024);
  EXPECT_GE(buffer.size(), 4U * 1024 * 1024);
  EXPECT_GT(buffer.size(), original_size);
  EXPECT_NE(buffer.handle(), CUdeviceptr{0});
  const std::size_t grown = buffer.size();
  mr.modify_allocation(buffer, 4 * 1024 * 1024);
  EXPECT_EQ(buffer.size(), grown);
  mr.modify_allocation(buffer, 2 * 1024 * 1024);
  EXPECT_EQ(buffer.size(), grown);
}

TEST_F(test_memory, test_vmm_allocator_rdma_unsupported_exception) {
  if (!device().properties().virtual_memory_management_supported()) {
    GTEST_SKIP() << "the device does not support virtual memory management";
  }
  if (device().properties().gpu_direct_rdma_with_cuda_vmm_supported()) {
    GTEST_SKIP() << "needs a device without GPUDirect RDMA";
  }
  cuwrap::VirtualMemoryResourceOptions options;
  options.gpu_direct_rdma = true;
  EXPECT_THROW(cuwrap::VirtualMemoryResource(device(), options), cuwrap::Error);
}

TEST_F(test_memory_mempool, test_device_memory_resource) {
  cuwrap::DeviceMemoryResourceOptions options;
  options.max_size = kPoolSize;
  cuwrap::DeviceMemoryResource mr(device(), options);
  EXPECT_EQ(mr.device_id(), device().device_id());
  EXPECT_TRUE(mr.is_device_accessible());
  EXPECT_FALSE(mr.is_host_accessible());
  EXPECT_FALSE(mr.is_ipc_enabled());

  Buffer buffer1 = mr.allocate(1024);
  EXPECT_NE(buffer1.handle(), CUdeviceptr{0});
  EXPECT_EQ(buffer1.size(), 1024U);
  EXPECT_EQ(buffer1.memory_resource(), &mr);
  buffer1.close();

  buffer1 = mr.allocate(1024);
  Buffer buffer2 = mr.allocate(2048);
  EXPECT_NE(buffer1.handle(), buffer2.handle());
  EXPECT_EQ(buffer1.size(), 1024U);
  EXPECT_EQ(buffer2.size(), 2048U);
  buffer1.close();
  buffer2.close();

  const cuwrap::Stream stream = device().create_stream();
  Buffer on_stream = mr.allocate(1024, stream);
  EXPECT_NE(on_stream.handle(), CUdeviceptr{0});
  on_stream.close();

  Buffer src = mr.allocate(64);
  Buffer dst = mr.allocate(64);
  src.copy_to(dst, stream);
  device().sync();
  dst.close();
  src.close();
}

// cuda.core: RuntimeError "Memory resource is not IPC-enabled" (misuse).
TEST_F(test_memory_mempool, test_mempool_ipc_errors) {
  cuwrap::DeviceMemoryResourceOptions options;
  options.max_size = kPoolSize;
  options.ipc_enabled = false;
  cuwrap::DeviceMemoryResource mr(device(), options);
  Buffer buffer = mr.allocate(64);
  EXPECT_THROW(static_cast<void>(mr.get_allocation_handle()), std::logic_error);
  EXPECT_THROW(static_cast<void>(buffer.get_ipc_descriptor()), std::logic_error);
  buffer.close();
}

TEST_F(test_memory_mempool, test_mempool_attributes) {
  for (const bool ipc_enabled : {true, false}) {
    SCOPED_TRACE(ipc_enabled);
    cuwrap::DeviceMemoryResourceOptions options;
    options.max_size = kPoolSize;
    options.ipc_enabled = ipc_enabled;
    std::unique_ptr<cuwrap::DeviceMemoryResource> mr;
    try {
      mr = std::make_unique<cuwrap::DeviceMemoryResource>(device(), options);
    } catch (const cuwrap::Error&) {
      if (ipc_enabled) {
        continue;  // cuda.core skips where the driver refuses an IPC pool
      }
      throw;
    }
    EXPECT_EQ(mr->is_ipc_enabled(), ipc_enabled);
    const cuwrap::MemoryPoolAttributes attributes = mr->attributes();
    static_assert(std::is_same_v<decltype(attributes.reuse_follow_event_dependencies()), bool>);
    static_assert(std::is_same_v<decltype(attributes.reuse_allow_opportunistic()), bool>);
    static_assert(std::is_same_v<decltype(attributes.reuse_allow_internal_dependencies()), bool>);
    const std::uint64_t reserved = attributes.reserved_mem_current();
    const std::uint64_t used = attributes.used_mem_current();
    Buffer buffer = mr->allocate(1024);
    EXPECT_GE(attributes.reserved_mem_current(), reserved);
    EXPECT_GE(attributes.used_mem_current(), used);
    EXPECT_GE(attributes.reserved_mem_high(), attributes.reserved_mem_current());
    EXPECT_GE(attributes.used_mem_high(), attributes.used_mem_current());
    EXPECT_NO_THROW(static_cast<void>(attributes.release_threshold()));
    buffer.close();
  }
}

// GraphMemoryResource objects of one device share the device's graph memory; cuda.core
// interns them (`is`), cuwrap's are separate objects over the same memory.
TEST_F(test_memory, test_graph_memory_resource_object) {
  cuwrap::GraphMemoryResource gmr1(device());
  cuwrap::GraphMemoryResource gmr2(device());
  EXPECT_EQ(gmr1.device_id(), gmr2.device_id());
  EXPECT_EQ(gmr1.device_id(), device().device_id());
  EXPECT_TRUE(gmr1.is_device_accessible());
}

}  // namespace
