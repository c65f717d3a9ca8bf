// TensorMapDescriptor: every documented limit is refused before the driver with the
// dimension and values named (no GPU needed), the descriptor is a CUtensorMap in size,
// alignment and copyability, and on Hopper a kernel loads tiles with cp.async.bulk.tensor
// through a descriptor passed by value (in bounds, partly out of bounds, and after
// replace_address), compared with the tile cut from the host data; every rank 1..5
// (rank 1 as in cuda.core's tma_tensor_map example, which the driver refused while no
// globalStrides array was passed) is encoded and loaded from padded strides.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::TensorMapDescriptor;
using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

constexpr CUdeviceptr kAddress = 0x10000;  // aligned; never reached by the checks below
constexpr CUtensorMapDataType kF32 = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;

static_assert(sizeof(TensorMapDescriptor) == 128);
static_assert(alignof(TensorMapDescriptor) >= 64);
static_assert(std::is_trivially_copyable_v<TensorMapDescriptor>);

std::string tiled_error(std::vector<std::uint64_t> shape, std::vector<std::uint64_t> strides,
                        std::vector<std::uint32_t> box, CUdeviceptr address = kAddress,
                        const cuwrap::TensorMapOptions& options = {},
                        CUtensorMapDataType dtype = kF32) {
  return thrown_message<std::invalid_argument>(
      [&] { TensorMapDescriptor::from_tiled(address, dtype, shape, strides, box, options); });
}

TEST(TensorMapChecks, BoxExceedingTheShapeNamesTheDimension) {
  const std::string message = tiled_error({64, 8}, {256}, {16, 9});
  EXPECT_TRUE(contains(message, "box[1] = 9 exceeds shape[1] = 8")) << message;
}

TEST(TensorMapChecks, BoxOutsideOneTo256) {
  EXPECT_TRUE(contains(tiled_error({1024, 4}, {4096}, {512, 4}), "box[0] = 512 is outside 1..256"));
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16, 0}), "box[1] = 0"));
}

TEST(TensorMapChecks, StridesMustBeMultiplesOf16) {
  const std::string message = tiled_error({6, 4}, {24}, {4, 2});
  EXPECT_TRUE(contains(message, "strides[0] = 24 (dimension 1) is not a multiple of 16"))
      << message;
  cuwrap::TensorMapOptions interleaved;
  interleaved.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
  EXPECT_TRUE(
      contains(tiled_error({8, 4}, {48}, {8, 2}, kAddress, interleaved), "not a multiple of 32"));
}

TEST(TensorMapChecks, StridesMustCoverTheDimensionBelow) {
  const std::string message = tiled_error({64, 4, 2}, {256, 512}, {16, 2, 1});
  EXPECT_TRUE(contains(message, "strides[1] = 512 (dimension 2) is smaller than the 1024 bytes"))
      << message;
  EXPECT_TRUE(contains(tiled_error({64, 4}, {128}, {16, 2}), "smaller than the 256 bytes"));
}

TEST(TensorMapChecks, RankOneToFive) {
  EXPECT_TRUE(contains(tiled_error({}, {}, {}), "rank (shape.size()) is 0"));
  EXPECT_TRUE(
      contains(tiled_error({4, 4, 4, 4, 4, 4}, {16, 64, 256, 1024, 4096}, {4, 4, 4, 4, 4, 4}),
               "rank (shape.size()) is 6"));
  EXPECT_TRUE(contains(tiled_error({64, 4}, {}, {16, 2}), "strides has 0 entries"));
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16}), "box has 1 entries"));
}

TEST(TensorMapChecks, RankOneTakesNoStrides) {
  // cuda.core's tma_tensor_map example: 1024 floats, a box of 128. A stride given for
  // the one dimension is refused by name (the driver would never read it).
  const std::string message = tiled_error({1024}, {4096}, {128});
  EXPECT_TRUE(contains(message, "strides has 1 entries; a rank-1 tensor needs 0")) << message;
  EXPECT_TRUE(contains(tiled_error({1024}, {}, {512}), "box[0] = 512 is outside 1..256"));
  EXPECT_TRUE(contains(tiled_error({1024}, {}, {6}), "box[0] = 6 spans 24 bytes"));
  EXPECT_TRUE(contains(tiled_error({100}, {}, {128}), "box[0] = 128 exceeds shape[0] = 100"));
}

TEST(TensorMapChecks, InterleaveNeedsRankThreeAndItsSwizzle) {
  cuwrap::TensorMapOptions interleaved;
  interleaved.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
  std::string message = tiled_error({64, 4}, {256}, {16, 2}, kAddress, interleaved);
  EXPECT_TRUE(contains(message, "needs rank 3 or more; the rank (shape.size()) is 2")) << message;
  cuwrap::TensorMapOptions interleaved32;
  interleaved32.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
  message = tiled_error({8, 4, 2}, {32, 128}, {8, 2, 1}, kAddress, interleaved32);
  EXPECT_TRUE(contains(message,
                       "CU_TENSOR_MAP_INTERLEAVE_32B needs swizzle = "
                       "CU_TENSOR_MAP_SWIZZLE_32B, not 0"))
      << message;
  interleaved32.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  message = tiled_error({8, 4, 2}, {32, 128}, {8, 2, 1}, kAddress + 16, interleaved32);
  EXPECT_TRUE(contains(message, "is not aligned to 32 bytes")) << message;
}

TEST(TensorMapChecks, NanFillNeedsAFloatingPointType) {
  cuwrap::TensorMapOptions nan_fill;
  nan_fill.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  const std::string message =
      tiled_error({64, 4}, {256}, {16, 2}, kAddress, nan_fill, CU_TENSOR_MAP_DATA_TYPE_INT32);
  EXPECT_TRUE(contains(message, "needs a floating-point dtype; dtype is 3")) << message;
}

TEST(TensorMapChecks, InnerBoxRowIsAMultipleOf16BytesAndFitsTheSwizzle) {
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {6, 2}),
                       "box[0] = 6 spans 24 bytes; the inner box dimension must span a multiple "
                       "of 16 bytes"));
  cuwrap::TensorMapOptions swizzled;
  swizzled.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16, 2}, kAddress, swizzled),
                       "more than the 32-byte swizzle span"));
}

TEST(TensorMapChecks, AddressAlignmentElementStridesAndShape) {
  EXPECT_TRUE(
      contains(tiled_error({64, 4}, {256}, {16, 2}, kAddress + 8), "is not aligned to 16 bytes"));
  const std::uint32_t nine[] = {1, 9};
  cuwrap::TensorMapOptions strided;
  strided.element_strides = nine;
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16, 2}, kAddress, strided),
                       "element_strides[1] = 9 is outside 1..8"));
  EXPECT_TRUE(contains(tiled_error({0, 4}, {256}, {16, 2}), "shape[0] = 0 is outside 1..2^32"));
}

TEST(TensorMapChecks, PackedSubByteTypesAreRefusedByName) {
  // 13 is CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B from CUDA 12.8 on, and within the enum's
  // range on older headers too (a value outside it would be undefined behaviour).
  EXPECT_TRUE(contains(
      tiled_error({64, 4}, {256}, {16, 2}, kAddress, {}, static_cast<CUtensorMapDataType>(13)),
      "dtype 13 (a packed sub-byte type)"));
}

TEST(TensorMapChecks, Im2colRanksCornersAndPixels) {
  const std::uint64_t shape3[] = {16, 32, 2};
  const std::uint64_t strides3[] = {64, 2048};
  const int lower[] = {-40000};
  const int upper[] = {0};
  std::string message = thrown_message<std::invalid_argument>([&] {
    TensorMapDescriptor::from_im2col(kAddress, kF32, shape3, strides3, lower, upper, 16, 32);
  });
  EXPECT_TRUE(contains(message, "lower_corner[0] = -40000 is outside -32768..32767")) << message;
  const std::uint64_t shape2[] = {16, 32};
  const std::uint64_t strides2[] = {64};
  message = thrown_message<std::invalid_argument>(
      [&] { TensorMapDescriptor::from_im2col(kAddress, kF32, shape2, strides2, {}, {}, 16, 32); });
  EXPECT_TRUE(contains(message, "rank (shape.size()) is 2; it must be 3 to 5")) << message;
  const int zero[] = {0};
  message = thrown_message<std::invalid_argument>([&] {
    TensorMapDescriptor::from_im2col(kAddress, kF32, shape3, strides3, zero, zero, 0, 32);
  });
  EXPECT_TRUE(contains(message, "channels_per_pixel = 0")) << message;
}

TEST(TensorMapChecks, ReplaceAddressChecksAlignment) {
  TensorMapDescriptor map;
  EXPECT_TRUE(
      contains(thrown_message<std::invalid_argument>([&] { map.replace_address(kAddress + 4); }),
               "not aligned to 16 bytes"));
}

// ---- Hopper: cp.async.bulk.tensor through the descriptor ----------------------------

// One block loads one box (kBoxW x kBoxH floats at x0, y0) into shared memory with the
// tensor-memory accelerator, waits on an mbarrier, and writes the tile to `out`. The
// CUtensorMap typedef repeats cuda.h's definition (NVRTC does not include cuda.h).
constexpr int kBoxW = 16;
constexpr int kBoxH = 8;
const char* const kTileKernel = R"(
typedef struct __align__(64) CUtensorMap_st { unsigned long long opaque[16]; } CUtensorMap;
constexpr int kBoxW = 16;
constexpr int kBoxH = 8;

extern "C" __global__ void load_tile(const __grid_constant__ CUtensorMap map, int x0, int y0,
                                     float* out) {
  __shared__ __align__(128) float tile[kBoxH * kBoxW];
  __shared__ __align__(8) unsigned long long barrier;
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(static_cast<unsigned>(sizeof(tile))) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];"
        :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x0), "r"(y0), "r"(bar)
        : "memory");
  }
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                 " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar) : "memory");
  }
  for (int i = threadIdx.x; i < kBoxH * kBoxW; i += blockDim.x) {
    out[i] = tile[i];
  }
}
)";

class TensorMapGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  static constexpr std::uint64_t kWidth = 64;   // floats per row (dimension 0)
  static constexpr std::uint64_t kHeight = 48;  // rows (dimension 1)

  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    const cuwrap::ComputeCapability cc = device().compute_capability();
    if (cc.major < 9) {
      GTEST_SKIP() << "cp.async.bulk.tensor needs sm_90 or newer; device 0 is sm_" << cc.major
                   << cc.minor;
    }
  }

  // Host data whose every element differs from its neighbours: value = row * 1000 + col + seed.
  static std::vector<float> matrix(float seed) {
    std::vector<float> data(kWidth * kHeight);
    for (std::uint64_t y = 0; y < kHeight; ++y) {
      for (std::uint64_t x = 0; x < kWidth; ++x) {
        data[y * kWidth + x] = static_cast<float>(y * 1000 + x) + seed;
      }
    }
    return data;
  }

  // The tile at (x0, y0) cut from `data` on the host, zeros outside the tensor.
  static std::vector<float> expected_tile(const std::vector<float>& data, int x0, int y0) {
    std::vector<float> tile(kBoxW * kBoxH, 0.0f);
    for (int r = 0; r < kBoxH; ++r) {
      for (int c = 0; c < kBoxW; ++c) {
        const auto gx = static_cast<std::uint64_t>(x0 + c);
        const auto gy = static_cast<std::uint64_t>(y0 + r);
        if (gx < kWidth && gy < kHeight) {
          tile[static_cast<std::size_t>(r * kBoxW + c)] = data[gy * kWidth + gx];
        }
      }
    }
    return tile;
  }

  cuwrap::Buffer upload(const std::vector<float>& data) const {
    cuwrap::Buffer buffer = device().allocate(data.size() * sizeof(float), stream());
    buffer.copy_from(data, stream());
    return buffer;
  }

  std::vector<float> load(const cuwrap::Kernel& kernel, const TensorMapDescriptor& map, int x0,
                          int y0) const {
    cuwrap::Buffer out = device().allocate(kBoxW * kBoxH * sizeof(float), stream());
    out.fill(std::uint8_t{0xff}, stream());
    cuwrap::launch(stream(), {.grid = 1, .block = 128}, kernel, map, x0, y0, out);
    std::vector<float> tile(kBoxW * kBoxH);
    out.copy_to(tile, stream());
    stream().sync();
    return tile;
  }
};

TEST_F(TensorMapGpu, CpAsyncBulkTensorLoadsTheTilesTheDescriptorNames) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::Kernel kernel = cuwrap::Program(kTileKernel, cuwrap::CodeType::Cxx)
                                    .compile(cuwrap::TargetType::Cubin)
                                    .get_kernel("load_tile");
  const std::vector<float> first = matrix(0.5f);
  const std::vector<float> second = matrix(0.25f);
  cuwrap::Buffer a = upload(first);
  cuwrap::Buffer b = upload(second);
  stream().sync();

  const std::uint64_t shape[] = {kWidth, kHeight};
  const std::uint64_t strides[] = {kWidth * sizeof(float)};
  const std::uint32_t box[] = {kBoxW, kBoxH};
  TensorMapDescriptor map = TensorMapDescriptor::from_tiled(a, kF32, shape, strides, box);

  EXPECT_EQ(load(kernel, map, 16, 8), expected_tile(first, 16, 8));
  // Partly outside the tensor: the hardware fills zeros there.
  EXPECT_EQ(load(kernel, map, 56, 44), expected_tile(first, 56, 44));

  map.replace_address(b);
  EXPECT_EQ(load(kernel, map, 32, 40), expected_tile(second, 32, 40));
}

TEST_F(TensorMapGpu, Im2colEncodesAndTheBufferSizeIsChecked) {
  // A 1 x 8 x 8 x 16 NHWC float tensor (channels innermost).
  const std::uint64_t shape[] = {16, 8, 8, 1};
  const std::uint64_t strides[] = {16 * 4, 16 * 4 * 8, 16 * 4 * 8 * 8};
  const int lower[] = {-1, -1};
  const int upper[] = {-1, -1};
  cuwrap::Buffer input = device().allocate(16 * 8 * 8 * sizeof(float), stream());
  const TensorMapDescriptor map =
      TensorMapDescriptor::from_im2col(input, kF32, shape, strides, lower, upper, 16, 32);
  bool any = false;
  for (const auto word : map.handle().opaque) {
    any = any || word != 0;
  }
  EXPECT_TRUE(any) << "the encoded descriptor is all zeros";

  cuwrap::Buffer small = device().allocate(1024, stream());
  const std::string message = thrown_message<std::invalid_argument>(
      [&] { TensorMapDescriptor::from_im2col(small, kF32, shape, strides, lower, upper, 16, 32); });
  EXPECT_TRUE(contains(message, "the buffer has 1024 bytes but the tensor spans 4096")) << message;
}

// ---- Hopper: every rank 1..5 -------------------------------------------------------

// One block loads one box of any rank (the coordinates past the rank are unused) into
// shared memory and writes it to `out` in the box's order (dimension 0 innermost).
const char* const kAnyRankKernel = R"(
typedef struct __align__(64) CUtensorMap_st { unsigned long long opaque[16]; } CUtensorMap;

__device__ __forceinline__ void issue(int rank, unsigned dst, unsigned long long map, int c0,
                                      int c1, int c2, int c3, int c4, unsigned bar) {
  switch (rank) {
    case 1:
      asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [%0], [%1, {%2}], [%3];"
                   :: "r"(dst), "l"(map), "r"(c0), "r"(bar) : "memory");
      break;
    case 2:
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [%0], [%1, {%2, %3}], [%4];"
                   :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
      break;
    case 3:
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [%0], [%1, {%2, %3, %4}], [%5];"
                   :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
      break;
    case 4:
      asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [%0], [%1, {%2, %3, %4, %5}], [%6];"
                   :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                   : "memory");
      break;
    default:
      asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                   :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
                      "r"(bar)
                   : "memory");
      break;
  }
}

extern "C" __global__ void load_box(const __grid_constant__ CUtensorMap map, int rank, int c0,
                                    int c1, int c2, int c3, int c4, unsigned elements,
                                    float* out) {
  __shared__ __align__(128) float box[4096];
  __shared__ __align__(8) unsigned long long barrier;
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(box));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(elements * 4u) : "memory");
    issue(rank, dst, reinterpret_cast<unsigned long long>(&map), c0, c1, c2, c3, c4, bar);
  }
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                 " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar) : "memory");
  }
  for (unsigned i = threadIdx.x; i < elements; i += blockDim.x) {
    out[i] = box[i];
  }
}
)";

// A float tensor of any rank with padded rows: its shape, the byte strides of
// dimensions 1 and up, and the host copy of its bytes, every element a distinct value
// (1 + its index in the shape's order) and the padding -1.
struct PaddedTensor {
  std::vector<std::uint64_t> shape;
  std::vector<std::uint64_t> strides;
  std::vector<float> data;

  PaddedTensor(std::vector<std::uint64_t> shape_in, std::vector<std::uint64_t> strides_in)
      : shape(std::move(shape_in)), strides(std::move(strides_in)) {
    const std::uint64_t bytes =
        strides.empty() ? shape[0] * sizeof(float) : strides.back() * shape.back();
    data.assign(bytes / sizeof(float), -1.0f);
    std::vector<std::uint64_t> index(shape.size(), 0);
    float value = 1.0f;
    for (;;) {
      data[offset(index) / sizeof(float)] = value;
      value += 1.0f;
      std::size_t d = 0;
      while (d < shape.size() && ++index[d] == shape[d]) {
        index[d++] = 0;
      }
      if (d == shape.size()) {
        break;
      }
    }
  }

  std::uint64_t offset(const std::vector<std::uint64_t>& index) const {
    std::uint64_t bytes = index[0] * sizeof(float);
    for (std::size_t d = 1; d < index.size(); ++d) {
      bytes += index[d] * strides[d - 1];
    }
    return bytes;
  }

  // The box at `corner` cut on the host in the box's order, zeros outside the tensor.
  std::vector<float> box_at(const std::vector<std::uint32_t>& box,
                            const std::vector<int>& corner) const {
    std::size_t elements = 1;
    for (const std::uint32_t b : box) {
      elements *= b;
    }
    std::vector<float> result(elements, 0.0f);
    std::vector<std::uint64_t> at(box.size(), 0);
    for (std::size_t i = 0; i < elements; ++i) {
      std::size_t rest = i;
      bool inside = true;
      for (std::size_t d = 0; d < box.size(); ++d) {
        const std::int64_t g = corner[d] + static_cast<std::int64_t>(rest % box[d]);
        rest /= box[d];
        inside = inside && g >= 0 && static_cast<std::uint64_t>(g) < shape[d];
        at[d] = static_cast<std::uint64_t>(g);
      }
      if (inside) {
        result[i] = data[offset(at) / sizeof(float)];
      }
    }
    return result;
  }
};

class TensorMapRanksGpu : public TensorMapGpu {
 protected:
  const cuwrap::Kernel& kernel() {
    if (!kernel_) {
      kernel_ = cuwrap::Program(kAnyRankKernel, cuwrap::CodeType::Cxx)
                    .compile(cuwrap::TargetType::Cubin)
                    .get_kernel("load_box");
    }
    return *kernel_;
  }

  cuwrap::Buffer upload_tensor(const PaddedTensor& tensor) const {
    cuwrap::Buffer buffer = device().allocate(tensor.data.size() * sizeof(float), stream());
    buffer.copy_from(tensor.data, stream());
    stream().sync();
    return buffer;
  }

  std::vector<float> load_box(const TensorMapDescriptor& map, std::size_t rank,
                              const std::vector<std::uint32_t>& box,
                              const std::vector<int>& corner) {
    unsigned elements = 1;
    for (const std::uint32_t b : box) {
      elements *= b;
    }
    int c[5] = {0, 0, 0, 0, 0};
    for (std::size_t d = 0; d < corner.size(); ++d) {
      c[d] = corner[d];
    }
    cuwrap::Buffer out = device().allocate(elements * sizeof(float), stream());
    out.fill(std::uint8_t{0xff}, stream());
    cuwrap::launch(stream(), {.grid = 1, .block = 128}, kernel(), map, static_cast<int>(rank), c[0],
                   c[1], c[2], c[3], c[4], elements, out);
    std::vector<float> result(elements);
    out.copy_to(result, stream());
    stream().sync();
    return result;
  }

  // Encode a tiled map of `tensor` with `box`, then load the box at each corner and
  // compare it with the host's cut. Returns "" when every box matched, else what
  // differed.
  std::string mismatches(const PaddedTensor& tensor, const std::vector<std::uint32_t>& box,
                         const std::vector<std::vector<int>>& corners) {
    const cuwrap::Buffer buffer = upload_tensor(tensor);
    const TensorMapDescriptor map =
        TensorMapDescriptor::from_tiled(buffer, kF32, tensor.shape, tensor.strides, box);
    std::string differences;
    for (const std::vector<int>& corner : corners) {
      const std::vector<float> loaded = load_box(map, tensor.shape.size(), box, corner);
      const std::vector<float> expected = tensor.box_at(box, corner);
      for (std::size_t i = 0; i < loaded.size(); ++i) {
        if (loaded[i] != expected[i]) {
          std::string at;
          for (const int c : corner) {
            at += (at.empty() ? "" : ", ") + std::to_string(c);
          }
          differences += "box at {" + at + "}: element " + std::to_string(i) + " is " +
                         std::to_string(loaded[i]) + ", expected " + std::to_string(expected[i]) +
                         "\n";
          break;
        }
      }
    }
    return differences;
  }

 private:
  std::optional<cuwrap::Kernel> kernel_;
};

TEST_F(TensorMapRanksGpu, RankOneAsCudaCoresExampleAndReplaceAddress) {
  CUWRAP_REQUIRE_NVRTC();
  // cuda.core's tma_tensor_map example: 1024 floats, tiles of 128, no strides.
  const PaddedTensor first({1024}, {});
  EXPECT_EQ(mismatches(first, {128}, {{0}, {384}, {960}}), "");  // the last: half outside
  std::vector<float> second_data(1024);
  for (std::size_t i = 0; i < second_data.size(); ++i) {
    second_data[i] = 42.0f + static_cast<float>(i);
  }
  const cuwrap::Buffer a = upload_tensor(first);
  cuwrap::Buffer b = device().allocate(1024 * sizeof(float), stream());
  b.copy_from(second_data, stream());
  stream().sync();
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {128};
  TensorMapDescriptor map = TensorMapDescriptor::from_tiled(a, kF32, shape, {}, box);
  map.replace_address(b);
  const std::vector<float> expected(second_data.begin() + 256, second_data.begin() + 384);
  EXPECT_EQ(load_box(map, 1, {128}, {256}), expected);

  cuwrap::Buffer small = device().allocate(1020 * sizeof(float), stream());
  const std::string message = thrown_message<std::invalid_argument>(
      [&] { TensorMapDescriptor::from_tiled(small, kF32, shape, {}, box); });
  EXPECT_TRUE(contains(message, "the buffer has 4080 bytes but the tensor spans 4096")) << message;
}

// Padded strides (more bytes than the dimension below spans) in every rank; one box
// inside the tensor and one partly outside it (zeros there).
TEST_F(TensorMapRanksGpu, RankTwo) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_EQ(mismatches(PaddedTensor({40, 12}, {192}), {16, 4}, {{8, 4}, {32, 10}}), "");
}

TEST_F(TensorMapRanksGpu, RankThree) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_EQ(mismatches(PaddedTensor({20, 6, 5}, {96, 576}), {8, 3, 2}, {{4, 2, 1}, {16, 5, 4}}),
            "");
}

TEST_F(TensorMapRanksGpu, RankFour) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_EQ(mismatches(PaddedTensor({12, 4, 3, 3}, {64, 256, 832}), {4, 2, 2, 2},
                       {{4, 1, 1, 1}, {8, 3, 2, 2}}),
            "");
}

TEST_F(TensorMapRanksGpu, RankFive) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_EQ(mismatches(PaddedTensor({8, 3, 3, 2, 3}, {48, 144, 432, 880}), {4, 2, 2, 2, 2},
                       {{0, 1, 1, 0, 1}, {4, 2, 2, 1, 2}}),
            "");
}

}  // namespace
