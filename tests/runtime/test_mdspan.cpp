// cuwrap::view (cuda::std::mdspan) and cuwrap::std_view (std::mdspan, where the standard
// library has it) of a Buffer: the layouts, and the checks made before a view exists.
//
// The buffers wrap host memory (fake_buffer, no driver call), so every test
// runs without a GPU; the nvcc example examples/mdspan_transpose.cu indexes device memory.
#include <version>
#if __has_include(<cuda/std/mdspan>) || defined(__cpp_lib_mdspan)
#include <cuwrap/mdspan.hpp>
#else  // neither CCCL nor std::mdspan: <cuwrap/mdspan.hpp> would stop with an #error
#define CUWRAP_HAS_CUDA_MDSPAN 0
#define CUWRAP_HAS_STD_MDSPAN 0
#endif
#include <cuwrap/buffer.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "fake_buffer.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

// A Buffer over `values` (not owning them).
template <class T>
cuwrap::Buffer wrap(std::vector<T>& values) {
  return cuwrap::testing::fake_buffer(reinterpret_cast<CUdeviceptr>(values.data()),
                                      values.size() * sizeof(T));
}

#if CUWRAP_HAS_CUDA_MDSPAN

static_assert(std::is_same_v<decltype(cuwrap::view<float>(std::declval<cuwrap::Buffer&>(), 2, 3)),
                             cuda::std::mdspan<float, cuda::std::dextents<std::size_t, 2>>>,
              "integer extents: std::size_t indices, layout_right");
static_assert(
    std::is_same_v<
        decltype(cuwrap::view<float, cuda::std::layout_left>(std::declval<cuwrap::Buffer&>(), 2,
                                                             3)),
        cuda::std::mdspan<float, cuda::std::dextents<std::size_t, 2>, cuda::std::layout_left>>);
// Passed to a kernel by value: trivially copyable.
static_assert(std::is_trivially_copyable_v<cuda::std::mdspan<float, cuda::std::dextents<int, 2>>>);

TEST(BufferView, RowMajorByDefault) {
  std::vector<float> values(12);
  std::iota(values.begin(), values.end(), 0.0f);
  cuwrap::Buffer buffer = wrap(values);
  const auto matrix = cuwrap::view<float>(buffer, 3, 4);
  EXPECT_EQ(matrix.extent(0), 3U);
  EXPECT_EQ(matrix.extent(1), 4U);
  EXPECT_EQ(matrix(1, 2), 6.0f);  // row 1, column 2 of a 3x4 row-major matrix
  EXPECT_EQ(matrix.data_handle(), values.data());
  matrix(2, 3) = -1.0f;
  EXPECT_EQ(values[11], -1.0f) << "the view writes the buffer's memory";
}

TEST(BufferView, ColumnMajorWhenAsked) {
  std::vector<int> values(12);
  std::iota(values.begin(), values.end(), 0);
  cuwrap::Buffer buffer = wrap(values);
  const auto matrix = cuwrap::view<int, cuda::std::layout_left>(buffer, 3, 4);
  EXPECT_EQ(matrix(1, 2), 7);  // 1 + 2 * 3
}

TEST(BufferView, StaticExtentsAndStridedMappings) {
  std::vector<double> values(16);
  std::iota(values.begin(), values.end(), 0.0);
  cuwrap::Buffer buffer = wrap(values);
  const auto fixed = cuwrap::view<double>(buffer, cuda::std::extents<int, 2, 8>{});
  static_assert(decltype(fixed)::static_extent(1) == 8);
  EXPECT_EQ(fixed(1, 3), 11.0);
  // Every other column of a 4x4 row-major matrix: strides 4 and 2.
  const cuda::std::layout_stride::mapping strided(cuda::std::dextents<int, 2>(4, 2),
                                                  cuda::std::array<int, 2>{4, 2});
  const auto columns = cuwrap::view<double>(buffer, strided);
  EXPECT_EQ(columns(3, 1), 14.0);
  // The mapping needs required_span_size() elements, not the product of the extents.
  std::vector<double> short_values(14);  // holds the 8 elements, not the span of 15
  cuwrap::Buffer short_buffer = wrap(short_values);
  const std::string message =
      thrown_message<std::invalid_argument>([&] { cuwrap::view<double>(short_buffer, strided); });
  EXPECT_TRUE(contains(message, "need 120 bytes")) << message;  // 1 + 3*4 + 1*2 = 15 doubles
}

TEST(BufferView, ConstElementsGiveAReadOnlyView) {
  std::vector<float> values(4, 2.0f);
  cuwrap::Buffer buffer = wrap(values);
  const auto view = cuwrap::view<const float>(buffer, 4);
  static_assert(std::is_same_v<decltype(view)::reference, const float&>);
  EXPECT_EQ(view(3), 2.0f);
}

TEST(BufferView, ExtentsNeedingMoreBytesThanTheBufferNameBothSizes) {
  std::vector<float> values(10);
  cuwrap::Buffer buffer = wrap(values);
  const std::string message =
      thrown_message<std::invalid_argument>([&] { cuwrap::view<float>(buffer, 3, 4); });
  EXPECT_TRUE(contains(message, "48 bytes")) << message;
  EXPECT_TRUE(contains(message, "40 bytes")) << message;
  EXPECT_NO_THROW(cuwrap::view<float>(buffer, 2, 5)) << "exactly the buffer's size";
  EXPECT_NO_THROW(cuwrap::view<float>(buffer, 3)) << "a smaller view is fine";
}

TEST(BufferView, AMisalignedBufferIsRefused) {
  std::vector<double> values(4);
  cuwrap::Buffer buffer = wrap(values);
  const cuwrap::BufferRef part = buffer.slice(4, 16);  // 4 bytes in: no double lives there
  const std::string message =
      thrown_message<std::invalid_argument>([&] { cuwrap::view<double>(part, 2); });
  EXPECT_TRUE(contains(message, "not aligned to 8 bytes")) << message;
  EXPECT_NO_THROW(cuwrap::view<float>(part, 4)) << "a float may start there";
}

TEST(BufferView, NegativeAndOverflowingExtentsAreNamed) {
  std::vector<char> values(64);
  cuwrap::Buffer buffer = wrap(values);
  std::string message =
      thrown_message<std::invalid_argument>([&] { cuwrap::view<char>(buffer, 4, -2); });
  EXPECT_TRUE(contains(message, "extent 1 is -2")) << message;
  const std::size_t huge = std::size_t{1} << 40;
  message = thrown_message<std::invalid_argument>([&] { cuwrap::view<char>(buffer, huge, huge); });
  EXPECT_TRUE(contains(message, "product of the extents")) << message;
  // An empty extent makes an empty view, whatever the others are.
  EXPECT_EQ(cuwrap::view<char>(buffer, huge, 0).size(), 0U);
}

TEST(BufferView, AClosedBufferIsALogicError) {
  cuwrap::Buffer closed;
  EXPECT_THROW(cuwrap::view<float>(closed, 1), std::logic_error);
}

#else
TEST(BufferView, NeedsCccl) {
  GTEST_SKIP() << "the toolkit has no CCCL (<cuda/std/mdspan>): cuwrap::view is not declared";
}
#endif  // CUWRAP_HAS_CUDA_MDSPAN

#if CUWRAP_HAS_STD_MDSPAN
TEST(BufferStdView, TheStandardMdspanWithTheSameChecks) {
  std::vector<float> values(12);
  std::iota(values.begin(), values.end(), 0.0f);
  cuwrap::Buffer buffer = wrap(values);
  const std::mdspan<float, std::dextents<std::size_t, 2>> matrix =
      cuwrap::std_view<float>(buffer, 3, 4);
  EXPECT_EQ((matrix[std::array<std::size_t, 2>{1, 2}]), 6.0f);
  EXPECT_THROW(cuwrap::std_view<float>(buffer, 4, 4), std::invalid_argument);
}
#else
TEST(BufferStdView, NeedsAStandardLibraryWithMdspan) {
  GTEST_SKIP() << "this standard library has no std::mdspan (__cpp_lib_mdspan)";
}
#endif

}  // namespace
