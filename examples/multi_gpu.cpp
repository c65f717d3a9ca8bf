// multi_gpu: split a vector over every GPU of the host, compute on each, gather on
// device 0, check.
//
// As cuda.core's multi-GPU example: Device::all() → per device a stream, a slice of the
// input, a kernel compiled for its architecture → each device's result copied to device
// 0 with copy_peer, ordered after that device's kernel by an event → one copy to the
// host. Runs on one GPU too (one slice); without a GPU it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr const char* kScaleSource = R"(
extern "C" __global__ void scale_add(const float* x, float* out, float a, float b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    out[i] = a * x[i] + b;
  }
}
)";

// What one device holds: its stream, its slice of the input and of the result.
struct Slice {
  cuwrap::Device device;
  cuwrap::Stream stream;
  std::size_t offset;
  std::size_t count;
  cuwrap::Buffer x;
  cuwrap::Buffer out;
};

int multi_gpu_example() {
  const std::vector<cuwrap::Device> devices = cuwrap::Device::all();
  const std::size_t n = std::size_t{1} << 22;
  const float a = 3.0f;
  const float b = 0.5f;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.001f;
  }

  // One kernel per architecture: devices of one kind share the compiled code.
  std::map<std::string, cuwrap::Kernel> kernels;
  std::vector<Slice> slices;
  const std::size_t per_device = (n + devices.size() - 1) / devices.size();
  for (const cuwrap::Device& dev : devices) {
    dev.set_current();
    std::cout << "device: " << dev << ", sm_" << dev.arch() << '\n';
    if (!kernels.contains(dev.arch())) {
      cuwrap::ProgramOptions options;
      options.name = "scale_add.cu";
      options.arch = "sm_" + dev.arch();
      cuwrap::Program program(kScaleSource, cuwrap::CodeType::Cxx, options);
      kernels.emplace(dev.arch(),
                      program.compile(cuwrap::TargetType::Cubin).get_kernel("scale_add"));
    }
    const std::size_t offset = per_device * static_cast<std::size_t>(dev.device_id());
    const std::size_t count = offset < n ? std::min(per_device, n - offset) : 0;
    cuwrap::Stream stream = dev.create_stream();
    cuwrap::Buffer dx = dev.allocate(count * sizeof(float), stream);
    cuwrap::Buffer dout = dev.allocate(count * sizeof(float), stream);
    slices.push_back({dev, std::move(stream), offset, count, std::move(dx), std::move(dout)});
  }

  // Compute: each device on its own stream, with whichever device happens to be current.
  for (Slice& s : slices) {
    if (s.count == 0) {
      continue;
    }
    s.x.copy_from(std::span<const float>(x.data() + s.offset, s.count), s.stream);
    cuwrap::launch(s.stream, {.grid = 256, .block = 256}, kernels.at(s.device.arch()), s.x, s.out,
                   a, b, s.count);
  }

  // Gather on device 0: its stream waits for each device's kernel, then copies the slice.
  const cuwrap::Device& first = devices.front();
  first.set_current();
  cuwrap::Stream gather_stream = first.create_stream();
  cuwrap::Buffer all = first.allocate(n * sizeof(float), gather_stream);
  for (Slice& s : slices) {
    if (s.count == 0) {
      continue;
    }
    gather_stream.wait(s.stream.record());
    cuwrap::copy_peer(all.handle() + s.offset * sizeof(float), first, s.out.handle(), s.device,
                      s.count * sizeof(float), gather_stream);
  }
  std::vector<float> result(n);
  all.copy_to(result, gather_stream);
  gather_stream.sync();

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!example::close(result[i], static_cast<double>(a) * x[i] + b)) {
      ++wrong;
    }
  }
  std::cout << "split " << n << " floats over " << devices.size()
            << (devices.size() == 1 ? " device" : " devices") << '\n';
  return example::verdict("multi_gpu", n, wrong);
}

}  // namespace

int main() {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // no NVLink SHARP on shared machines
  return example::run_on_gpu("multi_gpu", multi_gpu_example);
}
