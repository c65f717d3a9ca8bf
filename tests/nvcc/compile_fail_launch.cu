// Compiled by ctest, not built: with CUWRAP_WRONG_TYPE or CUWRAP_WRONG_COUNT defined,
// cuwrap::launch must not compile (tests/nvcc/CMakeLists.txt checks the message);
// without them it must (the control that the failure comes from the arguments).
#include <cuwrap/launch_cuda.hpp>

__global__ void scale(int* data, int n, float factor) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n)
    data[i] = static_cast<int>(static_cast<float>(data[i]) * factor);
}

void use(const cuwrap::Stream& stream, int* ints, float* floats) {
  static_cast<void>(floats);
#if defined(CUWRAP_WRONG_TYPE)
  cuwrap::launch(stream, {.grid = 1, .block = 32}, scale, floats, 32, 2.0f);  // float* for int*
#elif defined(CUWRAP_WRONG_COUNT)
  cuwrap::launch(stream, {.grid = 1, .block = 32}, scale, ints, 32);
#else
  cuwrap::launch(stream, {.grid = 1, .block = 32}, scale, ints, 32, 2.0);  // double → float
#endif
}
