// mdspan_transpose: a kernel that indexes cuwrap buffers as matrices through
// cuda::std::mdspan views (cuwrap::view, <cuwrap/mdspan.hpp>), launched on a cuwrap stream.
//
// The views are made on the host, where cuwrap checks that each buffer holds the
// matrix and is aligned for its elements, and passed to the kernel by value. Built only
// when CMake finds nvcc; needs a GPU to run (otherwise it says so and exits 0).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/launch_cuda.hpp>
#include <cuwrap/mdspan.hpp>

#include "support.hpp"

#include <cstddef>
#include <iostream>
#include <vector>

namespace {

using Matrix = cuda::std::mdspan<float, cuda::std::dextents<std::size_t, 2>>;
using ConstMatrix = cuda::std::mdspan<const float, cuda::std::dextents<std::size_t, 2>>;

// out(j, i) = in(i, j): each thread moves one element.
__global__ void transpose(ConstMatrix in, Matrix out) {
  const std::size_t i = blockIdx.y * static_cast<std::size_t>(blockDim.y) + threadIdx.y;
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < in.extent(0) && j < in.extent(1)) {
    out(j, i) = in(i, j);
  }
}

int mdspan_transpose_example() {
  cuwrap::Device device;
  device.set_current();
  cuwrap::Stream stream = device.create_stream();

  const std::size_t rows = 300;
  const std::size_t cols = 500;
  std::vector<float> host(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      host[i * cols + j] = static_cast<float>(i * 1000 + j);  // row-major: (i, j)
    }
  }
  cuwrap::Buffer in = device.allocate(host.size() * sizeof(float), stream);
  cuwrap::Buffer out = device.allocate(host.size() * sizeof(float), stream);
  in.copy_from(host, stream);

  const ConstMatrix in_view = cuwrap::view<const float>(in, rows, cols);
  const Matrix out_view = cuwrap::view<float>(out, cols, rows);
  const unsigned tile = 16;
  const cuwrap::LaunchConfig config{.grid = {static_cast<unsigned>((cols + tile - 1) / tile),
                                             static_cast<unsigned>((rows + tile - 1) / tile)},
                                    .block = {tile, tile}};
  cuwrap::launch(stream, config, transpose, in_view, out_view);

  std::vector<float> result(host.size());
  out.copy_to(result, stream);
  stream.sync();
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < cols; ++j) {
    for (std::size_t i = 0; i < rows; ++i) {
      if (result[j * rows + i] != host[i * cols + j]) {  // out(j, i) == in(i, j)
        ++wrong;
      }
    }
  }
  return example::verdict("mdspan_transpose", host.size(), wrong);
}

}  // namespace

int main() { return example::run_on_gpu("mdspan_transpose", mdspan_transpose_example); }
