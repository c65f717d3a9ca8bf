// GraphicsResource: OpenGL interop, headless. GL objects are made in a GL context on an
// EGL device (tests/support/headless_gl.hpp), written by CUDA kernels through the
// mapping and read back with GL. Without a GPU, or EGL/GL, the tests that need them skip
// and say which is missing.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graphics.hpp>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "headless_gl.hpp"
#include "toolkit_libraries.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::GraphicsMapFlags;
using cuwrap::GraphicsRegisterFlags;
using cuwrap::GraphicsResource;
using cuwrap::MappedGraphicsResource;
namespace gl = cuwrap::testing::gl;

static_assert(cuwrap::testing::NothrowMoveOnly<GraphicsResource>);
static_assert(cuwrap::testing::NothrowMoveOnly<MappedGraphicsResource>);
// The GL types are GL's own: a program using a GL loader passes its GLuint and GLenum.
static_assert(std::is_same_v<cuwrap::GLuint, unsigned int>);
static_assert(std::is_same_v<cuwrap::GLenum, unsigned int>);

// API.md 5.7 as written there.
static_assert(requires(GraphicsResource r, const GraphicsResource& cr, cuwrap::StreamRef s,
                       const MappedGraphicsResource& m, cuwrap::GLuint name,
                       cuwrap::GLenum target) {
  { GraphicsResource::from_gl_buffer(name) } -> std::same_as<GraphicsResource>;
  {
    GraphicsResource::from_gl_buffer(name, GraphicsRegisterFlags::WriteDiscard)
    } -> std::same_as<GraphicsResource>;
  { GraphicsResource::from_gl_image(name, target) } -> std::same_as<GraphicsResource>;
  {
    GraphicsResource::from_gl_image(name, target, GraphicsRegisterFlags::SurfaceLoadStore)
    } -> std::same_as<GraphicsResource>;
  { r.map(s) } -> std::same_as<MappedGraphicsResource>;
  { cr.handle() } -> std::same_as<CUgraphicsResource>;
  { m.buffer() } -> std::same_as<cuwrap::BufferRef>;
  { m.array() } -> std::same_as<cuwrap::ArrayRef>;
  { m.array(1u, 2u) } -> std::same_as<cuwrap::ArrayRef>;
});
static_assert(noexcept(std::declval<GraphicsResource&>().close()));
static_assert(!std::is_copy_constructible_v<GraphicsResource> &&
              !std::is_copy_constructible_v<MappedGraphicsResource>);

// ---- without a GPU ----------------------------------------------------------------

TEST(GraphicsFlags, CombineToTheDriversRegistrationFlags) {
  EXPECT_EQ(static_cast<unsigned>(GraphicsRegisterFlags::ReadOnly),
            unsigned{CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY});
  EXPECT_EQ(static_cast<unsigned>(GraphicsRegisterFlags::WriteDiscard),
            unsigned{CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD});
  EXPECT_EQ(static_cast<unsigned>(GraphicsRegisterFlags::SurfaceLoadStore),
            unsigned{CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST});
  EXPECT_EQ(static_cast<unsigned>(GraphicsRegisterFlags::TextureGather),
            unsigned{CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER});
  constexpr auto both =
      GraphicsRegisterFlags::SurfaceLoadStore | GraphicsRegisterFlags::TextureGather;
  EXPECT_EQ(static_cast<unsigned>(both), unsigned{CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST |
                                                  CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER});
  EXPECT_EQ(both & GraphicsRegisterFlags::TextureGather, GraphicsRegisterFlags::TextureGather);
  EXPECT_EQ(both & GraphicsRegisterFlags::ReadOnly, GraphicsRegisterFlags::None);
  auto flags = GraphicsRegisterFlags::SurfaceLoadStore;
  flags |= GraphicsRegisterFlags::TextureGather;
  EXPECT_EQ(flags, both);
  EXPECT_EQ(static_cast<unsigned>(GraphicsMapFlags::ReadOnly),
            unsigned{CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY});
  EXPECT_EQ(static_cast<unsigned>(GraphicsMapFlags::WriteDiscard),
            unsigned{CU_GRAPHICS_MAP_RESOURCE_FLAGS_WRITE_DISCARD});
}

TEST(GraphicsArguments, NullHandlesAndImagesAreRejectedBeforeTheDriver) {
  EXPECT_THROW(GraphicsResource::from_handle(nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(GraphicsResource::from_egl_image(nullptr), std::invalid_argument);
}

TEST(GraphicsArguments, MapAllChecksItsListBeforeTheDriver) {
  const cuwrap::StreamRef stream = cuwrap::kLegacyDefaultStream;
  EXPECT_TRUE(GraphicsResource::map_all({}, stream).empty());
  GraphicsResource* const none[] = {nullptr};
  try {
    (void)GraphicsResource::map_all(none, stream);
    ADD_FAILURE() << "map_all accepted a null resource";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resources[0]"), std::string::npos) << e.what();
  }
}

// ---- GL only (Mesa's software EGL device does) --------------------------------------

TEST(HeadlessGL, ABufferRoundTripsThroughGL) {
  std::string why_not;
  const auto context = cuwrap::testing::HeadlessGL::create(why_not);
  if (!context) {
    GTEST_SKIP() << "no headless GL context: " << why_not;
  }
  const auto& g = context->gl();
  unsigned buffer = 0;
  g.GenBuffers(1, &buffer);
  ASSERT_NE(buffer, 0u) << context->description();
  std::vector<std::uint8_t> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<std::uint8_t>(i * 7 + 3);
  }
  g.BindBuffer(gl::kArrayBuffer, buffer);
  g.BufferData(gl::kArrayBuffer, static_cast<std::intptr_t>(data.size()), data.data(),
               gl::kStreamDraw);
  std::vector<std::uint8_t> back(data.size());
  g.GetBufferSubData(gl::kArrayBuffer, 0, static_cast<std::intptr_t>(back.size()), back.data());
  g.DeleteBuffers(1, &buffer);
  EXPECT_EQ(context->error(), gl::kNoError);
  EXPECT_EQ(back, data) << context->description();
}

// ---- GPU and GL ------------------------------------------------------------------

const char* const kGraphicsKernels = R"(
extern "C" __global__ void fill_bytes(unsigned char* data, unsigned long long n, int salt) {
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    data[i] = (unsigned char)(i * 7 + salt);
  }
}

extern "C" __global__ void write_rgba(cudaSurfaceObject_t surface, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  if (x < width && y < height) {
    surf2Dwrite(make_uchar4(x, y, x ^ y, 255), surface, x * 4, y);
  }
}
)";

// The pixel (x, y) that write_rgba writes.
std::vector<std::uint8_t> expected_rgba(int width, int height) {
  std::vector<std::uint8_t> out;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      out.insert(out.end(), {static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(y),
                             static_cast<std::uint8_t>(x ^ y), 255});
    }
  }
  return out;
}

std::vector<std::uint8_t> expected_bytes(std::size_t n, int salt) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::uint8_t>(i * 7 + static_cast<std::size_t>(salt));
  }
  return out;
}

class GraphicsGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    std::string why_not;
    context_ = cuwrap::testing::HeadlessGL::create(why_not, 0);
    if (!context_) {
      GTEST_SKIP() << "no headless GL context: " << why_not;
    }
    // EGL_NV_device_cuda names the CUDA device; without it, NVIDIA's renderer is trusted.
    if (context_->cuda_device() < 0 &&
        context_->description().find("NVIDIA") == std::string::npos) {
      GTEST_SKIP() << "the EGL device is no CUDA device (" << context_->description() << ")";
    }
  }

  const cuwrap::testing::GLFunctions& gl() const { return context_->gl(); }

  // A GL buffer of `size` bytes (undefined contents), not bound afterwards.
  unsigned make_buffer(std::size_t size) {
    unsigned buffer = 0;
    gl().GenBuffers(1, &buffer);
    gl().BindBuffer(gl::kPixelUnpackBuffer, buffer);
    gl().BufferData(gl::kPixelUnpackBuffer, static_cast<std::intptr_t>(size), nullptr,
                    gl::kDynamicCopy);
    gl().BindBuffer(gl::kPixelUnpackBuffer, 0);
    buffers_.push_back(buffer);
    return buffer;
  }

  // A `width` x `height` RGBA8 texture, zeroed.
  unsigned make_texture(int width, int height) {
    unsigned texture = 0;
    gl().GenTextures(1, &texture);
    gl().BindTexture(gl::kTexture2D, texture);
    gl().TexParameteri(gl::kTexture2D, gl::kTextureMinFilter, static_cast<int>(gl::kNearest));
    gl().TexParameteri(gl::kTexture2D, gl::kTextureMagFilter, static_cast<int>(gl::kNearest));
    const std::vector<std::uint8_t> zeros(static_cast<std::size_t>(width * height * 4));
    gl().TexImage2D(gl::kTexture2D, 0, static_cast<int>(gl::kRgba8), width, height, 0, gl::kRgba,
                    gl::kUnsignedByte, zeros.data());
    gl().BindTexture(gl::kTexture2D, 0);
    textures_.push_back(texture);
    return texture;
  }

  std::vector<std::uint8_t> read_buffer(unsigned buffer, std::size_t size) {
    std::vector<std::uint8_t> back(size);
    gl().BindBuffer(gl::kPixelPackBuffer, buffer);
    gl().GetBufferSubData(gl::kPixelPackBuffer, 0, static_cast<std::intptr_t>(size), back.data());
    gl().BindBuffer(gl::kPixelPackBuffer, 0);
    return back;
  }

  std::vector<std::uint8_t> read_texture(unsigned texture, int width, int height) {
    std::vector<std::uint8_t> back(static_cast<std::size_t>(width * height * 4));
    gl().PixelStorei(gl::kPackAlignment, 1);
    gl().BindTexture(gl::kTexture2D, texture);
    gl().GetTexImage(gl::kTexture2D, 0, gl::kRgba, gl::kUnsignedByte, back.data());
    gl().BindTexture(gl::kTexture2D, 0);
    return back;
  }

  cuwrap::Kernel kernel(const char* name) const {
    return cuwrap::Program(kGraphicsKernels, cuwrap::CodeType::Cxx)
        .compile(cuwrap::TargetType::Cubin)
        .get_kernel(name);
  }

  void fill(cuwrap::BufferRef memory, int salt) {
    cuwrap::launch(stream(), {.grid = 8, .block = 128}, kernel("fill_bytes"), memory.handle(),
                   static_cast<unsigned long long>(memory.size()), salt);
  }

  void TearDown() override {
    if (context_) {
      if (!buffers_.empty()) {
        gl().DeleteBuffers(static_cast<int>(buffers_.size()), buffers_.data());
      }
      if (!textures_.empty()) {
        gl().DeleteTextures(static_cast<int>(textures_.size()), textures_.data());
      }
    }
  }

  std::unique_ptr<cuwrap::testing::HeadlessGL> context_;
  std::vector<unsigned> buffers_;
  std::vector<unsigned> textures_;
};

TEST_F(GraphicsGpu, AKernelWritesAPixelBufferThatGLReadsBack) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kSize = 64 * 1024 + 17;
  const unsigned pbo = make_buffer(kSize);
  GraphicsResource resource =
      GraphicsResource::from_gl_buffer(pbo, GraphicsRegisterFlags::WriteDiscard);
  EXPECT_EQ(resource.flags(), GraphicsRegisterFlags::WriteDiscard);
  EXPECT_FALSE(resource.is_mapped());
  {
    const MappedGraphicsResource mapped = resource.map(stream());
    EXPECT_TRUE(mapped.is_mapped());
    EXPECT_TRUE(resource.is_mapped());
    const cuwrap::BufferRef memory = mapped.buffer();
    ASSERT_GE(memory.size(), kSize);  // the GL buffer's size (a driver may round it up)
    fill(memory.slice(0, kSize), 3);
  }  // unmapped on stream()
  EXPECT_FALSE(resource.is_mapped());
  stream().sync();
  EXPECT_EQ(read_buffer(pbo, kSize), expected_bytes(kSize, 3)) << context_->description();
  EXPECT_EQ(context_->error(), gl::kNoError);
}

TEST_F(GraphicsGpu, AKernelWritesATextureThroughASurfaceThatGLReadsBack) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr int kW = 67;
  constexpr int kH = 33;
  const unsigned texture = make_texture(kW, kH);
  GraphicsResource resource = GraphicsResource::from_gl_image(
      texture, gl::kTexture2D, GraphicsRegisterFlags::SurfaceLoadStore);
  {
    MappedGraphicsResource mapped = resource.map(stream());
    const cuwrap::ArrayRef array = mapped.array();
    EXPECT_EQ(array.context(), resource.context());
    EXPECT_EQ(array.descriptor().Width, std::size_t{kW});
    EXPECT_EQ(array.descriptor().Height, std::size_t{kH});
    EXPECT_EQ(array.element_size(), 4u);
    EXPECT_NE(array.descriptor().Flags & CUDA_ARRAY3D_SURFACE_LDST, 0u);
    const cuwrap::SurfaceObject surface(array);
    cuwrap::launch(stream(), {.grid = cuwrap::Dim3{(kW + 31) / 32, kH}, .block = 32u},
                   kernel("write_rgba"), surface.handle(), kW, kH);
    mapped.unmap();  // early, before the surface goes: the surface is only used by the kernel
    EXPECT_FALSE(mapped.is_mapped());
  }
  stream().sync();
  EXPECT_EQ(read_texture(texture, kW, kH), expected_rgba(kW, kH)) << context_->description();
}

TEST_F(GraphicsGpu, ATextureIsFilledFromAndCopiedToBufferRefs) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr int kW = 40;
  constexpr int kH = 9;
  constexpr std::size_t kBytes = std::size_t{kW} * kH * 4;
  const unsigned texture = make_texture(kW, kH);
  GraphicsResource resource = GraphicsResource::from_gl_image(texture, gl::kTexture2D);
  cuwrap::Buffer staging = device().allocate(2 * kBytes, stream());
  const cuwrap::BufferRef source = cuwrap::BufferRef(staging).slice(0, kBytes);
  const cuwrap::BufferRef copy = cuwrap::BufferRef(staging).slice(kBytes, kBytes);
  fill(source, 11);
  {
    const MappedGraphicsResource mapped = resource.map(stream());
    mapped.array().copy_from(source, stream());
    mapped.array().copy_to(copy, stream());
  }
  std::vector<std::uint8_t> back(kBytes);
  cuwrap::driver::cuMemcpyDtoHAsync(back.data(), copy.handle(), kBytes, stream().handle());
  stream().sync();
  EXPECT_EQ(back, expected_bytes(kBytes, 11));
  EXPECT_EQ(read_texture(texture, kW, kH), expected_bytes(kBytes, 11));
}

TEST_F(GraphicsGpu, SeveralResourcesAreMappedInOneCall) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kSize = 4096;
  const unsigned a = make_buffer(kSize);
  const unsigned b = make_buffer(kSize / 2);
  GraphicsResource ra = GraphicsResource::from_gl_buffer(a);
  GraphicsResource rb = GraphicsResource::from_gl_buffer(b);
  {
    GraphicsResource* const both[] = {&ra, &rb};
    std::vector<MappedGraphicsResource> mapped = GraphicsResource::map_all(both, stream());
    ASSERT_EQ(mapped.size(), 2u);
    EXPECT_TRUE(ra.is_mapped() && rb.is_mapped());
    ASSERT_GE(mapped[0].buffer().size(), kSize);
    ASSERT_GE(mapped[1].buffer().size(), kSize / 2);
    EXPECT_NE(mapped[0].buffer().handle(), mapped[1].buffer().handle());
    fill(mapped[0].buffer().slice(0, kSize), 1);
    fill(mapped[1].buffer().slice(0, kSize / 2), 2);
    GraphicsResource* const twice[] = {&ra, &ra};
    EXPECT_THROW((void)GraphicsResource::map_all(twice, stream()), std::logic_error);
  }
  EXPECT_FALSE(ra.is_mapped() || rb.is_mapped());
  stream().sync();
  EXPECT_EQ(read_buffer(a, kSize), expected_bytes(kSize, 1));
  EXPECT_EQ(read_buffer(b, kSize / 2), expected_bytes(kSize / 2, 2));
}

TEST_F(GraphicsGpu, AnEGLImageOfATextureIsRegisteredMappedAndUnregistered) {
  const unsigned texture = make_texture(16, 8);
  void* const image = context_->create_texture_image(texture);
  if (image == nullptr) {
    GTEST_SKIP() << "eglCreateImage(EGL_GL_TEXTURE_2D) gave no image (" << context_->description()
                 << ")";
  }
  {
    std::optional<GraphicsResource> registered;
    try {
      registered.emplace(GraphicsResource::from_egl_image(image));
    } catch (const cuwrap::DriverError& e) {
      context_->destroy_image(image);
      if (e.code() == CUDA_ERROR_NOT_SUPPORTED) {
        GTEST_SKIP() << "the driver registers no EGL image of a GL texture here: " << e.what();
      }
      throw;
    }
    GraphicsResource& resource = *registered;
    EXPECT_TRUE(resource.is_open());
    EXPECT_NE(resource.handle(), nullptr);
    {
      const MappedGraphicsResource mapped = resource.map(stream());
      EXPECT_TRUE(resource.is_mapped());
    }
    EXPECT_FALSE(resource.is_mapped());
    resource.close();
    EXPECT_FALSE(resource.is_open());
  }
  stream().sync();
  context_->destroy_image(image);
}

TEST_F(GraphicsGpu, MisuseIsAClearError) {
  const unsigned pbo = make_buffer(256);
  GraphicsResource resource = GraphicsResource::from_gl_buffer(pbo);
  MappedGraphicsResource mapped = resource.map(stream(), GraphicsMapFlags::WriteDiscard);
  EXPECT_THROW((void)resource.map(stream()), std::logic_error);  // mapped twice
  EXPECT_THROW((void)mapped.array(), cuwrap::GraphicsError);     // a buffer, not an image
  mapped.unmap();
  EXPECT_FALSE(mapped.is_mapped());
  EXPECT_THROW((void)mapped.buffer(), std::logic_error);  // used after unmap
  mapped.unmap();                                         // a second unmap does nothing
  // A new mapping is not the old guard's: it stays unmapped, the new one mapped.
  MappedGraphicsResource again = resource.map(stream());
  EXPECT_FALSE(mapped.is_mapped());
  EXPECT_TRUE(again.is_mapped());
  // close() while mapped unmaps first; the guard then reports it and throws on use.
  resource.close();
  EXPECT_FALSE(resource.is_open());
  EXPECT_FALSE(again.is_mapped());
  EXPECT_THROW((void)again.buffer(), std::logic_error);
  EXPECT_THROW((void)resource.map(stream()), std::logic_error);  // map after close
  EXPECT_THROW((void)resource.handle(), std::logic_error);
  resource.close();  // idempotent
  stream().sync();
}

TEST_F(GraphicsGpu, AGLNameThatIsNoBufferIsADriverErrorNamingIt) {
  constexpr cuwrap::GLuint kNoSuchBuffer = 987654;
  try {
    (void)GraphicsResource::from_gl_buffer(kNoSuchBuffer);
    ADD_FAILURE() << "registered a GL buffer that does not exist";
  } catch (const cuwrap::GraphicsError& e) {
    EXPECT_NE(std::string(e.what()).find("987654"), std::string::npos) << e.what();
    EXPECT_EQ(e.function(), "cuGraphicsGLRegisterBuffer");
  }
}

TEST_F(GraphicsGpu, RegisteringWithoutACurrentGLContextIsMisuse) {
  const unsigned pbo = make_buffer(256);
  buffers_.clear();  // the context goes first; its objects go with it
  context_.reset();
  try {
    (void)GraphicsResource::from_gl_buffer(pbo);
    ADD_FAILURE() << "registered a GL buffer without a current GL context";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no OpenGL or EGL context"), std::string::npos)
        << e.what();
  }
}

}  // namespace
