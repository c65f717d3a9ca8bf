// DLPack export and import. Without a GPU: buffers from stand-in pinned, managed and
// device resources (host memory behind them, so no driver call) are exported with their
// metadata, their deleters run exactly once and keep the buffer alive until then,
// host tensors are imported as host views, and imports refuse what cuwrap cannot take
// (with the deleter still run once). On a GPU: a device buffer exported and imported
// again reads back the same bytes, also across streams (the protocol's handshake).
// Where cuwrap was built without dlpack.h (CUWRAP_WITH_DLPACK=OFF) but this file finds
// one: every entry point throws UnsupportedError naming dlpack.h, releasing its input.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(CUWRAP_DLPACK_DECLARED)

namespace {

using cuwrap::Buffer;
using cuwrap::DLPackTensor;
using cuwrap::testing::contains;

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// Host memory standing in for what the real resources hand out; counts the frees.
template <class Base>
class HostBacked : public Base {
 public:
  Buffer allocate(std::size_t size, cuwrap::StreamRef /*stream*/) override {
    storage_.emplace_back(size);
    return Buffer::adopt(reinterpret_cast<CUdeviceptr>(storage_.back().data()), size, this);
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/,
                  cuwrap::StreamRef /*stream*/) override {
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

[[maybe_unused]] std::string import_error(DLManagedTensor* tensor, int device_id = 0) {
  try {
    DLPackTensor::from_dlpack(tensor, device_id);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

#if defined(CUWRAP_HAS_DLPACK) && CUWRAP_HAS_DLPACK

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
  EXPECT_TRUE(contains(message([&] {
                         cuwrap::to_dlpack(std::move(buffer), {kDLFloat, 32, 4}, four);
                       }),
                       "lanes 4"));
  EXPECT_TRUE(contains(message([&] {
                         cuwrap::to_dlpack(std::move(buffer), {kDLInt, 12, 1}, four);
                       }),
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
    const cuwrap::BufferRef view = imported.buffer();
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
      ProducerTensor::make({kDLCUDAHost, 0}, kFloat32, {3, 2}, {8, 2}, storage.data(), &deletes),
      0);
  EXPECT_FALSE(imported.is_contiguous());
  EXPECT_EQ(imported.size_bytes(), (2 * 8 + 1 * 2 + 1) * sizeof(float));
}

TEST(DLPackImport, WhatCannotBeTakenIsRefusedAndDeletedOnce) {
  float storage[4] = {};
  int deletes = 0;
  EXPECT_TRUE(contains(
      import_error(ProducerTensor::make({kDLOpenCL, 0}, kFloat32, {4}, {}, storage, &deletes)),
      "the tensor is on device type 4"));
  EXPECT_TRUE(contains(
      import_error(ProducerTensor::make({kDLCUDA, 1}, kFloat32, {4}, {}, storage, &deletes), 0),
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

TEST(DLPackImport, HostTensorsAreHostViews) {
  int deletes = 0;
  std::vector<float> storage{1.5F, 2.5F, 3.5F, 4.5F, 5.5F, 6.5F};
  {
    const DLPackTensor imported = DLPackTensor::from_dlpack(
        ProducerTensor::make({kDLCPU, 0}, kFloat32, {2, 3}, {}, storage.data(), &deletes), 0);
    EXPECT_TRUE(imported.is_host_accessible());
    EXPECT_EQ(imported.device().device_type, kDLCPU);
    const std::span<std::byte> bytes = imported.host_bytes();
    EXPECT_EQ(bytes.data(), reinterpret_cast<std::byte*>(storage.data()));
    EXPECT_EQ(bytes.size(), storage.size() * sizeof(float));
    const cuwrap::StridedMemoryView view = imported.view();
    EXPECT_EQ(view.dtype(), cuwrap::data_type_of<float>());
    EXPECT_EQ(view.device_id(), -1);
    EXPECT_EQ(std::vector<std::int64_t>(view.strides().begin(), view.strides().end()),
              (std::vector<std::int64_t>{3, 1}));
    EXPECT_EQ(view.host_span<float>()[4], 5.5F);
    EXPECT_THROW(static_cast<void>(view.host_span<double>()), std::invalid_argument);
  }
  EXPECT_EQ(deletes, 1);
  // Pinned memory is a host view too; device memory is not.
  const DLPackTensor pinned = DLPackTensor::from_dlpack(
      ProducerTensor::make({kDLCUDAHost, 0}, kFloat32, {6}, {}, storage.data(), &deletes), 0);
  EXPECT_EQ(pinned.host_bytes().size(), 24U);
  const DLPackTensor device = DLPackTensor::from_dlpack(
      ProducerTensor::make({kDLCUDA, 0}, kFloat32, {6}, {}, storage.data(), &deletes), 0);
  EXPECT_FALSE(device.is_host_accessible());
  EXPECT_EQ(device.view().device_id(), 0);
  EXPECT_TRUE(contains(cuwrap::testing::thrown_message<std::logic_error>(
                           [&] { static_cast<void>(device.host_bytes()); }),
                       "kDLCUDA:0"));
  EXPECT_TRUE(cuwrap::has_dlpack());
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

// Written on one stream, read on another: the export and the import make the consumer
// wait for the producer, so the reads see the writes without a host synchronisation.
TEST_F(DLPackGpu, ConsumerStreamWaitsForTheProducer) {
  const cuwrap::Stream consumer = device().create_stream();
  constexpr std::size_t kBytes = 1 << 22;
  auto shared = std::make_shared<Buffer>(device().allocate(kBytes, stream()));
  shared->fill(std::uint8_t{0x11}, stream());
  shared->fill(std::uint8_t{0x5a}, stream());  // the producer's last write
  const std::int64_t shape[] = {static_cast<std::int64_t>(kBytes)};
  DLManagedTensor* t = cuwrap::to_dlpack(shared, {kDLUInt, 8, 1}, shape, {}, stream(), consumer);
  std::vector<std::byte> back(kBytes);
  shared->copy_to(std::span<std::byte>(back), consumer);
  consumer.sync();
  EXPECT_EQ(back.front(), std::byte{0x5a});
  EXPECT_EQ(back.back(), std::byte{0x5a});
  // The import form: the producer's stream writes again, the consumer reads after it.
  shared->fill(std::uint8_t{0x33}, stream());
  const DLPackTensor imported =
      DLPackTensor::from_dlpack(t, device().device_id(), stream(), consumer);
  imported.buffer().copy_to(std::span<std::byte>(back), consumer);
  consumer.sync();
  EXPECT_EQ(back.back(), std::byte{0x33});
  // One stream on both sides: nothing to wait for, and nothing fails.
  EXPECT_NO_THROW(cuwrap::dlpack_stream_wait(stream(), stream()));
}

#else  // cuwrap was built without dlpack.h; this file found one

std::string unsupported(const std::function<void()>& call) {
  try {
    call();
  } catch (const cuwrap::UnsupportedError& e) {
    return e.what();
  }
  return "";
}

TEST(DLPackWithoutDlpackH, EveryEntryPointRefusesNamingDlpackH) {
  EXPECT_FALSE(cuwrap::has_dlpack());
  FakePinned mr;
  Buffer buffer = mr.allocate(16, cuwrap::kPerThreadDefaultStream);
  const std::int64_t four[] = {4};
  EXPECT_TRUE(contains(unsupported([&] { cuwrap::to_dlpack(std::move(buffer), kFloat32, four); }),
                       "to_dlpack needs dlpack/dlpack.h at configure time"));
  EXPECT_TRUE(buffer.is_open()) << "a refused export leaves the buffer with its owner";
  auto shared = std::make_shared<Buffer>(mr.allocate(16, cuwrap::kPerThreadDefaultStream));
  EXPECT_TRUE(
      contains(unsupported([&] { cuwrap::to_dlpack(shared, kFloat32, four); }), "dlpack/dlpack.h"));
  EXPECT_EQ(shared.use_count(), 1) << "the refused export released its share";
  EXPECT_TRUE(contains(unsupported([&] { static_cast<void>(cuwrap::dlpack_device(buffer)); }),
                       "dlpack_device needs dlpack/dlpack.h"));
  int deletes = 0;
  std::vector<float> storage(4);
  EXPECT_TRUE(contains(
      unsupported([&] {
        DLPackTensor::from_dlpack(
            ProducerTensor::make({kDLCUDAHost, 0}, kFloat32, {4}, {}, storage.data(), &deletes), 0);
      }),
      "DLPackTensor::from_dlpack needs dlpack/dlpack.h"));
  EXPECT_EQ(deletes, 1) << "the refused import ran the deleter once";
}

#endif  // CUWRAP_HAS_DLPACK

}  // namespace

#else

TEST(DLPack, NoDlpackHeader) {
  EXPECT_FALSE(cuwrap::has_dlpack());
  GTEST_SKIP() << "no dlpack/dlpack.h here: <cuwrap/dlpack.hpp> declares only has_dlpack()";
}

#endif
