// Test support: CUDA C++ sources that several tests (and bench/bench_compile.cpp)
// compile with NVRTC. cuda.core's saxpy and vector_add examples, character for
// character, so the benchmarks measure the same compile as the tests check.
#pragma once

namespace cuwrap::testing {

/// cuda.core's saxpy: `out = a * x + y` over `N` floats, one thread per element.
inline constexpr const char* kSaxpySource = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t N) {
  unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
  if (tid < N) {
    out[tid] = a * x[tid] + y[tid];
  }
}
)";

/// cuda.core's templated vector_add: `C = A + B` over `N` elements, grid-stride loop;
/// instantiate it with a name expression such as "vector_add<float>".
inline constexpr const char* kVectorAddSource = R"(
template <typename T>
__global__ void vector_add(const T* A, const T* B, T* C, size_t N) {
  const unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
  for (size_t i = tid; i < N; i += gridDim.x * blockDim.x) {
    C[i] = A[i] + B[i];
  }
}
)";

/// cuda.core's Linker example, unit one: a relocatable device function (`-rdc`).
inline constexpr const char* kLinkHelperSource = R"(
extern "C" __device__ float helper_func(float x) { return x * x; }
)";

/// cuda.core's Linker example, unit two: `main_kernel` squares `N` floats in place through
/// `helper_func`, which only a link with kLinkHelperSource resolves.
inline constexpr const char* kLinkMainSource = R"(
extern "C" __device__ float helper_func(float x);
extern "C" __global__ void main_kernel(float* data, size_t N) {
  unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
  if (tid < N) data[tid] = helper_func(data[tid]);
}
)";

}  // namespace cuwrap::testing
