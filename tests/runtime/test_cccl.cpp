// <cuwrap/cccl.hpp>: StreamRef converts to and from CCCL's cuda::stream_ref, implicitly
// and without cost (the same CUstream pointer both ways). Host C++ only, no GPU: the
// handles are never used. tests/nvcc compiles the same conversions with nvcc.
#include <cuwrap/cccl.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace {

#if CUWRAP_HAS_CCCL_STREAM_REF
static_assert(std::is_convertible_v<cuwrap::StreamRef, cuda::stream_ref>);
static_assert(std::is_convertible_v<cuda::stream_ref, cuwrap::StreamRef>);
static_assert(std::is_convertible_v<const cuwrap::Stream&, cuda::stream_ref>);
// Nothing is stored besides the handle on CCCL's side either.
static_assert(sizeof(cuda::stream_ref) == sizeof(CUstream));

// A function of a CCCL-based library: it takes cuda::stream_ref.
CUstream cccl_function(cuda::stream_ref stream) { return stream.get(); }
// A cuwrap-style function: it takes cuwrap::StreamRef.
CUstream cuwrap_function(cuwrap::StreamRef stream) { return stream.handle(); }
#endif

TEST(NoGpuCccl, StreamRefRoundTripKeepsTheHandle) {
#if CUWRAP_HAS_CCCL_STREAM_REF
  const auto handle = reinterpret_cast<CUstream>(std::uintptr_t{0x4200});
  const cuwrap::StreamRef ref = handle;
  const cuda::stream_ref cccl = ref;
  EXPECT_EQ(cccl.get(), handle);
  const cuwrap::StreamRef back = cccl;
  EXPECT_EQ(back.handle(), handle);
  EXPECT_EQ(cccl_function(ref), handle);
  EXPECT_EQ(cuwrap_function(cuda::stream_ref{handle}), handle);
  const cuwrap::StreamRef per_thread = cuwrap::StreamRef::from_handle(CU_STREAM_PER_THREAD);
  EXPECT_EQ(cccl_function(per_thread), CU_STREAM_PER_THREAD);
  EXPECT_EQ(cccl_function(cuwrap::kLegacyDefaultStream), CU_STREAM_LEGACY);
#else
  GTEST_SKIP() << "<cuda/stream_ref> not found: no CCCL in this toolkit's include path";
#endif
}

TEST(NoGpuCccl, NullCcclStreamIsRefusedAsANullHandle) {
#if CUWRAP_HAS_CCCL_STREAM_REF
  const cuda::stream_ref null_stream{CUstream{}};
  EXPECT_THROW(static_cast<void>(cuwrap::StreamRef(null_stream)), std::invalid_argument);
#else
  GTEST_SKIP() << "<cuda/stream_ref> not found: no CCCL in this toolkit's include path";
#endif
}

}  // namespace
