// gl_interop_plasma: a CUDA kernel draws an animated plasma into an OpenGL pixel buffer,
// with no copy through the host (cuda.core's gl_interop_plasma.py, headless).
//
// Each frame: map the GL pixel buffer (GraphicsResource) → the kernel writes RGBA pixels
// into it → the guard unmaps it → GL copies the buffer into a texture (glTexSubImage2D from
// the bound GL_PIXEL_UNPACK_BUFFER, on the GPU). After the last frame GL reads the texture
// back and the program saves it as a PNG (top row first, as a window would show it) and
// checks it against the same formula computed on the host.
//
//   gl_interop_plasma [--frames N] [--out plasma.png]
//
// The GL context is made without a display on an EGL device (tests/support/headless_gl.hpp
// opens libEGL.so.1 and libOpenGL.so.0 at run time). Without a GPU, or EGL/GL, it says
// what is missing and exits 0 (docs/graphics.md: the packages a headless machine needs).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graphics.hpp>

#include "gl_interop_plasma.hpp"
#include "headless_gl.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kPlasmaSource = R"(
extern "C" __global__ void plasma(unsigned char* output, int width, int height, float t) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const float u = (float)x / (float)width;
  const float v = (float)y / (float)height;
  float val = 0.0f;
  val += sinf(u * 10.0f + t);                   // horizontal ripple
  val += sinf(v * 10.0f + t * 0.7f);            // vertical ripple
  val += sinf((u + v) * 10.0f + t * 0.5f);      // diagonal ripple
  const float cx = u - 0.5f;                    // a circle around the centre
  const float cy = v - 0.5f;
  val += sinf(sqrtf(cx * cx + cy * cy) * 20.0f - t * 2.0f);
  const float cx2 = u - 0.5f + 0.3f * sinf(t * 0.3f);  // one whose centre drifts
  const float cy2 = v - 0.5f + 0.3f * cosf(t * 0.4f);
  val += sinf(sqrtf(cx2 * cx2 + cy2 * cy2) * 15.0f + t * 1.5f);
  val = (val + 5.0f) / 10.0f;
  const float r = sinf(val * 6.2831853f) * 0.5f + 0.5f;  // colours 120 degrees apart
  const float g = sinf(val * 6.2831853f + 2.094f) * 0.5f + 0.5f;
  const float b = sinf(val * 6.2831853f + 4.189f) * 0.5f + 0.5f;
  const int i = (y * width + x) * 4;
  output[i + 0] = (unsigned char)(r * 255.0f);
  output[i + 1] = (unsigned char)(g * 255.0f);
  output[i + 2] = (unsigned char)(b * 255.0f);
  output[i + 3] = 255;
}
)";

namespace gl = cuwrap::testing::gl;

int plasma_example(int frames, const std::string& out_path) {
  if (const std::string reason = example::gpu_unavailable_reason(); !reason.empty()) {
    std::cout << "cuwrap example skipped: gl_interop_plasma needs a GPU: " << reason << '\n';
    return 0;
  }
  cuwrap::Device device(0);
  device.set_current();
  cuwrap::Stream stream = device.create_stream();

  // GL: a context without a window, a pixel buffer for CUDA to write, a texture to show.
  std::string why_not;
  const auto context = cuwrap::testing::HeadlessGL::create(why_not, 0);
  if (!context) {
    std::cout << "cuwrap example skipped: gl_interop_plasma needs a headless GL context: "
              << why_not << '\n';
    return 0;
  }
  std::cout << "GL: " << context->description() << '\n';
  const auto& g = context->gl();
  constexpr int kW = plasma::kWidth;
  constexpr int kH = plasma::kHeight;
  constexpr std::size_t kBytes = std::size_t{kW} * kH * 4;
  unsigned pbo = 0;
  g.GenBuffers(1, &pbo);
  g.BindBuffer(gl::kPixelUnpackBuffer, pbo);
  g.BufferData(gl::kPixelUnpackBuffer, static_cast<std::intptr_t>(kBytes), nullptr,
               gl::kStreamDraw);
  g.BindBuffer(gl::kPixelUnpackBuffer, 0);
  unsigned texture = 0;
  g.GenTextures(1, &texture);
  g.BindTexture(gl::kTexture2D, texture);
  g.TexParameteri(gl::kTexture2D, gl::kTextureMinFilter, static_cast<int>(gl::kNearest));
  g.TexParameteri(gl::kTexture2D, gl::kTextureMagFilter, static_cast<int>(gl::kNearest));
  g.TexImage2D(gl::kTexture2D, 0, static_cast<int>(gl::kRgba8), kW, kH, 0, gl::kRgba,
               gl::kUnsignedByte, nullptr);

  cuwrap::Program program(kPlasmaSource, cuwrap::CodeType::Cxx, {.name = "plasma.cu"});
  const cuwrap::Kernel kernel = program.compile(cuwrap::TargetType::Cubin).get_kernel("plasma");
  const cuwrap::LaunchConfig config{.grid = cuwrap::Dim3{(kW + 15) / 16, (kH + 15) / 16},
                                    .block = cuwrap::Dim3{16, 16}};

  // The key line: CUDA may now write the GL buffer. WriteDiscard: every frame rewrites all.
  cuwrap::GraphicsResource resource =
      cuwrap::GraphicsResource::from_gl_buffer(pbo, cuwrap::GraphicsRegisterFlags::WriteDiscard);
  for (int frame = 0; frame < frames; ++frame) {
    {
      const cuwrap::MappedGraphicsResource mapped = resource.map(stream);
      cuwrap::launch(stream, config, kernel, mapped.buffer().handle(), kW, kH,
                     plasma::frame_time(frame));
    }  // unmapped on `stream`: GL's next use of the buffer waits for the kernel
    g.BindBuffer(gl::kPixelUnpackBuffer, pbo);  // glTexSubImage2D reads the bound buffer
    g.TexSubImage2D(gl::kTexture2D, 0, 0, 0, kW, kH, gl::kRgba, gl::kUnsignedByte, nullptr);
    g.BindBuffer(gl::kPixelUnpackBuffer, 0);
  }
  resource.close();

  // Read the texture back (GL's row 0 is the bottom one) and save it top row first.
  std::vector<std::uint8_t> pixels(kBytes);
  g.PixelStorei(gl::kPackAlignment, 1);
  g.GetTexImage(gl::kTexture2D, 0, gl::kRgba, gl::kUnsignedByte, pixels.data());
  g.BindTexture(gl::kTexture2D, 0);
  g.DeleteTextures(1, &texture);
  g.DeleteBuffers(1, &pbo);
  if (const unsigned error = context->error(); error != gl::kNoError) {
    std::cerr << "gl_interop_plasma: FAILED: GL error " << error << '\n';
    return 1;
  }
  std::vector<std::uint8_t> top_first(kBytes);
  constexpr std::size_t kRow = std::size_t{kW} * 4;
  for (std::size_t y = 0; y < kH; ++y) {
    std::copy_n(pixels.begin() + static_cast<std::ptrdiff_t>(y * kRow), kRow,
                top_first.begin() + static_cast<std::ptrdiff_t>((kH - 1 - y) * kRow));
  }
  if (!plasma::write_file(out_path, plasma::encode_png(top_first, kW, kH))) {
    std::cerr << "gl_interop_plasma: FAILED: cannot write " << out_path << '\n';
    return 1;
  }

  // Check the last frame against the formula on the host (a channel may differ by the
  // rounding of one float operation).
  const float t = plasma::frame_time(frames - 1);
  std::size_t off = 0;
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      const auto want = plasma::pixel(x, y, kW, kH, t);
      for (std::size_t c = 0; c < 4; ++c) {
        const int got =
            pixels[(static_cast<std::size_t>(y) * kW + static_cast<std::size_t>(x)) * 4 + c];
        off += std::abs(got - int{want[c]}) > 2 ? 1 : 0;
      }
    }
  }
  std::cout << frames << " frames of " << kW << "x" << kH << ", last frame saved as " << out_path
            << "; " << off << " channels differ from the host's formula\n";
  return off == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 60;
  std::string out_path = "plasma.png";
  for (int i = 1; i < argc; i += 2) {
    const std::string_view option = argv[i];
    if (i + 1 == argc) {
      std::cerr << "usage: gl_interop_plasma [--frames N] [--out plasma.png]\n";
      return 2;
    }
    if (option == "--frames") {
      frames = std::atoi(argv[i + 1]);
    } else if (option == "--out") {
      out_path = argv[i + 1];
    } else {
      std::cerr << "usage: gl_interop_plasma [--frames N] [--out plasma.png]\n";
      return 2;
    }
  }
  if (frames < 1) {
    std::cerr << "gl_interop_plasma: --frames must be at least 1\n";
    return 2;
  }
  return example::run("gl_interop_plasma", [&] { return plasma_example(frames, out_path); });
}
