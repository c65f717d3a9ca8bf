// TensorMapDescriptor: every documented limit is refused before the driver with the
// dimension and values named (no GPU needed), the descriptor is a CUtensorMap in size,
// alignment and copyability, and on Hopper a kernel loads tiles with cp.async.bulk.tensor
// through a descriptor passed by value (in bounds, partly out of bounds, and after
// replace_address), compared with the tile cut from the host data.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
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
  return thrown_message<std::invalid_argument>([&] {
    TensorMapDescriptor::from_tiled(address, dtype, shape, strides, box, options);
  });
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
  EXPECT_TRUE(contains(message, "strides[0] = 24 (dimension 1) is not a multiple of 16")) << message;
  cuwrap::TensorMapOptions interleaved;
  interleaved.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
  EXPECT_TRUE(contains(tiled_error({8, 4}, {48}, {8, 2}, kAddress, interleaved),
                       "not a multiple of 32"));
}

TEST(TensorMapChecks, StridesMustCoverTheDimensionBelow) {
  const std::string message = tiled_error({64, 4, 2}, {256, 512}, {16, 2, 1});
  EXPECT_TRUE(contains(message, "strides[1] = 512 (dimension 2) is smaller than the 1024 bytes"))
      << message;
  EXPECT_TRUE(contains(tiled_error({64, 4}, {128}, {16, 2}), "smaller than the 256 bytes"));
}

TEST(TensorMapChecks, RankOneToFive) {
  EXPECT_TRUE(contains(tiled_error({}, {}, {}), "rank (shape.size()) is 0"));
  EXPECT_TRUE(contains(tiled_error({4, 4, 4, 4, 4, 4}, {16, 64, 256, 1024, 4096}, {4, 4, 4, 4, 4, 4}),
                       "rank (shape.size()) is 6"));
  EXPECT_TRUE(contains(tiled_error({64, 4}, {}, {16, 2}), "strides has 0 entries"));
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16}), "box has 1 entries"));
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
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16, 2}, kAddress + 8),
                       "is not aligned to 16 bytes"));
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
  EXPECT_TRUE(contains(tiled_error({64, 4}, {256}, {16, 2}, kAddress, {},
                                   static_cast<CUtensorMapDataType>(13)),
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
  message = thrown_message<std::invalid_argument>([&] {
    TensorMapDescriptor::from_im2col(kAddress, kF32, shape2, strides2, {}, {}, 16, 32);
  });
  EXPECT_TRUE(contains(message, "rank (shape.size()) is 2; it must be 3 to 5")) << message;
  const int zero[] = {0};
  message = thrown_message<std::invalid_argument>([&] {
    TensorMapDescriptor::from_im2col(kAddress, kF32, shape3, strides3, zero, zero, 0, 32);
  });
  EXPECT_TRUE(contains(message, "channels_per_pixel = 0")) << message;
}

TEST(TensorMapChecks, ReplaceAddressChecksAlignment) {
  TensorMapDescriptor map;
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] { map.replace_address(kAddress + 4); }),
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
  const std::string message = thrown_message<std::invalid_argument>([&] {
    TensorMapDescriptor::from_im2col(small, kF32, shape, strides, lower, upper, 16, 32);
  });
  EXPECT_TRUE(contains(message, "the buffer has 1024 bytes but the tensor spans 4096")) << message;
}

}  // namespace
