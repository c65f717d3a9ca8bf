// StridedMemoryView: a typed view over a Buffer made without a driver call (the buffers
// here are host memory behind stand-in addresses), its checks naming the numbers, and
// TensorMapDescriptor::from_tiled over a view: refused before the driver for a dtype TMA
// lacks or a non-contiguous innermost dimension, and on a GPU the same descriptor as the
// Buffer form with the dimensions reversed.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::BufferRef;
using cuwrap::DataType;
using cuwrap::StridedMemoryView;
using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

std::vector<std::int64_t> as_vector(std::span<const std::int64_t> values) {
  return {values.begin(), values.end()};
}

TEST(StridedMemoryView, FromBufferDescribesTheMemoryWithoutTheDriver) {
  std::vector<float> storage(4 * 8);
  const Buffer buffer = cuwrap::testing::fake_buffer(reinterpret_cast<CUdeviceptr>(storage.data()),
                                                     storage.size() * 4);
  const std::int64_t shape[] = {4, 6};
  const std::int64_t padded[] = {8, 1};
  const StridedMemoryView view =
      StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<float>(), shape, padded, true);
  EXPECT_EQ(view.ptr(), buffer.handle());
  EXPECT_EQ(view.itemsize(), 4U);
  EXPECT_EQ(as_vector(view.shape()), (std::vector<std::int64_t>{4, 6}));
  EXPECT_EQ(view.size_bytes(), (3 * 8 + 5 + 1) * 4U);
  EXPECT_FALSE(view.is_contiguous());
  EXPECT_TRUE(view.readonly());
  EXPECT_EQ(view.device_id(), -1) << "memory without a resource: not known, not asked";
  storage[8 + 2] = 7.0F;
  EXPECT_EQ(view.host_span<float>()[8 + 2], 7.0F);

  const StridedMemoryView compact =
      StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<std::uint16_t>(), shape);
  EXPECT_EQ(as_vector(compact.strides()), (std::vector<std::int64_t>{6, 1}));
  EXPECT_TRUE(compact.is_contiguous());
  EXPECT_EQ(cuwrap::data_type_of<std::int64_t>(), (DataType{DataType::kInt, 64, 1}));
  EXPECT_EQ(cuwrap::data_type_of<bool>(), (DataType{DataType::kBool, 8, 1}));
}

TEST(StridedMemoryView, BadShapesStridesAndTypesNameTheNumbers) {
  std::vector<std::byte> storage(64);
  const Buffer buffer =
      cuwrap::testing::fake_buffer(reinterpret_cast<CUdeviceptr>(storage.data()), 64);
  const std::int64_t shape[] = {4, 5};
  const std::int64_t wide[] = {5, 1};
  const std::int64_t one[] = {1};
  const std::int64_t negative[] = {-4, 1};
  const auto message = [&](DataType dtype, std::span<const std::int64_t> dims,
                           std::span<const std::int64_t> strides) {
    return thrown_message<std::invalid_argument>(
        [&] { StridedMemoryView::from_buffer(buffer, dtype, dims, strides); });
  };
  const DataType f32 = cuwrap::data_type_of<float>();
  EXPECT_TRUE(
      contains(message(f32, shape, wide), "the elements span 80 bytes but the memory has 64"));
  EXPECT_TRUE(contains(message(f32, shape, one), "1 strides for 2 dimensions"));
  EXPECT_TRUE(contains(message(f32, shape, negative), "strides[0] = -4 is negative"));
  EXPECT_TRUE(contains(message({DataType::kFloat, 12, 1}, shape, {}), "dtype bits 12"));
  EXPECT_TRUE(contains(message({DataType::kFloat, 32, 4}, shape, {}), "dtype lanes 4"));
  EXPECT_TRUE(contains(message({9, 32, 1}, shape, {}), "dtype code 9"));
  const StridedMemoryView bytes =
      StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<std::uint8_t>(), shape);
  EXPECT_TRUE(contains(
      thrown_message<std::invalid_argument>([&] { static_cast<void>(bytes.host_span<float>()); }),
      "has 1-byte elements but the requested type has 4"));
  Buffer closed;
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>(
                           [&] { StridedMemoryView::from_buffer(closed, f32, shape); }),
                       "the buffer is closed"));
}

TEST(StridedMemoryView, TensorMapFromAViewRefusesWhatTmaCannotMap) {
  std::vector<std::byte> storage(4096);
  const Buffer buffer =
      cuwrap::testing::fake_buffer(reinterpret_cast<CUdeviceptr>(storage.data()), 4096);
  const std::int64_t shape[] = {16, 16};
  const std::uint32_t box[] = {8, 8};
  const auto complex = StridedMemoryView::from_buffer(buffer, {DataType::kComplex, 64, 1}, shape);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>(
                           [&] { cuwrap::TensorMapDescriptor::from_tiled(complex, box); }),
                       "has no tensor-map element type"));
  const std::int64_t column_major[] = {1, 16};
  const auto transposed =
      StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<float>(), shape, column_major);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>(
                           [&] { cuwrap::TensorMapDescriptor::from_tiled(transposed, box); }),
                       "innermost dimension (1) has stride 16"));
}

class StridedMemoryViewGpu : public cuwrap::testing::DeviceStreamTest {};

// The view form reverses shape and strides into the driver's order: the descriptor is
// byte for byte the one the Buffer form encodes.
TEST_F(StridedMemoryViewGpu, TensorMapFromAViewEqualsTheBufferForm) {
  constexpr std::uint64_t kRows = 64;
  constexpr std::uint64_t kCols = 48;
  constexpr std::uint64_t kPitch = 64;  // elements per row: padded
  const Buffer buffer = device().allocate(kRows * kPitch * sizeof(float), stream());
  const std::int64_t shape[] = {kRows, kCols};
  const std::int64_t strides[] = {kPitch, 1};
  const auto view =
      StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<float>(), shape, strides);
  const std::uint32_t box[] = {16, 8};
  const auto from_view = cuwrap::TensorMapDescriptor::from_tiled(view, box);
  const std::uint64_t tm_shape[] = {kCols, kRows};
  const std::uint64_t tm_strides[] = {kPitch * sizeof(float)};
  const auto from_buffer = cuwrap::TensorMapDescriptor::from_tiled(
      buffer, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, tm_shape, tm_strides, box);
  EXPECT_EQ(std::memcmp(&from_view.handle(), &from_buffer.handle(), sizeof(CUtensorMap)), 0);
}

}  // namespace
