// DLPack export and import. Without a GPU: buffers from stand-in pinned, managed and
// device resources (host memory behind them, so no driver call) are exported with their
// metadata, their deleters run exactly once and keep the buffer alive until then, and
// imports refuse what cuwrap cannot take (with the deleter still run once). On a GPU:
// a device buffer exported and imported again reads back the same bytes.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"

#if defined(CUWRAP_HAS_DLPACK) && CUWRAP_HAS_DLPACK

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::DLPackTensor;
using cuwrap::testing::contains;

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// Host memory standing in for what the real resources hand out; counts the frees.
template <class Base>
class HostBacked : public Base {
 public:
  Buffer allocate(std::size_t size, const cuwrap::Stream& /*stream*/) override {
    storage_.emplace_back(size);
    return Buffer::from_handle(reinterpret_cast<CUdeviceptr>(storage_.back().data()), size, this);
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, const cuwrap::Stream& /*stream*/) override {
    ++frees;
  }
  int frees = 0;

 private:
  std::vector<std::vector<std::byte>> storage_;
};

// Device memory of device 0, as DeviceMemoryResource describes it.
class FakeDeviceResource : public HostBacked<cuwrap::LegacyPinnedMemoryResource> {
 public:
  bool is_host_accessible() const override { return false; }
  int device_id() const override { return 0; }
};

using FakePinned = HostBacked<cuwrap::LegacyPinnedMemoryResource>;
using FakeManaged = HostBacked<cuwrap::ManagedMemoryResource>;

// A producer's tensor made by hand: counts deleter calls in `deletes`.
struct ProducerTensor {
  DLManagedTensor managed{};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  int* deletes = nullptr;

  static DLManagedTensor* make(DLDevice device, DLDataType dtype, std::vector<std::int64_t> shape,
                               std::vector<std::int64_t> strides, void* data, int* deletes) {
    auto* p = new ProducerTensor{{}, std::move(shape), std::move(strides), deletes};
    p->managed.dl_tensor.data = data;
    p->managed.dl_tensor.device = device;
    p->managed.dl_tensor.ndim = static_cast<int>(p->shape.size());
    p->managed.dl_tensor.dtype = dtype;
    p->managed.dl_tensor.shape = p->shape.data();
    p->managed.dl_tensor.strides = p->strides.empty() ? nullptr : p->strides.data();
    p->managed.manager_ctx = p;
    p->managed.deleter = [](DLManagedTensor* self) {
      auto* owner = static_cast<ProducerTensor*>(self->manager_ctx);
      ++*owner->deletes;
      delete owner;
    };
    return &p->managed;
  }
};

std::string import_error(DLManagedTensor* tensor, int device_id = 0) {
  try {
    DLPackTensor::from_dlpack(tensor, device_id);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DLPackExport, ManagedBufferMetadataAndOneDeleterRun) {
  FakeManaged mr;
  Buffer buffer = mr.allocate(12 * sizeof(float), cuwrap::kPerThreadDefaultStream);
  const CUdeviceptr address = buffer.handle();
  const std::int64_t shape[] = {3, 4};
  DLManagedTensor* t = cuwrap::to_dlpack(std::move(buffer), kFloat32, shape);
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDAManaged);
  EXPECT_EQ(t->dl_tensor.device.device_id, 0);
  EXPECT_EQ(reinterpret_cast<CUdeviceptr>(t->dl_tensor.data), address);
  ASSERT_EQ(t->dl_tensor.ndim, 2);
  EXPECT_EQ(t->dl_tensor.shape[0], 3);
  EXPECT_EQ(t->dl_tensor.shape[1], 4);
  EXPECT_EQ(t->dl_tensor.strides[0], 4);  // compact row-major
  EXPECT_EQ(t->dl_tensor.strides[1], 1);
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(t->dl_tensor.byte_offset, 0U);
  EXPECT_EQ(mr.frees, 0) << "the tensor keeps the buffer until its deleter runs";
  t->deleter(t);
  EXPECT_EQ(mr.frees, 1);
}

TEST(DLPackExport, SharedBufferOutlivesTheTensor) {
  FakePinned mr;
  auto buffer = std::make_shared<Buffer>(mr.allocate(64, cuwrap::kPerThreadDefaultStream));
  const std::int64_t shape[] = {2, 4};
  const std::int64_t strides[] = {8, 1};  // padded rows
  DLManagedTensor* t = cuwrap::to_dlpack(buffer, {kDLUInt, 32, 1}, shape, strides);
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDAHost);
  EXPECT_EQ(t->dl_tensor.strides[0], 8);
  EXPECT_EQ(buffer.use_count(), 2);
  t->deleter(t);
  EXPECT_EQ(buffer.use_count(), 1);
  EXPECT_TRUE(buffer->is_open());
  EXPECT_EQ(mr.frees, 0);
}

TEST(DLPackExport, DeviceBuffersNameTheirDevice) {
  FakeDeviceResource mr;
  const Buffer buffer = mr.allocate(16, cuwrap::kPerThreadDefaultStream);
  const DLDevice device = cuwrap::dlpack_device(buffer);
  EXPECT_EQ(device.device_type, kDLCUDA);
  EXPECT_EQ(device.device_id, 0);
}

TEST(DLPackExport, BadShapesAndTypesAreRefusedAndTheBufferSurvives) {
  FakePinned mr;
  Buffer buffer = mr.allocate(16, cuwrap::kPerThreadDefaultStream);
  const std::int64_t too_big[] = {5};
  const std::int64_t negative[] = {-1};
  const std::int64_t four[] = {4};
  const auto message = [&](auto&& fn) {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(contains(message([&] { cuwrap::to_dlpack(std::move(buffer), kFloat32, too_big); }),
                       "spans 20 bytes but the buffer has 16"));
  EXPECT_TRUE(contains(message([&] { cuwrap::to_dlpack(std::move(buffer), kFloat32, negative); }),
                       "shape[0] = -1 is negative"));
  EXPECT_TRUE(contains(message([&] { cuwrap::to_dlpack(std::move(buffer), {kDLFloat, 32, 4}, four); }),
                       "lanes 4"));
  EXPECT_TRUE(contains(message([&] { cuwrap::to_dlpack(std::move(buffer), {kDLInt, 12, 1}, four); }),
                       "bits 12"));
  EXPECT_TRUE(buffer.is_open()) << "a refused export leaves the buffer with its owner";
  EXPECT_EQ(mr.frees, 0);
}

TEST(DLPackImport, RoundTripViewsTheSameMemoryAndDeletesOnce) {
  FakePinned mr;
  Buffer buffer = mr.allocate(6 * sizeof(std::int16_t), cuwrap::kPerThreadDefaultStream);
  const CUdeviceptr address = buffer.handle();
  const std::int64_t shape[] = {2, 3};
  {
    DLPackTensor imported =
        DLPackTensor::from_dlpack(cuwrap::to_dlpack(std::move(buffer), {kDLInt, 16, 1}, shape), 0);
    EXPECT_EQ(imported.data(), address);
    EXPECT_EQ(imported.size_bytes(), 12U);
    EXPECT_EQ(std::vector<std::int64_t>(imported.shape().begin(), imported.shape().end()),
              (std::vector<std::int64_t>{2, 3}));
    EXPECT_TRUE(imported.is_contiguous());
    const Buffer view = imported.buffer();
    EXPECT_EQ(view.handle(), address);
    EXPECT_EQ(view.size(), 12U);
    EXPECT_EQ(mr.frees, 0);
  }
  EXPECT_EQ(mr.frees, 1);
}

TEST(DLPackImport, TakeBufferHandsTheDeleterToTheBuffer) {
  int deletes = 0;
  std::vector<float> storage(8);
  DLPackTensor imported = DLPackTensor::from_dlpack(
      ProducerTensor::make({kDLCUDAManaged, 0}, kFloat32, {8}, {}, storage.data(), &deletes), 0);
  Buffer owned = imported.take_buffer();
  EXPECT_EQ(owned.size(), 32U);
  EXPECT_TRUE(owned.is_host_accessible());
  EXPECT_EQ(cuwrap::dlpack_device(owned).device_type, kDLCUDAManaged);
  EXPECT_THROW(static_cast<void>(imported.shape()), std::logic_error);
  EXPECT_EQ(deletes, 0);
  owned.close();
  EXPECT_EQ(deletes, 1);
  owned.close();
  EXPECT_EQ(deletes, 1);
}

TEST(DLPackImport, StridedTensorsAreViewsOfTheirWholeExtent) {
  int deletes = 0;
  std::vector<float> storage(32);
  DLPackTensor imported = DLPackTensor::from_dlpack(
      ProducerTensor::make({kDLCUDAHost, 0}, kFloat32, {3, 2}, {8, 2}, storage.data(), &deletes), 0);
  EXPECT_FALSE(imported.is_contiguous());
  EXPECT_EQ(imported.size_bytes(), (2 * 8 + 1 * 2 + 1) * sizeof(float));
}

TEST(DLPackImport, WhatCannotBeTakenIsRefusedAndDeletedOnce) {
  float storage[4] = {};
  int deletes = 0;
  EXPECT_TRUE(contains(import_error(ProducerTensor::make({kDLCPU, 0}, kFloat32, {4}, {}, storage,
                                                         &deletes)),
                       "the tensor is on kDLCPU"));
  EXPECT_TRUE(contains(import_error(ProducerTensor::make({kDLCUDA, 1}, kFloat32, {4}, {}, storage,
                                                         &deletes),
                                    0),
                       "kDLCUDA:1, which device 0 cannot use"));
  EXPECT_TRUE(contains(import_error(ProducerTensor::make({kDLCUDAHost, 0}, {kDLFloat, 32, 2}, {4},
                                                         {}, storage, &deletes)),
                       "lanes 2"));
  EXPECT_TRUE(contains(import_error(ProducerTensor::make({kDLCUDAHost, 0}, kFloat32, {2, 2},
                                                         {-2, 1}, storage, &deletes)),
                       "strides[0] = -2 is negative"));
  EXPECT_EQ(deletes, 4);
  EXPECT_TRUE(contains(import_error(nullptr), "null"));
}

#if defined(DLPACK_MAJOR_VERSION)
// dlpack.h 1.0 and newer: the versioned structure, its version and flags.
TEST(DLPackVersioned, ExportImportAndTheMajorVersionCheck) {
  FakePinned mr;
  auto buffer = std::make_shared<Buffer>(mr.allocate(32, cuwrap::kPerThreadDefaultStream));
  const std::int64_t shape[] = {8};
  DLManagedTensorVersioned* t = cuwrap::to_dlpack_versioned(buffer, kFloat32, shape);
  EXPECT_EQ(t->version.major, static_cast<std::uint32_t>(DLPACK_MAJOR_VERSION));
  EXPECT_EQ(t->flags, 0U);
  {
    const DLPackTensor imported = DLPackTensor::from_dlpack(t, 0);
    EXPECT_EQ(imported.size_bytes(), 32U);
    EXPECT_FALSE(imported.read_only());
    EXPECT_EQ(buffer.use_count(), 2);
  }
  EXPECT_EQ(buffer.use_count(), 1) << "the import ran the deleter";

  DLManagedTensorVersioned* future = cuwrap::to_dlpack_versioned(buffer, kFloat32, shape);
  future->version.major = DLPACK_MAJOR_VERSION + 1;
  EXPECT_THROW(DLPackTensor::from_dlpack(future, 0), std::invalid_argument);
  EXPECT_EQ(buffer.use_count(), 1) << "a refused import still runs the deleter";
}
#else
TEST(DLPackVersioned, ExportImportAndTheMajorVersionCheck) {
  GTEST_SKIP() << "the dlpack.h found at configure time predates DLPack 1.0 (no "
                  "DLManagedTensorVersioned)";
}
#endif

// ---- GPU ---------------------------------------------------------------------------

class DLPackGpu : public cuwrap::testing::DeviceStreamTest {};

TEST_F(DLPackGpu, DeviceBufferRoundTrip) {
  const auto data = cuwrap::testing::random_bytes(256, 21);
  Buffer buffer = device().allocate(data.size(), stream());
  buffer.copy_from(std::span<const std::byte>(data), stream());
  const std::int64_t shape[] = {16, 16};
  DLManagedTensor* t = cuwrap::to_dlpack(std::move(buffer), {kDLUInt, 8, 1}, shape);
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl_tensor.device.device_id, device().device_id());
  const DLPackTensor imported = DLPackTensor::from_dlpack(t, device().device_id());
  EXPECT_EQ(cuwrap::testing::read_back(imported.buffer(), stream()), data);
}

}  // namespace

#else

TEST(DLPack, CompiledOut) { GTEST_SKIP() << "dlpack/dlpack.h was not found at configure time"; }

#endif
