// pycuda_style: a PyCUDA program written with cuwrap, as its users write it: blocking
// copies (memcpy_htod / memcpy_dtoh), a page-locked host buffer registered in place
// (register_host_memory) that a kernel writes through its mapping, pitched memory
// (mem_alloc_pitch) read through a 2-D texture, and a launch sized with a fixed block.
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kSource = R"(
extern "C" __global__ void blur_rows(cudaTextureObject_t image, float* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x >= width || y >= height) return;
  // Clamped addressing: the neighbours of the edges are the edges themselves.
  float left = tex2D<float>(image, x - 0.5f, y + 0.5f);
  float mid = tex2D<float>(image, x + 0.5f, y + 0.5f);
  float right = tex2D<float>(image, x + 1.5f, y + 0.5f);
  out[y * width + x] = (left + mid + right) / 3.0f;
}
)";

int pycuda_style() {
  cuwrap::Device device;
  device.set_current();
  const cuwrap::Kernel blur = cuwrap::Program(kSource, cuwrap::CodeType::Cxx)
                                  .compile(cuwrap::TargetType::Cubin)
                                  .get_kernel("blur_rows");

  // The image, pitched as mem_alloc_pitch gives it, filled from the host row by row.
  const int width = 300;
  const int height = 200;
  std::vector<float> image(static_cast<std::size_t>(width) * height);
  for (std::size_t i = 0; i < image.size(); ++i) {
    image[i] = static_cast<float>(i % static_cast<std::size_t>(width));
  }
  cuwrap::PitchedBuffer pitched = device.allocate_pitched(width * sizeof(float), height);
  pitched.copy_from(image);  // blocking, as memcpy2D
  const cuwrap::TextureObject texture(pitched, cuwrap::texture_format_of<float>());

  // The result lands in host memory the program already had, registered and mapped.
  std::vector<float> result(image.size(), -1.0f);
  cuwrap::RegisteredHostMemory mapped =
      cuwrap::register_host_memory(result, {.device_mapped = true});
  cuwrap::launch(cuwrap::kLegacyDefaultStream,
                 {.grid = {static_cast<unsigned>(width + 127) / 128, static_cast<unsigned>(height)},
                  .block = 128},
                 blur, texture.handle(), mapped.device_buffer().as<float>(), width, height);
  device.sync();

  // The same through a device buffer and blocking copies (memcpy_htod / memcpy_dtoh).
  cuwrap::Buffer copy = device.allocate(result.size() * sizeof(float));
  cuwrap::copy(copy, result);
  std::vector<float> back(result.size(), 0.0f);
  cuwrap::copy(back, copy);

  std::size_t wrong = 0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const auto at = [&](int column) {
        const int clamped = column < 0 ? 0 : (column >= width ? width - 1 : column);
        return image[static_cast<std::size_t>(y) * width + clamped];
      };
      const double expected = (at(x - 1) + at(x) + at(x + 1)) / 3.0;
      const std::size_t i = static_cast<std::size_t>(y) * width + x;
      if (!example::close(result[i], expected) || back[i] != result[i]) {
        ++wrong;
      }
    }
  }
  return example::verdict("pycuda_style", image.size(), wrong);
}

}  // namespace

int main() { return example::run_on_gpu("pycuda_style", pycuda_style); }
