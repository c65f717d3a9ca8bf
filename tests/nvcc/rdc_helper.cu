// A relocatable device function, built by nvcc -rdc=true into an object file and a
// static library, which the nvcc test links with a kernel through cuwrap::Linker.
extern "C" __device__ float helper_func(float x) { return x * x + 1.0f; }
