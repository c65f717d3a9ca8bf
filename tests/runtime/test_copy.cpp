// copy_batch and the pitched 2-D / 3-D copies: bad input refused before the driver (no
// GPU needed), and on a GPU many copies of different sizes, sub-range copies in reversed
// order, and strided blocks, all checked byte by byte against the host.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::CopyOp;
using cuwrap::testing::contains;
using cuwrap::testing::random_bytes;
using cuwrap::testing::thrown_message;

// Non-owning buffers over addresses that are never dereferenced: the checks run first.
TEST(CopyBatchChecks, MismatchedSizesNameTheIndexAndBothSizes) {
  const Buffer s0 = cuwrap::testing::fake_buffer(0x1000, 16);
  const Buffer s1 = cuwrap::testing::fake_buffer(0x2000, 32);
  Buffer d0 = cuwrap::testing::fake_buffer(0x3000, 16);
  Buffer d1 = cuwrap::testing::fake_buffer(0x4000, 24);
  const std::vector<const Buffer*> srcs{&s0, &s1};
  const std::vector<Buffer*> dsts{&d0, &d1};
  const std::string message = thrown_message<std::invalid_argument>(
      [&] { cuwrap::copy_batch(srcs, dsts, cuwrap::kPerThreadDefaultStream); });
  EXPECT_TRUE(contains(message, "srcs[1] has 32 bytes but dsts[1] has 24")) << message;
}

TEST(CopyBatchChecks, CountsNullAndClosedBuffers) {
  const Buffer s0 = cuwrap::testing::fake_buffer(0x1000, 16);
  Buffer d0 = cuwrap::testing::fake_buffer(0x3000, 16);
  const std::vector<const Buffer*> one_src{&s0};
  const std::vector<Buffer*> no_dst;
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(one_src, no_dst, cuwrap::kPerThreadDefaultStream);
                       }),
                       "1 sources but 0 destinations"));
  const std::vector<Buffer*> null_dst{nullptr};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(one_src, null_dst, cuwrap::kPerThreadDefaultStream);
                       }),
                       "dsts[0] is null"));
  Buffer moved_to = std::move(d0);  // leaves d0 closed
  // NOLINTNEXTLINE(bugprone-use-after-move): the closed buffer is the argument tested
  const std::vector<Buffer*> closed_dst{&d0};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(one_src, closed_dst, cuwrap::kPerThreadDefaultStream);
                       }),
                       "dsts[0] is a closed Buffer"));
}

// As cuda.core, an empty batch is refused rather than silently doing nothing.
TEST(CopyBatchChecks, EmptyListsAreRefused) {
  const std::vector<const Buffer*> no_src;
  const std::vector<Buffer*> no_dst;
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(no_src, no_dst, cuwrap::kPerThreadDefaultStream);
                       }),
                       "empty"));
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(std::span<const CopyOp>{},
                                            cuwrap::kPerThreadDefaultStream);
                       }),
                       "copies is empty"));
  // Options of the wrong length are refused too (neither 1 for all nor one per copy).
  const CopyOp ops[3] = {{0x1000, 0x2000, 16}, {0x3000, 0x4000, 16}, {0x5000, 0x6000, 16}};
  const cuwrap::CopyOptions two[2] = {};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(std::span(ops), cuwrap::kPerThreadDefaultStream,
                                            std::span(two));
                       }),
                       "2 CopyOptions for 3 copies"));
}

// Buffer::copy_to with options is a copy_batch of one: its checks come first.
TEST(CopyBatchChecks, BufferCopyWithOptionsChecksAsCopyBatch) {
  const Buffer src = cuwrap::testing::fake_buffer(0x1000, 16);
  Buffer dst = cuwrap::testing::fake_buffer(0x3000, 24);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         src.copy_to(dst, cuwrap::kPerThreadDefaultStream, cuwrap::CopyOptions{});
                       }),
                       "srcs[0] has 16 bytes but dsts[0] has 24"));
  // On the legacy default stream the copy is a plain one (cuda.core's fallback), which
  // checks the sizes before the driver too.
  EXPECT_THROW(dst.copy_from(src, cuwrap::kLegacyDefaultStream, cuwrap::CopyOptions{}),
               std::invalid_argument);
}

// copy_batch does not take a GraphBuilder (cuda.core: TypeError before the capture is
// touched): the call does not compile, while a stream's does.
template <class S>
concept CopyBatchTakes = requires(const S& s, std::span<const CopyOp> ops) {
  cuwrap::copy_batch(ops, s);
};
static_assert(CopyBatchTakes<cuwrap::Stream>);
static_assert(!CopyBatchTakes<cuwrap::GraphBuilder>);

TEST(CopyBatchChecks, TheLegacyDefaultStreamIsRefused) {
  const CopyOp op{0x1000, 0x2000, 16};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(std::span(&op, 1), cuwrap::kLegacyDefaultStream);
                       }),
                       "legacy default stream"));
}

// The range forms: any range of Buffers (not only pointers), host memory on either side.
TEST(CopyBatchChecks, RangesOfBuffersAndHostMemoryNameTheIndexAndBothSizes) {
  std::vector<Buffer> srcs;
  srcs.push_back(cuwrap::testing::fake_buffer(0x1000, 16));
  srcs.push_back(cuwrap::testing::fake_buffer(0x2000, 32));
  std::array<Buffer, 2> dsts{cuwrap::testing::fake_buffer(0x3000, 16),
                             cuwrap::testing::fake_buffer(0x4000, 24)};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(srcs, dsts, cuwrap::kPerThreadDefaultStream);
                       }),
                       "srcs[1] has 32 bytes but dsts[1] has 24"));
  std::vector<std::vector<std::byte>> host(2, std::vector<std::byte>(16));
  host[1].resize(8);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(srcs, host, cuwrap::kPerThreadDefaultStream);
                       }),
                       "srcs[1] has 32 bytes but dsts[1] has 8"));
  const std::vector<std::span<const std::byte>> from_host{std::span<const std::byte>(host[0])};
  std::vector<Buffer*> one_dst{&dsts[1]};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(from_host, one_dst, cuwrap::kPerThreadDefaultStream);
                       }),
                       "srcs[0] has 16 bytes but dsts[0] has 24"));
  std::vector<Buffer*> null_dst{nullptr, nullptr};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(srcs, null_dst, cuwrap::kPerThreadDefaultStream);
                       }),
                       "dsts[0] is null"));
  // What the range forms take, and that a const Buffer is no destination.
  EXPECT_TRUE((cuwrap::detail::CopyDestinationRange<std::vector<Buffer>&>));
  EXPECT_TRUE((cuwrap::detail::CopyDestinationRange<std::vector<std::vector<std::byte>>&>));
  EXPECT_FALSE((cuwrap::detail::CopyDestinationRange<const std::vector<Buffer>&>));
  EXPECT_FALSE((cuwrap::detail::CopyDestinationRange<std::vector<const Buffer*>&>));
  EXPECT_TRUE((cuwrap::detail::CopySourceRange<const std::vector<Buffer>&>));
}

TEST(CopyBatchChecks, OptionsAreCheckedBeforeTheDriver) {
  const std::vector<CopyOp> ops{{0x1000, 0x2000, 16}, {0x1100, 0x2100, 16}};
  const std::vector<cuwrap::CopyOptions> three(3);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(ops, cuwrap::kPerThreadDefaultStream, three);
                       }),
                       "options length 3 does not match buffers length 2"));
  // A list pairs by index: one CopyOptions in a list is not applied to every copy (pass
  // the CopyOptions itself for that), as cuda.core refuses it.
  const std::vector<cuwrap::CopyOptions> one(1);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>(
                           [&] { cuwrap::copy_batch(ops, cuwrap::kPerThreadDefaultStream, one); }),
                       "options length 1 does not match buffers length 2"));
  cuwrap::CopyOptions bad_order;
  bad_order.src_access_order = static_cast<cuwrap::MemcpySrcAccessOrder>(7);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(ops, cuwrap::kPerThreadDefaultStream, bad_order);
                       }),
                       "options[0].src_access_order 7 is not a MemcpySrcAccessOrder"));
  const std::vector<cuwrap::CopyOptions> second_bad{
      cuwrap::CopyOptions{}, cuwrap::CopyOptions{.dst_location_hint = cuwrap::Host::numa(-2)}};
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(ops, cuwrap::kPerThreadDefaultStream, second_bad);
                       }),
                       "options[1].dst_location_hint names host NUMA node -2"));
  cuwrap::CopyOptions bad_overlap;
  bad_overlap.overlap_mode = static_cast<cuwrap::MemcpyOverlapMode>(5);
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([&] {
                         cuwrap::copy_batch(ops, cuwrap::kPerThreadDefaultStream, bad_overlap);
                       }),
                       "overlap_mode 5 is not a MemcpyOverlapMode"));
}

TEST(CopyChecks, PitchSmallerThanTheWidth) {
  EXPECT_TRUE(
      contains(thrown_message<std::invalid_argument>([] {
                 cuwrap::copy_2d({0x1000, 8}, {0x2000, 64}, 16, 4, cuwrap::kPerThreadDefaultStream);
               }),
               "copy_2d: the destination pitch 8 is smaller than the copied width of 16"));
  EXPECT_TRUE(contains(thrown_message<std::invalid_argument>([] {
                         cuwrap::copy_3d({0x1000, 64}, 2, {0x2000, 64}, 4, 16, 4, 1,
                                         cuwrap::kPerThreadDefaultStream);
                       }),
                       "does not fit"));
}

// ---- GPU ---------------------------------------------------------------------------

class CopyGpu : public cuwrap::testing::DeviceStreamTest {};

TEST_F(CopyGpu, NativeBatchMatchesTheToolkitAndDriverVersions) {
  // 12.8 on both sides: bindings of 13.0 headers call the 12.8 form on a 12.8 driver.
  EXPECT_EQ(cuwrap::has_native_copy_batch(),
            cuwrap::bindings_version() >= 12080 && cuwrap::driver_version() >= 12080);
}

TEST_F(CopyGpu, ManyBuffersOfDifferentSizes) {
  constexpr std::size_t kCount = 64;
  std::vector<Buffer> src;
  std::vector<Buffer> dst;
  std::vector<std::vector<std::byte>> data;
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::size_t size = 1 + (i * 37) % 300;
    data.push_back(random_bytes(size, static_cast<unsigned>(i)));
    src.push_back(device().allocate(size, stream()));
    dst.push_back(device().allocate(size, stream()));
    src.back().copy_from(std::span<const std::byte>(data.back()), stream());
    dst.back().fill(std::uint8_t{0}, stream());
  }
  std::vector<const Buffer*> srcs;
  std::vector<Buffer*> dsts;
  for (std::size_t i = 0; i < kCount; ++i) {
    srcs.push_back(&src[i]);
    dsts.push_back(&dst[i]);
  }
  cuwrap::copy_batch(srcs, dsts, stream());
  for (std::size_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(cuwrap::testing::read_back(dst[i], stream()), data[i]) << "copy " << i;
  }
}

TEST_F(CopyGpu, SubRangesInReversedOrderWithPinnedDestination) {
  constexpr std::size_t kChunk = 16;
  constexpr std::size_t kChunks = 1000;
  const auto data = random_bytes(kChunk * kChunks, 7);
  Buffer src = device().allocate(data.size(), stream());
  src.copy_from(std::span<const std::byte>(data), stream());
  cuwrap::LegacyPinnedMemoryResource pinned;
  Buffer dst = pinned.allocate(data.size(), stream());
  std::vector<CopyOp> ops;
  for (std::size_t i = 0; i < kChunks; ++i) {
    ops.push_back({dst.handle() + i * kChunk, src.handle() + (kChunks - 1 - i) * kChunk, kChunk});
  }
  cuwrap::copy_batch(ops, stream());
  stream().sync();
  const std::span<std::byte> back = dst.host_span();
  for (std::size_t i = 0; i < kChunks; ++i) {
    for (std::size_t b = 0; b < kChunk; ++b) {
      ASSERT_EQ(back[i * kChunk + b], data[(kChunks - 1 - i) * kChunk + b])
          << "chunk " << i << " byte " << b;
    }
  }
}

// Buffers by value, host memory on both sides, options (a host hint derived for the
// host side, the caller's for the rest) where the driver has cuMemcpyBatchAsync.
TEST_F(CopyGpu, RangesOfBuffersAndHostMemoryWithOptions) {
  constexpr std::size_t kCount = 8;
  std::vector<std::vector<std::byte>> host_in;
  std::vector<Buffer> device_bufs;
  for (std::size_t i = 0; i < kCount; ++i) {
    host_in.push_back(random_bytes(32 + i * 8, static_cast<unsigned>(100 + i)));
    device_bufs.push_back(device().allocate(host_in.back().size(), stream()));
  }
  std::vector<cuwrap::CopyOptions> options(kCount);
  options[1].src_access_order = cuwrap::MemcpySrcAccessOrder::DuringApiCall;
  options[2].dst_location_hint = device();
  if (!cuwrap::has_native_copy_batch()) {
    EXPECT_THROW(cuwrap::copy_batch(host_in, device_bufs, stream(), options),
                 cuwrap::UnsupportedError);
    options.assign(kCount, cuwrap::CopyOptions{});
  }
  cuwrap::copy_batch(host_in, device_bufs, stream(), options);  // host -> device
  std::vector<std::vector<std::byte>> host_out;
  for (std::size_t i = 0; i < kCount; ++i) {
    host_out.emplace_back(host_in[i].size());
  }
  const cuwrap::CopyOptions any{.src_access_order = cuwrap::MemcpySrcAccessOrder::Any};
  cuwrap::copy_batch(
      device_bufs, host_out, stream(),
      cuwrap::has_native_copy_batch() ? any : cuwrap::CopyOptions{});  // device -> host
  stream().sync();
  for (std::size_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(host_out[i], host_in[i]) << "copy " << i;
  }
}

// Buffer::copy_to/copy_from take CopyOptions as copy_batch does, and copy_to can
// allocate its destination from a memory resource (cuda.core's copy_to()).
TEST_F(CopyGpu, BufferCopiesTakeOptionsAndAllocateTheirDestination) {
  const std::vector<std::byte> data = random_bytes(256, 7);
  Buffer src = device().allocate(data.size(), stream());
  src.copy_from(std::span<const std::byte>(data), stream());
  Buffer dst = device().allocate(data.size(), stream());
  cuwrap::CopyOptions options;
  options.src_access_order = cuwrap::MemcpySrcAccessOrder::Any;
  if (!cuwrap::has_native_copy_batch()) {
    EXPECT_THROW(src.copy_to(dst, stream(), options), cuwrap::UnsupportedError);
    options = {};
  }
  src.copy_to(dst, stream(), options);
  Buffer back = device().allocate(data.size(), stream());
  back.copy_from(dst, stream(), cuwrap::CopyOptions{});
  Buffer made = back.copy_to(device().memory_resource(), stream());
  EXPECT_EQ(made.size(), data.size());
  std::vector<std::byte> out(data.size());
  made.copy_to(std::span<std::byte>(out), stream());
  stream().sync();
  EXPECT_EQ(out, data);
}

TEST_F(CopyGpu, ManagedAndPinnedBuffersGetTheirHints) {
  cuwrap::ManagedMemoryResource managed_mr(
      cuwrap::ManagedMemoryResourceOptions{.preferred_location = -1});
  cuwrap::LegacyPinnedMemoryResource pinned_mr;
  const auto data = random_bytes(4096, 5);
  std::array<Buffer, 2> srcs{managed_mr.allocate(data.size(), stream()),
                             pinned_mr.allocate(data.size(), stream())};
  stream().sync();
  std::copy(data.begin(), data.end(), srcs[0].host_span().begin());
  std::copy(data.begin(), data.end(), srcs[1].host_span().begin());
  std::array<Buffer, 2> dsts{device().allocate(data.size(), stream()),
                             managed_mr.allocate(data.size(), stream())};
  cuwrap::copy_batch(srcs, dsts, stream());
  EXPECT_EQ(cuwrap::testing::read_back(dsts[0], stream()), data);
  stream().sync();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), dsts[1].host_span().begin()));
}

TEST_F(CopyGpu, TwoDimensionalBlockBetweenPitchedBuffers) {
  constexpr std::size_t kSrcPitch = 96;
  constexpr std::size_t kDstPitch = 64;
  constexpr std::size_t kRows = 10;
  constexpr std::size_t kWidth = 40;
  const auto data = random_bytes(kSrcPitch * kRows, 3);
  Buffer src = device().allocate(data.size(), stream());
  Buffer dst = device().allocate(kDstPitch * kRows, stream());
  src.copy_from(std::span<const std::byte>(data), stream());
  dst.fill(std::uint8_t{0}, stream());
  // Rows 2..9 of the source from byte 8 on, to the top-left of the destination.
  cuwrap::copy_2d({dst.handle(), kDstPitch}, {src.handle() + 2 * kSrcPitch + 8, kSrcPitch}, kWidth,
                  kRows - 2, stream());
  const auto back = cuwrap::testing::read_back(dst, stream());
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t c = 0; c < kDstPitch; ++c) {
      const std::byte expected =
          r < kRows - 2 && c < kWidth ? data[(r + 2) * kSrcPitch + 8 + c] : std::byte{0};
      ASSERT_EQ(back[r * kDstPitch + c], expected) << "row " << r << " column " << c;
    }
  }
}

TEST_F(CopyGpu, ThreeDimensionalBoxBetweenPitchedBuffers) {
  constexpr std::size_t kPitch = 32;
  constexpr std::size_t kRows = 4;  // rows per slice in both buffers
  constexpr std::size_t kSlices = 3;
  const auto data = random_bytes(kPitch * kRows * kSlices, 11);
  Buffer src = device().allocate(data.size(), stream());
  Buffer dst = device().allocate(data.size(), stream());
  src.copy_from(std::span<const std::byte>(data), stream());
  dst.fill(std::uint8_t{0}, stream());
  cuwrap::copy_3d({dst.handle(), kPitch}, kRows, {src.handle(), kPitch}, kRows, 20, 3, kSlices,
                  stream());
  const auto back = cuwrap::testing::read_back(dst, stream());
  for (std::size_t z = 0; z < kSlices; ++z) {
    for (std::size_t y = 0; y < kRows; ++y) {
      for (std::size_t x = 0; x < kPitch; ++x) {
        const std::size_t i = (z * kRows + y) * kPitch + x;
        ASSERT_EQ(back[i], y < 3 && x < 20 ? data[i] : std::byte{0}) << z << "," << y << "," << x;
      }
    }
  }
}

}  // namespace
