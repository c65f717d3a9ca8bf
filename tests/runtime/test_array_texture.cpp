// CUDA arrays, textures and surfaces: shapes and host copy sizes refused before the
// driver (no GPU needed); on a GPU round trips of 1-D, 2-D (packed and pitched), 3-D and
// layered arrays through buffers and host memory, mipmap levels, a texture sampled with
// linear filtering compared with the bilinear interpolation computed on the host from
// the same data, read modes on 8-bit data, a texture that outlives its Array handle (and
// frees the array after it), and a surface written by a kernel.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Array;
using cuwrap::ArrayOptions;
using cuwrap::Buffer;
using cuwrap::testing::contains;

static_assert(cuwrap::testing::NothrowMoveOnly<Array>);
static_assert(cuwrap::testing::NothrowMoveOnly<cuwrap::TextureObject>);
static_assert(cuwrap::testing::NothrowMoveOnly<cuwrap::SurfaceObject>);

std::string descriptor_error(const ArrayOptions& options) {
  try {
    cuwrap::detail::to_array_descriptor(options);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ArrayChecks, ShapesAndFormatsAreCheckedFirst) {
  EXPECT_TRUE(contains(descriptor_error({.width = 0}), "width is 0"));
  EXPECT_TRUE(contains(descriptor_error({.width = 4, .num_channels = 3}), "num_channels 3"));
  EXPECT_TRUE(contains(descriptor_error({.width = 4, .layered = true}), "layer count"));
  EXPECT_TRUE(contains(descriptor_error({.width = 4, .depth = 2}), "without a height"));
  EXPECT_TRUE(contains(descriptor_error({.width = 4, .format = CU_AD_FORMAT_BC1_UNORM}),
                       "no fixed channel"));
  const CUDA_ARRAY3D_DESCRIPTOR d =
      cuwrap::detail::to_array_descriptor({.width = 8,
                                           .height = 4,
                                           .depth = 3,
                                           .format = CU_AD_FORMAT_HALF,
                                           .num_channels = 2,
                                           .layered = true,
                                           .surface_load_store = true});
  EXPECT_EQ(d.Width, 8U);
  EXPECT_EQ(d.Height, 4U);
  EXPECT_EQ(d.Depth, 3U);
  EXPECT_EQ(d.NumChannels, 2U);
  EXPECT_EQ(d.Flags, static_cast<unsigned>(CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST));
  EXPECT_EQ(cuwrap::detail::channel_bytes(CU_AD_FORMAT_HALF), 2U);
}

// An ArrayRef of a given shape whose handle no driver call ever sees: the checks of the
// host copies run before the driver.
class ShapeOnly : public cuwrap::ArrayRef {
 public:
  explicit ShapeOnly(const ArrayOptions& options)
      : ArrayRef(reinterpret_cast<CUarray>(std::uintptr_t{0x10}),  // NOLINT
                 cuwrap::detail::to_array_descriptor(options)) {}
};

template <class Call>
std::string copy_error(Call&& call) {
  return cuwrap::testing::thrown_message<std::invalid_argument>(static_cast<Call&&>(call));
}

TEST(ArrayChecks, HostCopiesCheckSizesAndPitchBeforeTheDriver) {
  const ShapeOnly image({.width = 8, .height = 4, .format = CU_AD_FORMAT_FLOAT});  // 32-byte rows
  const auto& stream = cuwrap::kLegacyDefaultStream;
  std::vector<float> small(8 * 4 - 1);
  EXPECT_TRUE(contains(copy_error([&] { image.copy_from(small, stream); }),
                       "the host span has 124 bytes but the array needs 128"));
  EXPECT_TRUE(
      contains(copy_error([&] { image.copy_to(small, stream); }), "copy_to: the host span"));
  std::vector<std::byte> rows(128);
  EXPECT_TRUE(
      contains(copy_error([&] { image.copy_from(std::span<const std::byte>(rows), stream, 16); }),
               "pitch 16 is smaller than a row of 32 bytes"));
  // Pitched: 3 rows of 48 bytes and a last row of 32 are needed, 176 bytes.
  std::vector<std::byte> pitched(175);
  EXPECT_TRUE(
      contains(copy_error([&] { image.copy_to(std::span<std::byte>(pitched), stream, 48); }),
               "has 175 bytes but the array needs 176 (4 rows of 32 bytes, pitch 48)"));
  // 3-D: rows of every slice count.
  const ShapeOnly volume(
      {.width = 2, .height = 3, .depth = 4, .format = CU_AD_FORMAT_UNSIGNED_INT8});
  std::vector<std::uint8_t> bytes(2 * 3 * 4 - 1);
  EXPECT_TRUE(contains(copy_error([&] { volume.copy_from(bytes, stream); }),
                       "has 23 bytes but the array needs 24 (12 rows of 2 bytes"));
}

TEST(TextureChecks, ReadModeAndFilteringAreCheckedFirst) {
  // The cuda.core default: integer data read as stored, which cannot be interpolated.
  EXPECT_EQ(cuwrap::TextureOptions{}.read_mode, cuwrap::ReadMode::ElementType);
  const ShapeOnly bytes({.width = 4, .height = 4, .format = CU_AD_FORMAT_UNSIGNED_INT8});
  const std::string linear_default = copy_error(
      [&] { cuwrap::TextureObject t(bytes, {.filter_mode = CU_TR_FILTER_MODE_LINEAR}); });
  EXPECT_TRUE(contains(linear_default, "ReadMode::NormalizedFloat")) << linear_default;
  // The older flag still forces ElementType.
  EXPECT_TRUE(contains(copy_error([&] {
                         cuwrap::TextureObject t(bytes,
                                                 {.filter_mode = CU_TR_FILTER_MODE_LINEAR,
                                                  .read_mode = cuwrap::ReadMode::NormalizedFloat,
                                                  .read_as_integer = true});
                       }),
                       "is not possible"));
  EXPECT_TRUE(contains(copy_error([&] {
                         cuwrap::TextureObject t(bytes,
                                                 {.read_mode = static_cast<cuwrap::ReadMode>(7)});
                       }),
                       "read_mode 7"));
}

// ---- GPU ---------------------------------------------------------------------------

const char* const kKernels = R"(
extern "C" __global__ void sample_2d(cudaTextureObject_t texture, const float* coords, float* out,
                                     int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = tex2D<float>(texture, coords[2 * i], coords[2 * i + 1]);
  }
}

extern "C" __global__ void sample_2d_u8(cudaTextureObject_t texture, const float* coords,
                                        float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = tex2D<unsigned char>(texture, coords[2 * i], coords[2 * i + 1]);
  }
}

extern "C" __global__ void write_surface(cudaSurfaceObject_t surface, int width, int height) {
  const int x = threadIdx.x;
  const int y = blockIdx.x;
  if (x < width && y < height) {
    surf2Dwrite(static_cast<float>(y * 100 + x), surface, x * static_cast<int>(sizeof(float)), y);
  }
}
)";

class ArrayGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  // Copy random bytes into an array of `options`, read them back, compare.
  void expect_round_trip(const ArrayOptions& options, unsigned seed) {
    const Array array(device(), options);
    const std::size_t size = array.size_bytes();
    const auto data = cuwrap::testing::random_bytes(size, seed);
    Buffer src = device().allocate(size, stream());
    Buffer dst = device().allocate(size, stream());
    src.copy_from(std::span<const std::byte>(data), stream());
    dst.fill(std::uint8_t{0}, stream());
    array.copy_from(src, stream());
    array.copy_to(dst, stream());
    EXPECT_EQ(cuwrap::testing::read_back(dst, stream()), data);
  }

  cuwrap::Kernel kernel(const char* name) const {
    return cuwrap::Program(kKernels, cuwrap::CodeType::Cxx)
        .compile(cuwrap::TargetType::Cubin)
        .get_kernel(name);
  }
};

TEST_F(ArrayGpu, RoundTripsOfEveryShape) {
  CUWRAP_REQUIRE_NVRTC();
  expect_round_trip({.width = 100, .format = CU_AD_FORMAT_UNSIGNED_INT8}, 1);
  expect_round_trip({.width = 13, .height = 7, .format = CU_AD_FORMAT_FLOAT, .num_channels = 2}, 2);
  expect_round_trip({.width = 9, .height = 5, .depth = 3, .format = CU_AD_FORMAT_HALF}, 3);
  expect_round_trip(
      {.width = 6, .height = 4, .depth = 5, .format = CU_AD_FORMAT_SIGNED_INT32, .layered = true},
      4);
  expect_round_trip(
      {.width = 32, .depth = 3, .format = CU_AD_FORMAT_UNSIGNED_INT16, .layered = true}, 5);
}

TEST_F(ArrayGpu, PitchedCopiesSkipThePadding) {
  const Array array(device(), {.width = 8, .height = 4, .format = CU_AD_FORMAT_FLOAT});
  constexpr std::size_t kPitch = 48;  // 32 bytes per row plus 16 of padding
  const auto data = cuwrap::testing::random_bytes(kPitch * 4, 9);
  Buffer src = device().allocate(data.size(), stream());
  Buffer packed = device().allocate(array.size_bytes(), stream());
  src.copy_from(std::span<const std::byte>(data), stream());
  array.copy_from(src, stream(), kPitch);
  array.copy_to(packed, stream());
  const auto back = cuwrap::testing::read_back(packed, stream());
  for (std::size_t row = 0; row < 4; ++row) {
    EXPECT_TRUE(std::equal(back.begin() + static_cast<std::ptrdiff_t>(row * 32),
                           back.begin() + static_cast<std::ptrdiff_t>(row * 32 + 32),
                           data.begin() + static_cast<std::ptrdiff_t>(row * kPitch)))
        << "row " << row;
  }
  Buffer small = device().allocate(array.size_bytes() - 1, stream());
  EXPECT_THROW(array.copy_from(small, stream()), std::invalid_argument);
  EXPECT_THROW(array.copy_to(small, stream(), 16), std::invalid_argument);  // pitch < row
}

TEST_F(ArrayGpu, HostCopiesRoundTripEveryShape) {
  const ArrayOptions shapes[] = {
      {.width = 100, .format = CU_AD_FORMAT_UNSIGNED_INT8},
      {.width = 13, .height = 7, .format = CU_AD_FORMAT_FLOAT, .num_channels = 2},
      {.width = 9, .height = 5, .depth = 3, .format = CU_AD_FORMAT_HALF},
      {.width = 6, .height = 4, .depth = 5, .format = CU_AD_FORMAT_SIGNED_INT32, .layered = true}};
  unsigned seed = 20;
  for (const ArrayOptions& options : shapes) {
    const Array array(device(), options);
    const auto data = cuwrap::testing::random_bytes(array.size_bytes(), ++seed);
    std::vector<std::byte> back(data.size());
    array.copy_from(std::span<const std::byte>(data), stream());
    array.copy_to(std::span<std::byte>(back), stream());
    stream().sync();
    EXPECT_EQ(back, data) << "width " << options.width << " height " << options.height << " depth "
                          << options.depth;
    // Host and device copies see the same layout.
    Buffer device_copy = device().allocate(data.size(), stream());
    array.copy_to(device_copy, stream());
    EXPECT_EQ(cuwrap::testing::read_back(device_copy, stream()), data);
  }
}

TEST_F(ArrayGpu, PitchedHostCopiesSkipThePadding) {
  // A 3-D array of 3 slices of 4 rows of 8 floats, from host rows 48 bytes apart.
  const Array array(device(), {.width = 8, .height = 4, .depth = 3, .format = CU_AD_FORMAT_FLOAT});
  constexpr std::size_t kRow = 32;
  constexpr std::size_t kPitch = 48;
  constexpr std::size_t kRows = 12;
  const auto data = cuwrap::testing::random_bytes(kPitch * kRows, 31);
  array.copy_from(std::span<const std::byte>(data), stream(), kPitch);
  std::vector<std::byte> packed(array.size_bytes());
  array.copy_to(std::span<std::byte>(packed), stream());
  std::vector<std::byte> repitched(kPitch * kRows, std::byte{0x5a});
  array.copy_to(std::span<std::byte>(repitched), stream(), kPitch);
  stream().sync();
  for (std::size_t row = 0; row < kRows; ++row) {
    const auto at = [](std::size_t offset) { return static_cast<std::ptrdiff_t>(offset); };
    EXPECT_TRUE(std::equal(packed.begin() + at(row * kRow), packed.begin() + at(row * kRow + kRow),
                           data.begin() + at(row * kPitch)))
        << "row " << row;
    EXPECT_TRUE(std::equal(repitched.begin() + at(row * kPitch),
                           repitched.begin() + at(row * kPitch + kRow),
                           data.begin() + at(row * kPitch)))
        << "row " << row;
    // The padding of the destination is left alone.
    EXPECT_EQ(repitched[row * kPitch + kRow], std::byte{0x5a}) << "row " << row;
  }
}

TEST_F(ArrayGpu, ATextureKeepsItsArrayAlive) {
  CUWRAP_REQUIRE_NVRTC();
  // The device's free memory moves with the other tests that run beside this one (under
  // ctest -j16 by hundreds of MiB), so it cannot show when the array is freed. Instead:
  // once the user's Array is gone, arrays of the same size are made and filled with
  // other values; had the texture's array been freed, the driver would hand its memory
  // to them and the texture would read their values.
  constexpr int kW = 4096;
  constexpr int kH = 4096;
  const ArrayOptions shape{.width = kW, .height = kH, .format = CU_AD_FORMAT_FLOAT};
  std::vector<float> texels(static_cast<std::size_t>(kW) * kH);
  for (std::size_t i = 0; i < texels.size(); ++i) {
    texels[i] = static_cast<float>(i % 1000) * 0.5f;
  }
  std::optional<Array> array(std::in_place, device(), shape);
  array->copy_from(texels, stream());
  const cuwrap::TextureObject texture(*array);
  stream().sync();
  array.reset();  // the user's handle goes first

  const std::vector<float> other(texels.size(), -7.0f);
  std::vector<Array> newcomers;
  for (int i = 0; i < 4; ++i) {
    newcomers.emplace_back(device(), shape);
    newcomers.back().copy_from(other, stream());
  }
  const std::vector<float> coords = {0.5f, 0.5f, 1000.5f, 2.5f, kW - 0.5f, kH - 0.5f};
  Buffer coord_buffer = device().allocate(coords.size() * sizeof(float), stream());
  Buffer out = device().allocate(3 * sizeof(float), stream());
  coord_buffer.copy_from(coords, stream());
  cuwrap::launch(stream(), {.grid = 1, .block = 32}, kernel("sample_2d"), texture.handle(),
                 coord_buffer, out, 3);
  std::vector<float> sampled(3);
  out.copy_to(sampled, stream());
  stream().sync();
  EXPECT_EQ(sampled[0], texels[0]);
  EXPECT_EQ(sampled[1], texels[static_cast<std::size_t>(2 * kW + 1000)]);
  EXPECT_EQ(sampled[2], texels.back());
}

TEST_F(ArrayGpu, ASurfaceKeepsItsArrayAlive) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr int kW = 8;
  constexpr int kH = 3;
  std::optional<Array> array(
      std::in_place, device(),
      ArrayOptions{
          .width = kW, .height = kH, .format = CU_AD_FORMAT_FLOAT, .surface_load_store = true});
  const cuwrap::ArrayRef view = *array;  // a view, to read the array back afterwards
  const cuwrap::SurfaceObject surface(*array);
  array->close();
  EXPECT_EQ(array->handle(), nullptr);
  EXPECT_THROW(cuwrap::TextureObject{*array}, std::invalid_argument);  // closed
  cuwrap::launch(stream(), {.grid = kH, .block = 32}, kernel("write_surface"), surface.handle(), kW,
                 kH);
  std::vector<float> back(kW * kH);
  view.copy_to(back, stream());
  stream().sync();
  EXPECT_EQ(back[static_cast<std::size_t>(2 * kW + 5)], 205.0f);
}

TEST_F(ArrayGpu, ReadModesOfEightBitData) {
  CUWRAP_REQUIRE_NVRTC();
  const Array array(device(), {.width = 4, .height = 1, .format = CU_AD_FORMAT_UNSIGNED_INT8});
  const std::vector<std::uint8_t> texels = {0, 51, 204, 255};
  array.copy_from(texels, stream());
  const std::vector<float> coords = {0.5f, 0.5f, 1.5f, 0.5f, 2.5f, 0.5f, 3.5f, 0.5f};
  Buffer coord_buffer = device().allocate(coords.size() * sizeof(float), stream());
  coord_buffer.copy_from(coords, stream());
  Buffer out = device().allocate(4 * sizeof(float), stream());
  // NormalizedFloat: bytes become floats in [0, 1]; linear filtering is allowed.
  const cuwrap::TextureObject normalized(array, {.filter_mode = CU_TR_FILTER_MODE_LINEAR,
                                                 .read_mode = cuwrap::ReadMode::NormalizedFloat});
  cuwrap::launch(stream(), {.grid = 1, .block = 32}, kernel("sample_2d"), normalized.handle(),
                 coord_buffer, out, 4);
  std::vector<float> sampled(4);
  out.copy_to(sampled, stream());
  stream().sync();
  for (std::size_t i = 0; i < texels.size(); ++i) {
    EXPECT_NEAR(sampled[i], static_cast<float>(texels[i]) / 255.0f, 1e-5f) << "texel " << i;
  }
  // ElementType: the bytes as stored.
  const cuwrap::TextureObject elements(array);
  cuwrap::launch(stream(), {.grid = 1, .block = 32}, kernel("sample_2d_u8"), elements.handle(),
                 coord_buffer, out, 4);
  out.copy_to(sampled, stream());
  stream().sync();
  for (std::size_t i = 0; i < texels.size(); ++i) {
    EXPECT_EQ(sampled[i], static_cast<float>(texels[i])) << "texel " << i;
  }
}

TEST_F(ArrayGpu, MipmapLevelsHalveTheExtents) {
  const cuwrap::MipmappedArray mipmap(device(),
                                      {.width = 16, .height = 8, .format = CU_AD_FORMAT_FLOAT}, 3);
  EXPECT_EQ(mipmap.levels(), 3U);
  const cuwrap::ArrayRef level1 = mipmap.level(1);
  EXPECT_EQ(level1.descriptor().Width, 8U);
  EXPECT_EQ(level1.descriptor().Height, 4U);
  EXPECT_THROW(static_cast<void>(mipmap.level(3)), std::invalid_argument);
  // A level is an array like any other: it round-trips.
  const auto data = cuwrap::testing::random_bytes(level1.size_bytes(), 12);
  Buffer src = device().allocate(data.size(), stream());
  Buffer dst = device().allocate(data.size(), stream());
  src.copy_from(std::span<const std::byte>(data), stream());
  level1.copy_from(src, stream());
  level1.copy_to(dst, stream());
  EXPECT_EQ(cuwrap::testing::read_back(dst, stream()), data);
  const cuwrap::TextureObject texture(mipmap, {.filter_mode = CU_TR_FILTER_MODE_LINEAR,
                                               .mipmap_filter_mode = CU_TR_FILTER_MODE_LINEAR,
                                               .max_mipmap_level_clamp = 2.0f});
  EXPECT_NE(texture.handle(), 0U);
}

TEST_F(ArrayGpu, LinearFilteringInterpolatesAsOnTheHost) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr int kW = 5;
  constexpr int kH = 4;
  std::vector<float> texels(kW * kH);
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      texels[static_cast<std::size_t>(y * kW + x)] = 1.5f * static_cast<float>(x * x) -
                                                     2.0f * static_cast<float>(y) +
                                                     static_cast<float>(x * y) + 0.25f;
    }
  }
  const Array array(device(), {.width = kW, .height = kH, .format = CU_AD_FORMAT_FLOAT});
  Buffer staging = device().allocate(texels.size() * sizeof(float), stream());
  staging.copy_from(texels, stream());
  array.copy_from(staging, stream());
  const cuwrap::TextureObject texture(array, {.filter_mode = CU_TR_FILTER_MODE_LINEAR});

  // Coordinates whose fractional parts are multiples of 1/8, which the hardware's
  // 8-bit interpolation weights represent exactly; some lie beyond the edges (clamped).
  const float xs[] = {0.25f, 0.5f, 1.0f, 1.625f, 3.75f, 4.875f, 6.0f};
  const float ys[] = {-0.5f, 0.5f, 1.125f, 2.875f, 3.5f};
  std::vector<float> coords;
  for (const float y : ys) {
    for (const float x : xs) {
      coords.push_back(x);
      coords.push_back(y);
    }
  }
  const int n = static_cast<int>(coords.size() / 2);
  Buffer coord_buffer = device().allocate(coords.size() * sizeof(float), stream());
  Buffer out = device().allocate(static_cast<std::size_t>(n) * sizeof(float), stream());
  coord_buffer.copy_from(coords, stream());
  cuwrap::launch(stream(), {.grid = 1, .block = 64}, kernel("sample_2d"), texture.handle(),
                 coord_buffer, out, n);
  std::vector<float> sampled(static_cast<std::size_t>(n));
  out.copy_to(sampled, stream());
  stream().sync();

  // Bilinear interpolation with clamp addressing, as the texture unit computes it.
  const auto texel = [&](int x, int y) {
    return texels[static_cast<std::size_t>(std::clamp(y, 0, kH - 1) * kW +
                                           std::clamp(x, 0, kW - 1))];
  };
  for (int i = 0; i < n; ++i) {
    const float xb = coords[static_cast<std::size_t>(2 * i)] - 0.5f;
    const float yb = coords[static_cast<std::size_t>(2 * i + 1)] - 0.5f;
    const int x0 = static_cast<int>(std::floor(xb));
    const int y0 = static_cast<int>(std::floor(yb));
    const float a = xb - static_cast<float>(x0);
    const float b = yb - static_cast<float>(y0);
    const float expected = (1 - a) * (1 - b) * texel(x0, y0) + a * (1 - b) * texel(x0 + 1, y0) +
                           (1 - a) * b * texel(x0, y0 + 1) + a * b * texel(x0 + 1, y0 + 1);
    EXPECT_NEAR(sampled[static_cast<std::size_t>(i)], expected,
                1e-3f * (1.0f + std::fabs(expected)))
        << "at (" << coords[static_cast<std::size_t>(2 * i)] << ", "
        << coords[static_cast<std::size_t>(2 * i + 1)] << ")";
  }
}

TEST_F(ArrayGpu, SurfaceWritesReachTheArray) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr int kW = 12;
  constexpr int kH = 6;
  const Array array(
      device(),
      {.width = kW, .height = kH, .format = CU_AD_FORMAT_FLOAT, .surface_load_store = true});
  const cuwrap::SurfaceObject surface(array);
  cuwrap::launch(stream(), {.grid = kH, .block = 32}, kernel("write_surface"), surface.handle(), kW,
                 kH);
  Buffer out = device().allocate(array.size_bytes(), stream());
  array.copy_to(out, stream());
  std::vector<float> back(kW * kH);
  out.copy_to(back, stream());
  stream().sync();
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      EXPECT_EQ(back[static_cast<std::size_t>(y * kW + x)], static_cast<float>(y * 100 + x));
    }
  }
  const Array plain(device(), {.width = 4, .height = 4});
  EXPECT_THROW(cuwrap::SurfaceObject{plain}, std::invalid_argument);
}

}  // namespace
