// Port of cuda.core's tests/test_tensor_map.py: one TEST per Python test function
// (classes become fixtures of the same name; see README.md for those not ported and why).
//
// cuda.core reads the shape from the array it is given; cuwrap's from_tiled/from_im2col
// take it explicitly (shape innermost first, byte strides of dimensions 1 and up). The
// checks cuwrap makes before the driver run without a GPU on an aligned address.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"

#include <cuda.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::TensorMapDescriptor;
using cuwrap::TensorMapOptions;
using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

constexpr CUtensorMapDataType kFloat32 = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
constexpr CUdeviceptr kAlignedAddress = 0x10000;  // never dereferenced: refused before the driver

// Device 0 with TMA (compute capability 9.0 and later), else the test skips.
class TmaTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (!device().properties().tensor_map_access_supported()) {
      GTEST_SKIP() << "the device has no TMA (compute capability 9.0 and later)";
    }
  }
};

// ---- TestTensorMapDescriptorCreation ----

class TestTensorMapDescriptorCreation : public TmaTest {
 protected:
  // A rows x cols float32 matrix (cols innermost) in a new buffer, tiled by `box`.
  TensorMapDescriptor matrix(std::uint32_t box_cols, std::uint32_t box_rows,
                             const TensorMapOptions& options = {}) {
    buffer_ = device().allocate(64 * 64 * sizeof(float));
    const std::uint64_t shape[] = {64, 64};
    const std::uint64_t strides[] = {64 * sizeof(float)};
    const std::uint32_t box[] = {box_cols, box_rows};
    return TensorMapDescriptor::from_tiled(buffer_, kFloat32, shape, strides, box, options);
  }
  static bool encoded(const TensorMapDescriptor& map) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(&map.handle());
    for (std::size_t i = 0; i < sizeof(CUtensorMap); ++i) {
      if (bytes[i] != 0) {
        return true;
      }
    }
    return false;
  }

  cuwrap::Buffer buffer_;
};

// cuda.core refuses TensorMapDescriptor(); cuwrap's default one is all zeros (a value to
// assign later), which a kernel cannot use.
TEST(TestTensorMapDescriptorCreation_cpu, test_cannot_instantiate_directly) {
  const TensorMapDescriptor empty;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&empty.handle());
  bool all_zero = true;
  for (std::size_t i = 0; i < sizeof(CUtensorMap); ++i) {
    all_zero = all_zero && bytes[i] == 0;
  }
  EXPECT_TRUE(all_zero);
}

TEST_F(TestTensorMapDescriptorCreation, test_from_tiled_1d) {
  buffer_ = device().allocate(1024 * sizeof(float));
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {64};
  const TensorMapDescriptor map =
      TensorMapDescriptor::from_tiled(buffer_, kFloat32, shape, {}, box);
  EXPECT_TRUE(encoded(map));
}

TEST_F(TestTensorMapDescriptorCreation, test_from_tiled_2d) {
  EXPECT_TRUE(encoded(matrix(32, 32)));
}

TEST_F(TestTensorMapDescriptorCreation, test_from_tiled_3d) {
  buffer_ = device().allocate(16 * 16 * 16 * sizeof(float));
  const std::uint64_t shape[] = {16, 16, 16};
  const std::uint64_t strides[] = {16 * sizeof(float), 16 * 16 * sizeof(float)};
  const std::uint32_t box[] = {8, 8, 8};
  EXPECT_TRUE(encoded(TensorMapDescriptor::from_tiled(buffer_, kFloat32, shape, strides, box)));
}

TEST_F(TestTensorMapDescriptorCreation, test_from_tiled_with_swizzle) {
  EXPECT_TRUE(encoded(matrix(32, 32, TensorMapOptions{.swizzle = CU_TENSOR_MAP_SWIZZLE_128B})));
}

TEST_F(TestTensorMapDescriptorCreation, test_from_tiled_with_l2_promotion) {
  EXPECT_TRUE(encoded(
      matrix(32, 32, TensorMapOptions{.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B})));
}

TEST_F(TestTensorMapDescriptorCreation, test_from_tiled_with_oob_fill) {
  EXPECT_TRUE(encoded(matrix(
      32, 32, TensorMapOptions{.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA})));
}

// ---- TestTensorMapDescriptorValidation (refused before the driver: no GPU) ----

TEST(TestTensorMapDescriptorValidation, test_invalid_rank_zero) {
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(TensorMapDescriptor::from_tiled(kAlignedAddress, kFloat32, {}, {}, {}));
  });
  EXPECT_TRUE(contains(thrown, "rank")) << thrown;
}

TEST(TestTensorMapDescriptorValidation, test_box_dim_rank_mismatch) {
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {32, 32};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(TensorMapDescriptor::from_tiled(kAlignedAddress, kFloat32, shape, {}, box));
  });
  EXPECT_TRUE(contains(thrown, "box has 2 entries")) << thrown;
}

TEST(TestTensorMapDescriptorValidation, test_box_dim_out_of_range) {
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {512};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(TensorMapDescriptor::from_tiled(kAlignedAddress, kFloat32, shape, {}, box));
  });
  EXPECT_TRUE(contains(thrown, "box[0] = 512")) << thrown;
}

TEST(TestTensorMapDescriptorValidation, test_element_strides_rank_mismatch) {
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {64};
  const std::uint32_t element_strides[] = {1, 1};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(
        TensorMapDescriptor::from_tiled(kAlignedAddress, kFloat32, shape, {}, box,
                                        TensorMapOptions{.element_strides = element_strides}));
  });
  EXPECT_TRUE(contains(thrown, "element_strides")) << thrown;
}

// cuda.core: data_type=42 is a TypeError; an int is no CUtensorMapDataType in C++, and
// casting 42 to it would be undefined behaviour (the 13.0 enum's range is 0..15, every
// value of it a type). The refusal of a type the toolkit names but the descriptor cannot
// take is TensorMapChecks.PackedSubByteTypesAreRefusedByName's.
TEST(TestTensorMapDescriptorValidation, test_invalid_data_type) {
  EXPECT_FALSE((std::is_convertible_v<int, CUtensorMapDataType>));
  EXPECT_FALSE((std::is_constructible_v<CUtensorMapDataType, int>));
}

// ---- TestTensorMapReplaceAddress ----

class TestTensorMapReplaceAddress : public TmaTest {
 protected:
  TensorMapDescriptor map_of(const cuwrap::Buffer& buffer) const {
    const std::uint64_t shape[] = {1024};
    const std::uint32_t box[] = {64};
    return TensorMapDescriptor::from_tiled(buffer, kFloat32, shape, {}, box);
  }
};

TEST_F(TestTensorMapReplaceAddress, test_replace_address) {
  const cuwrap::Buffer first = device().allocate(1024 * sizeof(float));
  TensorMapDescriptor map = map_of(first);
  const cuwrap::Buffer second = device().allocate(1024 * sizeof(float));
  EXPECT_NO_THROW(map.replace_address(second));
}

TEST_F(TestTensorMapReplaceAddress, test_replace_address_requires_device_accessible) {
  const cuwrap::Buffer first = device().allocate(1024 * sizeof(float));
  TensorMapDescriptor map = map_of(first);
  alignas(16) static thread_local float host[1024] = {};
  cuwrap::Buffer host_buffer =
      cuwrap::testing::fake_host_buffer(reinterpret_cast<CUdeviceptr>(host), sizeof(host));
  EXPECT_THROW(map.replace_address(host_buffer), std::invalid_argument);
  host_buffer.close();
}

// ---- TestTensorMapIm2col ----

class TestTensorMapIm2col : public TmaTest {};

TEST_F(TestTensorMapIm2col, test_from_im2col_3d) {
  // batch 1, height 32, 64 channels (channels innermost).
  const cuwrap::Buffer buffer = device().allocate(1 * 32 * 64 * sizeof(float));
  const std::uint64_t shape[] = {64, 32, 1};
  const std::uint64_t strides[] = {64 * sizeof(float), 32 * 64 * sizeof(float)};
  const int lower[] = {0};
  const int upper[] = {4};
  const TensorMapDescriptor map =
      TensorMapDescriptor::from_im2col(buffer, kFloat32, shape, strides, lower, upper, 64, 4);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&map.handle());
  bool any = false;
  for (std::size_t i = 0; i < sizeof(CUtensorMap); ++i) {
    any = any || bytes[i] != 0;
  }
  EXPECT_TRUE(any);
}

TEST(TestTensorMapIm2col_cpu, test_from_im2col_rank_validation) {
  const std::uint64_t shape[] = {1024};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(
        TensorMapDescriptor::from_im2col(kAlignedAddress, kFloat32, shape, {}, {}, {}, 64, 4));
  });
  EXPECT_TRUE(contains(thrown, "rank")) << thrown;
}

TEST(TestTensorMapIm2col_cpu, test_from_im2col_corner_rank_mismatch) {
  const std::uint64_t shape[] = {64, 32, 1};
  const std::uint64_t strides[] = {64 * sizeof(float), 32 * 64 * sizeof(float)};
  const int lower[] = {0, 0};
  const int upper[] = {4};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    static_cast<void>(TensorMapDescriptor::from_im2col(kAlignedAddress, kFloat32, shape, strides,
                                                       lower, upper, 64, 4));
  });
  EXPECT_TRUE(contains(thrown, "lower_corner")) << thrown;
}

}  // namespace
