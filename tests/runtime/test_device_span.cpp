// DeviceSpan<T>: element-counted views, Buffer::as<T>() / BufferRef::as<T>(), the checks
// made before any driver call (which need no GPU), and, with a GPU, copies between host
// spans and device spans and a DeviceSpan passed to launch() as T*.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"
#include "toolkit_libraries.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::BufferRef;
using cuwrap::DeviceSpan;
using cuwrap::testing::contains;

template <class Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

// A type that is not trivially copyable but that a program declares safe to pass by its
// bytes.
struct Declared {
  int a = 0;
  float b = 0;
  Declared(int x, float y) : a(x), b(y) {}
  Declared(const Declared& other) : a(other.a), b(other.b) {}
  Declared& operator=(const Declared& other) {
    a = other.a;
    b = other.b;
    return *this;
  }
};

}  // namespace

template <>
inline constexpr bool cuwrap::is_kernel_argument_v<Declared> = true;

namespace {

// ---- without a GPU ----------------------------------------------------------------

TEST(DeviceSpan, CountsAndSubspansAreInElements) {
  const DeviceSpan<float> span(0x1000, 10);
  EXPECT_EQ(span.size(), 10U);
  EXPECT_EQ(span.size_bytes(), 40U);
  EXPECT_FALSE(span.empty());
  EXPECT_EQ(span.data(), reinterpret_cast<float*>(0x1000));

  const DeviceSpan<float> middle = span.subspan(2, 3);
  EXPECT_EQ(middle.handle(), 0x1000U + 2 * sizeof(float));
  EXPECT_EQ(middle.size(), 3U);
  EXPECT_EQ(span.subspan(4).size(), 6U);
  EXPECT_EQ(span.subspan(4).handle(), 0x1000U + 16U);
  EXPECT_EQ(span.subspan(10).size(), 0U) << "an empty tail is a valid subspan";
  EXPECT_EQ(span.first(4), span.subspan(0, 4));
  EXPECT_EQ(span.last(4), span.subspan(6, 4));
  EXPECT_EQ(span.bytes(), BufferRef(0x1000, 40));
  EXPECT_TRUE(DeviceSpan<double>().empty());
}

TEST(DeviceSpan, OutOfRangeSubspansNameOffsetCountAndSize) {
  const DeviceSpan<int> span(0x2000, 8);
  const std::string message = invalid_argument_message([&] { (void)span.subspan(6, 3); });
  EXPECT_TRUE(contains(message, "offset 6")) << message;
  EXPECT_TRUE(contains(message, "count 3")) << message;
  EXPECT_TRUE(contains(message, "8 elements")) << message;
  EXPECT_THROW((void)span.subspan(9), std::invalid_argument);
  EXPECT_THROW((void)span.first(9), std::invalid_argument);
  EXPECT_THROW((void)span.last(9), std::invalid_argument);
  // An offset near SIZE_MAX must not wrap around into range.
  EXPECT_THROW((void)span.subspan(SIZE_MAX, 2), std::invalid_argument);
}

TEST(DeviceSpan, NullAddressWithElementsIsRefused) {
  EXPECT_THROW(DeviceSpan<float>(0, 4), std::invalid_argument);
  EXPECT_TRUE(DeviceSpan<float>(0, 0).empty());
}

TEST(DeviceSpan, ConvertsToConstButNotBack) {
  const DeviceSpan<float> span(0x3000, 4);
  const DeviceSpan<const float> read_only = span;
  EXPECT_EQ(read_only.handle(), span.handle());
  EXPECT_EQ(read_only.size(), 4U);
  static_assert(std::is_convertible_v<DeviceSpan<float>, DeviceSpan<const float>>);
  static_assert(!std::is_convertible_v<DeviceSpan<const float>, DeviceSpan<float>>);
  static_assert(std::is_trivially_copyable_v<DeviceSpan<float>>);
  EXPECT_EQ(sizeof(DeviceSpan<float>), sizeof(CUdeviceptr) + sizeof(std::size_t));
}

TEST(DeviceSpan, BufferRefAsChecksSizeAndAlignment) {
  const BufferRef bytes(0x4000, 64);
  const DeviceSpan<std::uint32_t> words = bytes.as<std::uint32_t>();
  EXPECT_EQ(words.size(), 16U);
  EXPECT_EQ(words.handle(), 0x4000U);
  EXPECT_EQ(bytes.as<double>().size(), 8U);

  const std::string size_message =
      invalid_argument_message([&] { (void)BufferRef(0x4000, 10).as<float>(); });
  EXPECT_TRUE(contains(size_message, "10 bytes")) << size_message;
  EXPECT_TRUE(contains(size_message, "element size 4")) << size_message;
  const std::string align_message =
      invalid_argument_message([&] { (void)BufferRef(0x4002, 8).as<float>(); });
  EXPECT_TRUE(contains(align_message, "aligned")) << align_message;
}

TEST(DeviceSpan, BufferAsViewsTheWholeBuffer) {
  const cuwrap::Buffer buffer = cuwrap::testing::fake_buffer(0x8000, 24);
  const DeviceSpan<std::uint16_t> halves = buffer.as<std::uint16_t>();
  EXPECT_EQ(halves.size(), 12U);
  EXPECT_EQ(halves.handle(), 0x8000U);
  EXPECT_EQ(buffer.as<double>().size(), 3U);
  EXPECT_THROW((void)cuwrap::testing::fake_buffer(0x8000, 20).as<double>(), std::invalid_argument)
      << "20 bytes are no whole number of doubles";
  EXPECT_THROW((void)cuwrap::Buffer().as<float>(), std::logic_error);
}

TEST(DeviceSpan, CopiesCompareElementCountsBeforeTheDriver) {
  const DeviceSpan<float> span(0x1000, 4);
  std::vector<float> five(5);
  const cuwrap::StreamRef stream(reinterpret_cast<CUstream>(0x1234));
  const std::string message =
      invalid_argument_message([&] { span.copy_from(std::span<const float>(five), stream); });
  EXPECT_TRUE(contains(message, "4 elements")) << message;
  EXPECT_TRUE(contains(message, "5")) << message;
  EXPECT_THROW(span.copy_to(std::span<float>(five), stream), std::invalid_argument);
  EXPECT_THROW(span.copy_to(DeviceSpan<float>(0x2000, 3), stream), std::invalid_argument);
  EXPECT_THROW(span.copy_from(DeviceSpan<const float>(0x2000, 5), stream), std::invalid_argument);
}

TEST(DeviceSpan, LaunchPassesItAsAPointer) {
  const DeviceSpan<float> span(0x5000, 8);
  const DeviceSpan<const int> read_only(0x6000, 2);
  const Declared declared(3, 0.5F);
  bool called = false;
  cuwrap::detail::with_packed_arguments(
      [&](void** pointers, std::size_t count, const std::size_t* sizes,
          const std::string_view* names) {
        called = true;
        ASSERT_EQ(count, 3U);
        EXPECT_EQ(*static_cast<float* const*>(pointers[0]), reinterpret_cast<float*>(0x5000));
        EXPECT_EQ(*static_cast<const int* const*>(pointers[1]),
                  reinterpret_cast<const int*>(0x6000));
        EXPECT_EQ(sizes[0], sizeof(void*));
        EXPECT_EQ(sizes[1], sizeof(void*));
        // The compiler spells the name (g++ "float*", clang "float *"): compare without spaces.
        std::string name(names[0]);
        name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
        EXPECT_EQ(name, "float*");
        EXPECT_EQ(static_cast<const Declared*>(pointers[2])->a, 3);
        EXPECT_EQ(static_cast<const Declared*>(pointers[2])->b, 0.5F);
        EXPECT_EQ(sizes[2], sizeof(Declared));
      },
      span, read_only, declared);
  EXPECT_TRUE(called);
  static_assert(!std::is_trivially_copyable_v<Declared>);
  static_assert(cuwrap::is_kernel_argument_v<Declared>);
  static_assert(cuwrap::is_kernel_argument_v<int>);
  static_assert(!cuwrap::is_kernel_argument_v<std::string>);
}

// ---- with a GPU ------------------------------------------------------------------

constexpr const char* kScaleKernel = R"(
extern "C" __global__ void scale(float* x, const float* y, float a, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * y[i];
}
)";

class DeviceSpanGpu : public cuwrap::testing::DeviceStreamTest {};

TEST_F(DeviceSpanGpu, PartialCopiesNeedNoByteArithmetic) {
  std::vector<std::int32_t> host(100);
  std::iota(host.begin(), host.end(), 1);
  cuwrap::Buffer buffer = device().allocate(host.size() * sizeof(std::int32_t), stream());
  const DeviceSpan<std::int32_t> span = buffer.as<std::int32_t>();
  ASSERT_EQ(span.size(), host.size());
  buffer.fill(std::uint8_t{0}, stream());
  span.subspan(10, 20).copy_from(std::span<const std::int32_t>(host).subspan(50, 20), stream());

  std::vector<std::int32_t> back(100, -1);
  span.copy_to(back, stream());
  std::vector<std::int32_t> middle(20);
  span.subspan(10, 20).copy_to(middle, stream());
  stream().sync();
  for (std::size_t i = 0; i < back.size(); ++i) {
    const std::int32_t expected = i >= 10 && i < 30 ? host[i + 40] : 0;
    ASSERT_EQ(back[i], expected) << "element " << i;
  }
  EXPECT_EQ(middle.front(), 51);
  EXPECT_EQ(middle.back(), 70);
}

TEST_F(DeviceSpanGpu, DeviceToDeviceCopiesBetweenSpans) {
  std::vector<double> host{1.5, 2.5, 3.5, 4.5};
  cuwrap::Buffer a = device().allocate(4 * sizeof(double), stream());
  cuwrap::Buffer b = device().allocate(4 * sizeof(double), stream());
  a.as<double>().copy_from(host, stream());
  b.as<double>().first(2).copy_from(a.as<double>().last(2), stream());
  b.as<double>().last(2).copy_from(a.as<double>().first(2), stream());
  std::vector<double> out(4);
  b.as<double>().copy_to(out, stream());
  stream().sync();
  EXPECT_EQ(out, (std::vector<double>{3.5, 4.5, 1.5, 2.5}));
}

TEST_F(DeviceSpanGpu, KernelReceivesTheSpanAsAPointer) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::Kernel kernel = cuwrap::Program(kScaleKernel, cuwrap::CodeType::Cxx)
                                    .compile(cuwrap::TargetType::Cubin)
                                    .get_kernel("scale");
  constexpr std::size_t kCount = 1000;
  std::vector<float> host(kCount);
  std::iota(host.begin(), host.end(), 0.0F);
  cuwrap::Buffer x = device().allocate(kCount * sizeof(float), stream());
  cuwrap::Buffer y = device().allocate(kCount * sizeof(float), stream());
  const DeviceSpan<float> xs = x.as<float>();
  const DeviceSpan<const float> ys = y.as<float>();
  y.as<float>().copy_from(host, stream());
  x.fill(std::uint8_t{0}, stream());
  // Only the second half: the kernel sees the subspan's address and count.
  const DeviceSpan<float> half = xs.subspan(kCount / 2);
  cuwrap::launch(stream(), {.grid = 2, .block = 256}, kernel, half, ys.subspan(kCount / 2), 3.0F,
                 static_cast<unsigned long long>(half.size()));
  std::vector<float> out(kCount);
  xs.copy_to(out, stream());
  stream().sync();
  EXPECT_EQ(out[0], 0.0F);
  EXPECT_EQ(out[kCount / 2 - 1], 0.0F);
  EXPECT_EQ(out[kCount / 2], 3.0F * host[kCount / 2]);
  EXPECT_EQ(out[kCount - 1], 3.0F * host[kCount - 1]);
}

}  // namespace
