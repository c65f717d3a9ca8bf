// Pitched 2-D memory (Device::allocate_pitched, PitchedBufferRef over any buffer), its
// copies and 2-D fills, and textures over linear and pitched memory with the double and
// complex formats PyCUDA's texture tests use. Argument checks run without a GPU.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::PitchedBuffer;
using cuwrap::PitchedBufferRef;
using cuwrap::TextureFormat;

static_assert(std::is_base_of_v<PitchedBufferRef, PitchedBuffer>);
static_assert(std::is_trivially_copyable_v<PitchedBufferRef>);
static_assert(std::is_convertible_v<PitchedBufferRef, cuwrap::Pitched2D>);

using cuwrap::testing::contains;

TEST(PitchedBufferRefChecks, RowsMustFitThePitchAndTheBuffer) {
  EXPECT_THROW(PitchedBufferRef(0x1000, 64, 4, 32), std::invalid_argument) << "pitch < width";
  EXPECT_THROW(PitchedBufferRef(0, 64, 4, 64), std::invalid_argument) << "null address";
  const cuwrap::BufferRef buffer(0x1000, 1000);
  const PitchedBufferRef fits(buffer, 100, 10, 100);
  EXPECT_EQ(fits.pitch(), 100U);
  EXPECT_EQ(fits.bytes().size(), 1000U);
  EXPECT_EQ(static_cast<cuwrap::Pitched2D>(fits).ptr, CUdeviceptr{0x1000});
  try {
    (void)PitchedBufferRef(buffer, 100, 10, 128);
    FAIL() << "rows reaching past the buffer were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "1252")) << e.what();  // 9 * 128 + 100
    EXPECT_TRUE(contains(e.what(), "1000")) << e.what();
  }
  EXPECT_EQ(fits.width<float>(), 25U);
  EXPECT_THROW((void)PitchedBufferRef(0x1000, 6, 2, 8).width<float>(), std::invalid_argument);
  std::vector<std::byte> too_small(999);
  EXPECT_THROW(fits.copy_from(std::span<const std::byte>(too_small)), std::invalid_argument);
}

TEST(PitchedBufferChecks, ClosedAndEmptyAreRefused) {
  PitchedBuffer closed;
  EXPECT_FALSE(closed.is_open());
  EXPECT_THROW((void)closed.pitch(), std::logic_error);
  EXPECT_THROW((void)PitchedBuffer::allocate(0, 0, 4), std::invalid_argument);
  EXPECT_THROW((void)PitchedBuffer::allocate(0, 64, 4, 3), std::invalid_argument);
}

TEST(TextureFormats, DoublesAndComplexNumbersAsPyCudaReadsThem) {
  constexpr TextureFormat f = cuwrap::texture_format_of<float>();
  EXPECT_EQ(f.format, CU_AD_FORMAT_FLOAT);
  EXPECT_EQ(f.channels, 1U);
  constexpr TextureFormat d = cuwrap::texture_format_of<double>();
  EXPECT_EQ(d.format, CU_AD_FORMAT_SIGNED_INT32);
  EXPECT_EQ(d.channels, 2U);
  EXPECT_EQ(d.element_bytes(), sizeof(double));
  constexpr TextureFormat cf = cuwrap::texture_format_of<std::complex<float>>();
  EXPECT_EQ(cf.format, CU_AD_FORMAT_FLOAT);
  EXPECT_EQ(cf.channels, 2U);
  constexpr TextureFormat cd = cuwrap::texture_format_of<std::complex<double>>();
  EXPECT_EQ(cd.channels, 4U);
  EXPECT_EQ(cd.element_bytes(), sizeof(std::complex<double>));
  EXPECT_EQ(cuwrap::texture_format_of<std::uint8_t>().format, CU_AD_FORMAT_UNSIGNED_INT8);
  EXPECT_EQ(cuwrap::texture_format_of<std::int16_t>().format, CU_AD_FORMAT_SIGNED_INT16);
  EXPECT_EQ((TextureFormat{CU_AD_FORMAT_FLOAT, 3}.element_bytes()), 0U) << "3 channels";
}

TEST(TextureFormats, TexturesOverMemoryRefuseBadFormatsBeforeTheDriver) {
  const cuwrap::BufferRef memory(0x1000, 12);
  EXPECT_THROW(cuwrap::TextureObject(memory, TextureFormat{CU_AD_FORMAT_FLOAT, 3}),
               std::invalid_argument);
  EXPECT_THROW(cuwrap::TextureObject(memory, cuwrap::texture_format_of<double>()),
               std::invalid_argument)
      << "12 bytes are not whole doubles";
}

constexpr const char* kPitchedKernels = R"(
extern "C" __global__ void add_rows(float* data, unsigned long long pitch, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < width && y < height) {
    float* row = (float*)((char*)data + y * pitch);
    row[x] += (float)y;
  }
}
extern "C" __global__ void sample_pitched(cudaTextureObject_t tex, float* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < width && y < height) out[y * width + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}
extern "C" __global__ void fetch_doubles(cudaTextureObject_t tex, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0 * cuwrap_fetch_double(tex, i);
}
extern "C" __global__ void fetch_complex(cudaTextureObject_t tex, double2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = cuwrap_fetch_complex_double(tex, i);
}
)";

class PitchedGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    CUWRAP_REQUIRE_NVRTC();
    code_.emplace(cuwrap::Program(std::string(cuwrap::kTextureFetchHelpers) + kPitchedKernels,
                                  cuwrap::CodeType::Cxx)
                      .compile(cuwrap::TargetType::Cubin));
  }
  std::optional<cuwrap::ObjectCode> code_;
};

TEST_F(PitchedGpu, RowsCopyFillAndRunThroughAKernel) {
  const int width = 100;
  const int height = 37;
  PitchedBuffer image = device().allocate_pitched(width * sizeof(float), height, sizeof(float));
  EXPECT_GE(image.pitch(), width * sizeof(float));
  EXPECT_EQ(image.height(), static_cast<std::size_t>(height));
  image.fill(std::uint32_t{0x3F800000}, stream());  // 1.0f, the rows only
  stream().sync();
  std::vector<float> host(static_cast<std::size_t>(width) * height, 0.0F);
  image.copy_to(host);
  EXPECT_EQ(host.front(), 1.0F);
  EXPECT_EQ(host.back(), 1.0F);

  cuwrap::launch(stream(), {.grid = {1, static_cast<unsigned>(height)}, .block = 128},
                 code_->get_kernel("add_rows"), image.handle(),
                 static_cast<unsigned long long>(image.pitch()), width, height);
  image.copy_to(std::as_writable_bytes(std::span(host)), stream());
  stream().sync();
  EXPECT_EQ(host[0], 1.0F);
  EXPECT_EQ(host[static_cast<std::size_t>(width) * (height - 1)], static_cast<float>(height));

  // copy_2d takes the pitched buffer; a packed host image goes in with copy_from.
  std::vector<float> ramp(host.size());
  for (std::size_t i = 0; i < ramp.size(); ++i) {
    ramp[i] = static_cast<float>(i);
  }
  image.copy_from(ramp);
  PitchedBuffer other = device().allocate_pitched(width * sizeof(float), height);
  cuwrap::copy_2d(other, image, width * sizeof(float), height, stream());
  stream().sync();
  std::vector<float> back(ramp.size());
  other.copy_to(back);
  EXPECT_EQ(back, ramp);
}

TEST_F(PitchedGpu, TextureOverPitchedMemorySamplesEachElement) {
  const int width = 64;
  const int height = 16;
  PitchedBuffer image = device().allocate_pitched(width * sizeof(float), height);
  std::vector<float> values(static_cast<std::size_t>(width) * height);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = 0.25F * static_cast<float>(i);
  }
  image.copy_from(values);
  cuwrap::TextureObject texture(image, cuwrap::texture_format_of<float>());
  cuwrap::Buffer out = device().allocate(values.size() * sizeof(float), stream());
  cuwrap::launch(stream(), {.grid = {1, static_cast<unsigned>(height)}, .block = 64},
                 code_->get_kernel("sample_pitched"), texture.handle(), out.as<float>(), width,
                 height);
  std::vector<float> sampled(values.size(), -1.0F);
  out.as<float>().copy_to(std::span<float>(sampled), stream());
  stream().sync();
  EXPECT_EQ(sampled, values);
}

TEST_F(PitchedGpu, LinearTexturesOfDoublesAndComplexDoubles) {
  const int n = 1000;
  std::vector<double> doubles(n);
  std::vector<std::complex<double>> complexes(n);
  for (int i = 0; i < n; ++i) {
    doubles[i] = 1.0 / (i + 1);
    complexes[i] = {i * 0.5, -i * 0.25};
  }
  cuwrap::Buffer d = device().allocate(n * sizeof(double));
  cuwrap::copy(d, doubles);
  cuwrap::Buffer c = device().allocate(n * sizeof(std::complex<double>));
  cuwrap::copy(c, complexes);
  cuwrap::TextureObject dtex(cuwrap::BufferRef(d), cuwrap::texture_format_of<double>());
  cuwrap::TextureObject ctex(cuwrap::BufferRef(c),
                             cuwrap::texture_format_of<std::complex<double>>());
  cuwrap::Buffer dout = device().allocate(n * sizeof(double));
  cuwrap::Buffer cout = device().allocate(n * sizeof(std::complex<double>));
  const auto config = cuwrap::LaunchConfig::for_elements(n, 128);
  cuwrap::launch(stream(), config, code_->get_kernel("fetch_doubles"), dtex.handle(), dout.handle(),
                 n);
  cuwrap::launch(stream(), config, code_->get_kernel("fetch_complex"), ctex.handle(), cout.handle(),
                 n);
  stream().sync();
  std::vector<double> twice(n);
  cuwrap::copy(twice, dout);
  std::vector<std::complex<double>> fetched(n);
  cuwrap::copy(fetched, cout);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(twice[i], 2.0 * doubles[i]) << i;
    ASSERT_EQ(fetched[i], complexes[i]) << i;
  }
}

}  // namespace
