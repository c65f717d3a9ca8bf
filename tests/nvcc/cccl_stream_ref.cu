// Compiled by nvcc (not run): <cuwrap/cccl.hpp> converts StreamRef and cuda::stream_ref
// both ways under nvcc, where CCCL is always on the include path.
#include <cuwrap/cccl.hpp>

#include <type_traits>

static_assert(CUWRAP_HAS_CCCL_STREAM_REF == 1, "nvcc always finds <cuda/stream_ref>");
static_assert(std::is_convertible_v<cuwrap::StreamRef, cuda::stream_ref>);
static_assert(std::is_convertible_v<cuda::stream_ref, cuwrap::StreamRef>);
static_assert(std::is_convertible_v<const cuwrap::Stream&, cuda::stream_ref>);

__global__ void touch(int* p) { *p = 1; }

// Both directions in host code compiled by nvcc, next to a kernel launch on the result.
void round_trip(cuwrap::StreamRef stream, int* p) {
  const cuda::stream_ref cccl = stream;
  touch<<<1, 1, 0, cccl.get()>>>(p);
  const cuwrap::StreamRef back = cccl;
  static_cast<void>(back.handle());
}
