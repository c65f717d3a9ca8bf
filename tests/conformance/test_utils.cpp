// Port of cuda.core's tests/test_utils.py (launch dimensions and StridedMemoryView over
// a Buffer): one TEST per Python test function (see README.md for those not ported and
// why: most of the file views NumPy, CuPy and Numba arrays).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Dim3;
using cuwrap::StridedMemoryView;
using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

// cuda.core's cast_to_3_tuple is cuwrap's Dim3: missing extents are 1.
TEST(test_utils, test_cast_to_3_tuple_success) {
  EXPECT_EQ(Dim3{}, (Dim3{1, 1, 1}));
  const Dim3 two = 2;
  EXPECT_EQ(two, (Dim3{2, 1, 1}));
  EXPECT_EQ((Dim3{2, 3}), (Dim3{2, 3, 1}));
  const Dim3 full{2, 3, 4};
  EXPECT_EQ(full.x, 2U);
  EXPECT_EQ(full.y, 3U);
  EXPECT_EQ(full.z, 4U);
  EXPECT_EQ(full.volume(), 24U);
}

// Dense strides in elements, C (row-major) or F (column-major) order.
std::vector<std::int64_t> dense_strides(const std::vector<std::int64_t>& shape, bool c_order) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t step = 1;
  if (c_order) {
    for (std::size_t i = shape.size(); i-- > 0;) {
      strides[i] = step;
      step *= shape[i];
    }
  } else {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      strides[i] = step;
      step *= shape[i];
    }
  }
  return strides;
}

class test_utils_gpu : public cuwrap::testing::DeviceTest {};

TEST_F(test_utils_gpu, test_from_buffer) {
  const std::vector<std::vector<std::int64_t>> shapes{{}, {2, 3}, {10, 10}, {10, 13, 11}};
  for (const auto& shape : shapes) {
    for (const cuwrap::DataType dtype :
         {cuwrap::data_type_of<std::uint8_t>(), cuwrap::data_type_of<std::int32_t>()}) {
      for (const bool c_order : {true, false}) {
        for (const bool readonly : {true, false}) {
          SCOPED_TRACE(::testing::PrintToString(shape) + " itemsize " +
                       std::to_string(dtype.bits / 8) + (c_order ? " C" : " F") +
                       (readonly ? " readonly" : ""));
          std::size_t elements = 1;
          for (const std::int64_t extent : shape) {
            elements *= static_cast<std::size_t>(extent);
          }
          const cuwrap::Buffer buffer = device().allocate(elements * (dtype.bits / 8U));
          const std::vector<std::int64_t> strides = dense_strides(shape, c_order);
          const StridedMemoryView view =
              StridedMemoryView::from_buffer(buffer, dtype, shape, strides, readonly);
          EXPECT_EQ(view.ptr(), buffer.handle());
          EXPECT_EQ(std::vector<std::int64_t>(view.shape().begin(), view.shape().end()), shape);
          EXPECT_EQ(std::vector<std::int64_t>(view.strides().begin(), view.strides().end()),
                    strides);
          EXPECT_EQ(view.dtype(), dtype);
          EXPECT_EQ(view.device_id(), device().device_id());
          EXPECT_EQ(view.readonly(), readonly);
        }
      }
    }
  }
}

// Checked before anything else: no GPU needed (the buffer's address is never used).
TEST(test_utils, test_from_buffer_too_small) {
  const cuwrap::Buffer buffer = cuwrap::testing::fake_buffer(0x10000, 20);
  const std::int64_t shape[] = {5, 4};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(
        StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<std::uint16_t>(), shape));
  });
  EXPECT_TRUE(contains(thrown, "40")) << thrown;
  EXPECT_TRUE(contains(thrown, "20")) << thrown;
}

TEST(test_utils, test_from_buffer_disallowed_negative_offset) {
  const cuwrap::Buffer buffer = cuwrap::testing::fake_buffer(0x10000, 20);
  const std::int64_t shape[] = {5, 4};
  const std::int64_t strides[] = {-4, 1};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(StridedMemoryView::from_buffer(buffer, cuwrap::data_type_of<std::uint8_t>(),
                                                     shape, strides));
  });
  EXPECT_TRUE(contains(thrown, "negative")) << thrown;
}

}  // namespace
