// ObjectCode::get_global and kernel_names: a __constant__ table and a __device__ counter
// written and read through the BufferRef get_global returns, names of templates given
// as name expressions, and the errors for unknown names and unloadable code.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::testing::contains;

constexpr const char* kGlobalsSource = R"(
__constant__ float table[4];
__device__ unsigned counter;
template <typename T> __device__ T scale_of;
template __device__ float scale_of<float>;

extern "C" __global__ void lookup(const unsigned* index, float* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = table[index[i] % 4u] * scale_of<float>;
    atomicAdd(&counter, 1u);
  }
}
extern "C" __global__ void other() {}
)";

TEST(ModuleGlobals, UnloadableCodeIsALogicError) {
  const cuwrap::ObjectCode ltoir =
      cuwrap::ObjectCode::from_ltoir(std::vector<std::byte>{std::byte{'x'}}, "ir");
  EXPECT_THROW((void)ltoir.kernel_names(), std::logic_error);
}

class ModuleGlobalsGpu : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    CUWRAP_REQUIRE_NVRTC();
    cuwrap::Program program(kGlobalsSource, cuwrap::CodeType::Cxx);
    code_.emplace(program.compile(cuwrap::TargetType::Cubin, {"&scale_of<float>"}));
  }

  std::optional<cuwrap::ObjectCode> code_;
};

TEST_F(ModuleGlobalsGpu, ConstantTableAndDeviceCounterAreBuffers) {
  const cuwrap::BufferRef table = code_->get_global("table", device());
  ASSERT_EQ(table.size(), 4 * sizeof(float));
  const cuwrap::BufferRef counter = code_->get_global("counter", device());
  ASSERT_EQ(counter.size(), sizeof(unsigned));
  const cuwrap::BufferRef scale = code_->get_global("&scale_of<float>", device());
  ASSERT_EQ(scale.size(), sizeof(float));

  const std::array<float, 4> values{1.5F, -2.0F, 4.0F, 8.25F};
  table.as<float>().copy_from(values, stream());
  const std::array<float, 1> two{2.0F};
  scale.as<float>().copy_from(two, stream());
  const std::array<unsigned, 1> zero{0};
  counter.as<unsigned>().copy_from(zero, stream());

  constexpr unsigned kN = 300;
  std::vector<unsigned> index(kN);
  for (unsigned i = 0; i < kN; ++i) {
    index[i] = i * 7u;
  }
  cuwrap::Buffer index_buffer = device().allocate(kN * sizeof(unsigned), stream());
  cuwrap::Buffer out = device().allocate(kN * sizeof(float), stream());
  index_buffer.as<unsigned>().copy_from(index, stream());
  cuwrap::launch(stream(), {.grid = 3, .block = 128}, code_->get_kernel("lookup"),
                 index_buffer.as<const unsigned>(), out.as<float>(), kN);
  std::vector<float> result(kN);
  out.as<float>().copy_to(result, stream());
  std::array<unsigned, 1> launched{};
  counter.as<unsigned>().copy_to(launched, stream());
  std::array<float, 4> table_back{};
  table.as<float>().copy_to(table_back, stream());
  stream().sync();
  for (unsigned i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], values[index[i] % 4] * 2.0F) << i;
  }
  EXPECT_EQ(launched[0], kN);
  EXPECT_EQ(table_back, values);
}

TEST_F(ModuleGlobalsGpu, UnknownNamesAreInvalidArguments) {
  try {
    (void)code_->get_global("no_such_variable", device());
    FAIL() << "an unknown global was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "no_such_variable")) << e.what();
  }
}

TEST_F(ModuleGlobalsGpu, KernelNamesListEveryKernel) {
  std::vector<std::string> names = code_->kernel_names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"lookup", "other"}));
}

}  // namespace
