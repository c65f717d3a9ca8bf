// StreamRef <-> CCCL's cuda::stream_ref, both ways and implicitly: the same CUstream
// handle, no driver call, nothing stored besides it.
//
// Separate from core.hpp so that only code that uses CCCL includes it. CCCL's
// <cuda/stream_ref> ships with the CUDA toolkit (CCCL 2.x in CUDA 12, in
// include/; CCCL 3.x in CUDA 13, in include/cccl/, which nvcc searches by itself and
// cuwrap's CMake target adds for host compilers). Where the header is not found, this
// header defines CUWRAP_HAS_CCCL_STREAM_REF as 0 and nothing else.
//
// Example:
//   #include <cuwrap/cccl.hpp>
//   void cccl_algorithm(cuda::stream_ref stream);
//   cccl_algorithm(stream);                  // a cuwrap::Stream or StreamRef
//   cuwrap::StreamRef back = cuda::stream_ref{stream.handle()};
#pragma once

#include <cuwrap/stream.hpp>

#if __has_include(<cuda/stream_ref>)
#include <cuda/stream_ref>

/// 1 when <cuda/stream_ref> was found and StreamRef converts to and from cuda::stream_ref.
#define CUWRAP_HAS_CCCL_STREAM_REF 1

namespace cuwrap::detail {

template <>
inline constexpr bool kForeignStreamRef<::cuda::stream_ref> = true;

}  // namespace cuwrap::detail

#else
/// 0: <cuda/stream_ref> was not found, and this header adds nothing.
#define CUWRAP_HAS_CCCL_STREAM_REF 0
#endif
