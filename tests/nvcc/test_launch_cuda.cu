// cuwrap::launch for kernels compiled by nvcc (<cuwrap/launch_cuda.hpp>): arguments
// converted to the parameter types, Buffer as a pointer, the extended configurations;
// nvcc's relocatable object and static library linked with Linker. Needs a GPU to run.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/launch_cuda.hpp>

#include <gtest/gtest.h>

#include <cmath>

#include "device_fixture.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

__global__ void saxpy(float a, const float* x, const float* y, float* out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = a * x[i] + y[i];
}

__global__ void count(unsigned* counter) { atomicAdd(counter, 1u); }

__global__ void cluster_size(unsigned* out) {
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  if (threadIdx.x == 0)
    out[blockIdx.x] = n;
}

template <class T>
std::vector<T> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> dist(-10, 10);
  std::vector<T> v(n);
  for (T& x : v)
    x = dist(rng);
  return v;
}

class NvccLaunch : public cuwrap::testing::DeviceStreamTest {};

TEST_F(NvccLaunch, SaxpyWithConvertedArguments) {
  constexpr int kN = 10007;  // int → std::size_t, double → float below
  const auto x = random_vector<float>(kN, 1);
  const auto y = random_vector<float>(kN, 2);
  cuwrap::Buffer dx = device().allocate(kN * sizeof(float), stream());
  cuwrap::Buffer dy = device().allocate(kN * sizeof(float), stream());
  cuwrap::Buffer out = device().allocate(kN * sizeof(float), stream());
  dx.copy_from(std::as_bytes(std::span(x)), stream());
  dy.copy_from(std::as_bytes(std::span(y)), stream());
  const double a = 2.5;
  cuwrap::launch(stream(), {.grid = (kN + 255) / 256, .block = 256}, saxpy, a, dx, dy, out, kN);
  std::vector<float> result(kN);
  out.copy_to(std::as_writable_bytes(std::span(result)), stream());
  stream().sync();
  for (int i = 0; i < kN; ++i) {
    // The device may contract a * x + y into one FMA; the host rounds twice.
    const float expected = 2.5f * x[i] + y[i];
    ASSERT_NEAR(result[i], expected, 1e-5f * (std::fabs(2.5f * x[i]) + std::fabs(y[i]))) << i;
  }
}

TEST_F(NvccLaunch, DeviceSpansPassTheirElementPointers) {
  constexpr std::size_t kN = 1000;
  const std::vector<float> x(kN, 2.0f);
  const std::vector<float> y(kN, 1.0f);
  cuwrap::Buffer buffer = device().allocate(3 * kN * sizeof(float), stream());
  const cuwrap::DeviceSpan<float> all = buffer.as<float>();
  all.subspan(0, kN).copy_from(x, stream());
  all.subspan(kN, kN).copy_from(y, stream());
  // DeviceSpan<float> for const float* parameters, the last third for the output.
  cuwrap::launch(stream(), {.grid = (kN + 255) / 256, .block = 256}, saxpy, 3.0f,
                 all.subspan(0, kN), cuwrap::DeviceSpan<const float>(all.subspan(kN, kN)),
                 all.last(kN), kN);
  std::vector<float> result(kN);
  all.last(kN).copy_to(result, stream());
  stream().sync();
  for (std::size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], 7.0f) << i;
  }
}

TEST_F(NvccLaunch, ExtendedConfigurationsGoThroughLaunchKernelEx) {
  cuwrap::Buffer counter = device().allocate(sizeof(unsigned), stream());
  counter.fill(std::uint8_t{0}, stream());
  auto* raw = reinterpret_cast<unsigned*>(counter.handle());
  cuwrap::launch(stream(), {.grid = 2, .block = 64, .priority = 0}, count, raw);
  cuwrap::launch(stream(), {.grid = 2, .block = 64, .programmatic_stream_serialization = true},
                 count, counter);
  unsigned host = 0;
  counter.copy_to(std::as_writable_bytes(std::span(&host, 1)), stream());
  stream().sync();
  EXPECT_EQ(host, 256u);
  EXPECT_THROW(cuwrap::launch(stream(), {.grid = 0, .block = 64}, count, raw),
               std::invalid_argument);
}

TEST_F(NvccLaunch, ClusterLaunchOnSm90) {
  if (device().compute_capability().major < 9) {
    GTEST_SKIP() << "thread-block clusters need sm_90";
  }
  cuwrap::Buffer out = device().allocate(8 * sizeof(unsigned), stream());
  cuwrap::launch(stream(), {.grid = 8, .block = 32, .cluster = cuwrap::Dim3{2}}, cluster_size, out);
  std::vector<unsigned> host(8);
  out.copy_to(std::as_writable_bytes(std::span(host)), stream());
  stream().sync();
  for (unsigned n : host)
    EXPECT_EQ(n, 2u);
}

TEST_F(NvccLaunch, DefaultStreamWorks) {
  const cuwrap::StreamRef s = device().default_stream();
  cuwrap::Buffer counter = device().allocate(sizeof(unsigned), s);
  counter.fill(std::uint8_t{0}, s);
  cuwrap::launch(s, {.grid = 3, .block = 32}, count, counter);
  unsigned host = 0;
  counter.copy_to(std::as_writable_bytes(std::span(&host, 1)), s);
  s.sync();
  EXPECT_EQ(host, 96u);
}

constexpr const char* kMain = R"(
extern "C" __device__ float helper_func(float x);
extern "C" __global__ void main_kernel(float* data, size_t n) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) data[i] = helper_func(data[i]);
}
)";

TEST_F(NvccLaunch, LinksNvccObjectAndLibrary) {
  const std::string arch = "sm_" + device().arch();
  cuwrap::ProgramOptions options;
  options.arch = arch;
  options.relocatable_device_code = true;
  const cuwrap::ObjectCode main_unit =
      cuwrap::Program(kMain, cuwrap::CodeType::Cxx, options).compile(cuwrap::TargetType::Cubin);
  for (const char* file : {CUWRAP_RDC_OBJECT, CUWRAP_RDC_LIBRARY}) {
    const cuwrap::ObjectCode helper = cuwrap::ObjectCode::from_file(file);
    const std::string name = file;
    EXPECT_EQ(helper.code_type(),
              name.ends_with(".a") ? cuwrap::TargetType::Library : cuwrap::TargetType::Object);
    cuwrap::LinkerOptions link_options;
    link_options.arch = arch;
    cuwrap::Linker linker({main_unit, helper}, link_options);
    const cuwrap::Kernel kernel = linker.link(cuwrap::TargetType::Cubin).get_kernel("main_kernel");
    constexpr std::size_t kN = 1000;
    const auto host = random_vector<float>(kN, 3);
    cuwrap::Buffer data = device().allocate(kN * sizeof(float), stream());
    data.copy_from(std::as_bytes(std::span(host)), stream());
    cuwrap::launch(stream(), {.grid = 4, .block = 256}, kernel, data, kN);
    std::vector<float> result(kN);
    data.copy_to(std::as_writable_bytes(std::span(result)), stream());
    stream().sync();
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_FLOAT_EQ(result[i], host[i] * host[i] + 1.0f) << file << " " << i;
    }
  }
}

}  // namespace
