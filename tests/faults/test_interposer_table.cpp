// The generator's half of the interposer (generator/src/interposer.cpp): which functions
// get a wrapper, the handle rules, and the rendered table, on hand-built models.
#include "interposer.hpp"
#include "model_builders.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace cuwrap::gen;
using namespace cuwrap::gen::testing;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Plan driver_plan(std::vector<Function> functions) {
  Plan plan;
  plan.cuda_version = 13000;
  LibraryPlan library;
  library.config = config_of("cuda.h");
  for (std::size_t i = 0; i < functions.size(); ++i) {
    library.functions.push_back(cuwrap::gen::testing::plan(functions[i]));
    library.functions.back().index = i;
  }
  plan.libraries.push_back(library);
  return plan;
}

Function mem_alloc() {
  Function f = function("cuMemAlloc", {marked(pointer("CUdeviceptr", "dptr"), "out"), value("size_t", "bytesize")});
  f.symbol = "cuMemAlloc_v2";
  f.abi_version = 3020;
  return f;
}

TEST(InterposerTable, WrapsStatusReturningDriverFunctionsOnly) {
  EXPECT_TRUE(interposer_wraps(mem_alloc()));
  EXPECT_FALSE(interposer_wraps(function("cuGetProcAddress", {}))) << "implemented by the interposer";
  EXPECT_FALSE(interposer_wraps(function("cuDriverGetVersion", {pointer("int", "driverVersion")})));
  EXPECT_FALSE(interposer_wraps(function("nvrtcVersion", {}, "nvrtcResult", "nvrtc.h")));
  EXPECT_FALSE(interposer_wraps(function("cuGetName", {}, "const char*")));
  Function variadic = mem_alloc();
  variadic.variadic = true;
  EXPECT_FALSE(interposer_wraps(variadic));
}

TEST(InterposerTable, KnowsTheCreateDestroyPairs) {
  const auto alloc = handle_effect("cuMemAlloc");
  ASSERT_TRUE(alloc.has_value());
  EXPECT_EQ(alloc->kind, "memory");
  EXPECT_TRUE(alloc->create);
  EXPECT_EQ(alloc->param, "dptr");
  const auto free = handle_effect("cuMemFreeAsync");
  ASSERT_TRUE(free.has_value());
  EXPECT_EQ(free->kind, "memory");
  EXPECT_FALSE(free->create);
  const auto retain = handle_effect("cuDevicePrimaryCtxRetain");
  ASSERT_TRUE(retain.has_value());
  EXPECT_TRUE(retain->by_value) << "a retain is keyed by the device, as its release";
  for (const char* name : {"cuStreamDestroy", "cuEventDestroy", "cuModuleUnload", "cuLibraryUnload",
                           "cuGraphDestroy", "cuGraphExecDestroy", "cuCtxDestroy", "cuLinkDestroy",
                           "cuMemPoolDestroy"}) {
    EXPECT_TRUE(handle_effect(name).has_value()) << name;
  }
  EXPECT_FALSE(handle_effect("cuStreamSynchronize").has_value());
}

TEST(InterposerTable, RendersOneEntryPerVariantWithItsAbiVersion) {
  Function copy = function("cuMemcpyHtoD", {value("CUdeviceptr", "dstDevice"), pointer("void", "srcHost", "", true),
                                            value("size_t", "ByteCount")});
  copy.symbol = "cuMemcpyHtoD_v2";
  copy.per_thread_symbol = "cuMemcpyHtoD_v2_ptds";
  copy.abi_version = 3020;
  copy.per_thread_abi_version = 7000;
  const auto file = render_interposer(driver_plan({mem_alloc(), copy}), CUWRAP_GEN_TEMPLATE_DIR);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->path, "interposer/interposer.cpp");
  const std::string& text = file->text;
  EXPECT_TRUE(has(text, "{\"cuMemAlloc\", \"cuMemAlloc\", \"cuMemAlloc_v2\", 3020, false,")) << text;
  EXPECT_TRUE(has(text, "\"dptr,bytesize\", 1u, 0u, Effect::Create, \"memory\", 0}")) << text;
  EXPECT_TRUE(has(text, "\"cuMemcpyHtoD_v2\", 3020, false,")) << text;
  EXPECT_TRUE(has(text, "\"cuMemcpyHtoD_v2_ptds\", 7000, true,")) << "the per-thread variant: " << text;
  EXPECT_TRUE(has(text, "\"dstDevice,srcHost,ByteCount\", 0u, 1u, Effect::None")) << "device address in hex";
  EXPECT_TRUE(has(text, "CUresult CUDAAPI w0(CUdeviceptr* dptr, size_t bytesize)")) << text;
}

TEST(InterposerTable, ARuleNamingAMissingParameterFailsTheRender) {
  Function renamed = function("cuMemFree", {value("CUdeviceptr", "pointer")});
  EXPECT_THROW(render_interposer(driver_plan({renamed}), CUWRAP_GEN_TEMPLATE_DIR), RenderFailure);
}

TEST(InterposerTable, NothingWithoutCudaH) {
  Plan plan;
  LibraryPlan nvrtc;
  nvrtc.config = config_of("nvrtc.h");
  plan.libraries.push_back(nvrtc);
  EXPECT_FALSE(render_interposer(plan, CUWRAP_GEN_TEMPLATE_DIR).has_value());
}

}  // namespace
