// rules.cpp on hand-built models: output inference, answers, strings, size queries,
// log handles, raw-only fallbacks, enum folding and attribute lists; the known ABI
// versions of --abi-from-defines.
#include "known_abi.hpp"
#include "model_builders.hpp"
#include "rules.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace cuwrap::gen {
namespace {

using testing::function;
using testing::marked;
using testing::plan;
using testing::pointer;
using testing::value;

// Owning handles: a pointer handle created and destroyed in one family is a pair; an
// integer handle (its type says nothing), a destroy that is not the handle's release
// (cuGraphDestroyNode), a getter and a deprecated or second release are not.
TEST(Rules, OwningHandlesArePairsTheHeaderProves) {
  Header h;
  h.file = "cuda.h";
  h.typedefs = {{"CUmodule", "struct CUmod_st *", "cuda.h"},
                {"CUgraphNode", "struct CUgraphNode_st *", "cuda.h"},
                {"CUtexObject", "unsigned long long", "cuda.h"},
                {"CUevent", "struct CUevent_st *", "cuda.h"},
                {"CUstream", "struct CUstream_st *", "cuda.h"},
                {"CUexternalMemory", "struct CUextMemory_st *", "cuda.h"}};
  Function old_destroy = function("cuStreamDestroyOld", {value("CUstream", "s")});
  old_destroy.deprecated = true;
  const std::vector<Function> functions = {
      function("cuModuleLoad", {pointer("CUmodule", "module", "Returned module"),
                                pointer("char", "fname", "", true)}),
      function("cuModuleGetLoadingMode", {pointer("CUmodule", "module", "Returned module")}),
      function("cuModuleUnload", {value("CUmodule", "hmod")}),
      function("cuGraphAddEmptyNode", {pointer("CUgraphNode", "node", "Returned node")}),
      function("cuGraphDestroyNode", {value("CUgraphNode", "node")}),
      function("cuTexObjectCreate", {pointer("CUtexObject", "tex", "Returned texture object")}),
      function("cuTexObjectDestroy", {value("CUtexObject", "tex")}),
      function("cuEventCreate",
               {pointer("CUevent", "ev", "Returned event"), value("unsigned int", "flags")}),
      function("cuEventDestroy", {value("CUevent", "ev")}),
      function("cuEventRelease", {value("CUevent", "ev")}),  // a second release
      function("cuStreamCreate", {pointer("CUstream", "s", "Returned stream")}),
      old_destroy,
      function("cuImportExternalMemory", {pointer("CUexternalMemory", "mem", "Returned handle")}),
      function("cuDestroyExternalMemory", {value("CUexternalMemory", "mem")}),
  };
  std::vector<FunctionPlan> plans;
  for (const auto& f : functions) {
    plans.push_back(plan(f));
  }
  const auto owning = owning_handles(plans, h);
  ASSERT_EQ(owning.size(), 3U);
  EXPECT_EQ(owning[0].handle, "CUmodule");
  EXPECT_EQ(owning[0].destroy, "cuModuleUnload");
  EXPECT_EQ(owning[0].creators, std::vector<std::string>{"cuModuleLoad"});
  EXPECT_EQ(owning[1].handle, "CUevent");
  EXPECT_EQ(owning[1].destroy, "cuEventDestroy");
  EXPECT_EQ(owning[1].creators, std::vector<std::string>{"cuEventCreate"});
  EXPECT_EQ(owning[2].handle, "CUexternalMemory");
  EXPECT_EQ(owning[2].destroy, "cuDestroyExternalMemory");
  EXPECT_EQ(owning[2].creators, std::vector<std::string>{"cuImportExternalMemory"});
}

TEST(Rules, ReturnedPointerIsTheValue) {
  const auto p = plan(
      function("cuMemAlloc", {pointer("CUdeviceptr", "dptr", "Returned device pointer"),
                              value("size_t", "bytesize", "Requested allocation size in bytes")}));
  EXPECT_EQ(p.shape, Shape::Value);
  EXPECT_EQ(p.roles, (std::vector<ParamRole>{ParamRole::Output, ParamRole::Input}));
}

TEST(Rules, SeveralOutputsMakeAnAggregate) {
  const auto p = plan(
      function("cuMemGetInfo", {pointer("size_t", "free", "Returned free memory in bytes"),
                                pointer("size_t", "total", "Returned total memory in bytes")}));
  EXPECT_EQ(p.shape, Shape::Aggregate);
  EXPECT_EQ(p.outputs(), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(p.result_local, "result");
}

TEST(Rules, OutMarkerMakesAnOutputAndInMarkerKeepsAnInput) {
  const auto p = plan(
      function("nvrtcCreateProgram",
               {marked(pointer("nvrtcProgram", "prog", "CUDA Runtime Compilation program."), "out"),
                marked(pointer("char", "src", "CUDA program source.", true), "in")},
               "nvrtcResult", "nvrtc.h"));
  EXPECT_EQ(p.shape, Shape::Value);
  const auto destroy = plan(
      function("nvrtcDestroyProgram",
               {marked(pointer("nvrtcProgram", "prog", "CUDA Runtime Compilation program."), "in")},
               "nvrtcResult", "nvrtc.h"));
  EXPECT_EQ(destroy.shape, Shape::Void);
}

TEST(Rules, ArraysAndInOutCountsStayInputs) {
  const auto nodes = plan(
      function("cuGraphGetNodes", {value("CUgraph", "hGraph", "Graph to query"),
                                   pointer("CUgraphNode", "nodes", "Pointer to return the nodes"),
                                   pointer("size_t", "numNodes", "See description")}));
  EXPECT_EQ(nodes.shape, Shape::Void);
  const auto archs = plan(function(
      "nvrtcGetSupportedArchs",
      {marked(pointer("int", "supportedArchs", "sorted array of supported architectures."), "out")},
      "nvrtcResult", "nvrtc.h"));
  EXPECT_EQ(archs.shape, Shape::Void) << "an [out] array must not become a single int";
}

TEST(Rules, HostBuffersStayInputs) {
  const auto p = plan(function(
      "cuMemcpyDtoH", {pointer("void", "dstHost", "Destination host pointer", false, false),
                       value("CUdeviceptr", "srcDevice"), value("size_t", "ByteCount")}));
  EXPECT_EQ(p.shape, Shape::Void);
}

TEST(Rules, GettersReturnUndocumentedLeadingPointers) {
  const auto p = plan(function(
      "cuMemGetMemPool", {pointer("CUmemoryPool", "pool"), pointer("CUmemLocation", "location"),
                          value("CUmemAllocationType", "type")}));
  EXPECT_EQ(p.shape, Shape::Value);
  EXPECT_EQ(p.outputs(), std::vector<std::size_t>{0});
}

TEST(Rules, AnswerStatusesReturnBool) {
  const auto p = plan(function("cuStreamQuery", {value("CUstream", "hStream")}));
  EXPECT_EQ(p.shape, Shape::Answer);
  EXPECT_EQ(p.answer_status, "CUDA_ERROR_NOT_READY");
}

TEST(Rules, CharBufferWithLengthIsAString) {
  const auto p = plan(function("cuDeviceGetName",
                               {pointer("char", "name", "Returned identifier string"),
                                value("int", "len", "Maximum length"), value("CUdevice", "dev")}));
  EXPECT_EQ(p.shape, Shape::String);
  EXPECT_EQ(p.roles, (std::vector<ParamRole>{ParamRole::StringBuffer, ParamRole::StringLength,
                                             ParamRole::Input}));
  EXPECT_GE(p.string_length, 64u);
}

TEST(Rules, SizeQueryPairsGetOneCallForms) {
  std::vector<FunctionPlan> plans = {
      plan(function("nvrtcGetPTXSize",
                    {value("nvrtcProgram", "prog"),
                     marked(pointer("size_t", "ptxSizeRet", "Size of the PTX."), "out")},
                    "nvrtcResult", "nvrtc.h")),
      plan(function("nvrtcGetPTX",
                    {value("nvrtcProgram", "prog"),
                     marked(pointer("char", "ptx", "Compiled result."), "out")},
                    "nvrtcResult", "nvrtc.h")),
      plan(function("nvrtcGetCUBINSize",
                    {value("nvrtcProgram", "prog"),
                     marked(pointer("size_t", "cubinSizeRet", "Size of the cubin."), "out")},
                    "nvrtcResult", "nvrtc.h")),
      plan(function("nvrtcGetCUBIN", {value("nvrtcProgram", "prog"), pointer("char", "cubin")},
                    "nvrtcResult", "nvrtc.h")),
      plan(function("nvrtcGetPCHHeapSize",
                    {pointer("size_t", "ret", "pointer to location of the size")}, "nvrtcResult",
                    "nvrtc.h")),
  };
  add_one_call_forms(plans);
  ASSERT_TRUE(plans[1].one_call.has_value());
  EXPECT_EQ(plans[1].one_call->size_function, "nvrtcGetPTXSize");
  EXPECT_TRUE(plans[1].one_call->text);
  ASSERT_TRUE(plans[3].one_call.has_value());
  EXPECT_FALSE(plans[3].one_call->text) << "a cubin is binary";
  EXPECT_FALSE(plans[0].one_call.has_value());
  EXPECT_FALSE(plans[4].one_call.has_value()) << "no nvrtcGetPCHHeap to pair with";
}

TEST(Rules, ProgramAndLinkerInputsCarryTheirLogs) {
  EXPECT_EQ(plan(function("nvrtcCompileProgram",
                          {value("nvrtcProgram", "prog"), value("int", "numOptions")},
                          "nvrtcResult", "nvrtc.h"))
                .log_handle,
            "prog");
  EXPECT_EQ(plan(function("nvJitLinkComplete", {value("nvJitLinkHandle", "handle")},
                          "nvJitLinkResult", "nvJitLink.h"))
                .log_handle,
            "handle");
  // Create takes the handle by pointer: there is no log yet.
  EXPECT_EQ(plan(function("nvJitLinkCreate", {marked(pointer("nvJitLinkHandle", "handle"), "out")},
                          "nvJitLinkResult", "nvJitLink.h"))
                .log_handle,
            "");
}

TEST(Rules, UnknownShapesFallBackToRawWithAReason) {
  auto variadic =
      function("cuLogMessage", {pointer("char", "format", "printf-style format", true)});
  variadic.variadic = true;
  const auto v = plan(variadic);
  EXPECT_EQ(v.shape, Shape::RawOnly);
  EXPECT_NE(v.raw_only_reason.find("variadic"), std::string::npos);

  const auto opaque = plan(
      function("cuOpaqueGetState",
               {pointer("struct CUopaque_st", "state", "Returned opaque state", false, false)}));
  EXPECT_EQ(opaque.shape, Shape::RawOnly);
  EXPECT_NE(opaque.raw_only_reason.find("state"), std::string::npos);
  EXPECT_NE(opaque.raw_only_reason.find("incomplete"), std::string::npos);
}

TEST(Rules, FunctionsWithoutStatusPassThrough) {
  const auto p = plan(
      function("nvrtcGetErrorString", {value("nvrtcResult", "result")}, "const char*", "nvrtc.h"));
  EXPECT_EQ(p.shape, Shape::PassThrough);
  EXPECT_FALSE(p.returns_status);
}

TEST(Rules, LocalsAvoidParameterNames) {
  const auto p =
      plan(function("cuLaunchHostFunc", {value("CUstream", "hStream"), value("CUhostFn", "fn")}));
  EXPECT_EQ(p.entry_local, "fn_");
}

TEST(Rules, EnumsFoldAliasesToTheCurrentName) {
  Api api;
  api.cuda_version = 12345;
  Header h;
  h.file = "cuda.h";
  h.enums.push_back(
      {"CUdevice_attribute",
       {{"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", 1, "Maximum threads", false},
        {"CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK", 8, "Deprecated, use the MAX_ form", false},
        {"CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK", 8, "Maximum shared memory", false},
        {"CU_DEVICE_ATTRIBUTE_WARP_SIZE", 10, "Warp size", false},
        {"CU_DEVICE_ATTRIBUTE_MAX", 11, "", false}},
       "cuda.h"});
  h.enums.push_back({"CUresult",
                     {{"CUDA_SUCCESS", 0, "The API call returned with no errors.", false},
                      {"CUDA_ERROR_INVALID_VALUE", 1,
                       "This indicates that a value is invalid. More text.", false}},
                     "cuda.h"});
  api.headers.push_back(h);
  const Plan p = make_plan(api);
  ASSERT_EQ(p.libraries.size(), 1u);
  const auto& enums = p.libraries[0].enums;
  ASSERT_EQ(enums.size(), 2u);
  std::vector<std::string> names;
  for (const auto& c : enums[0].cases) {
    names.push_back(c.name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
                                      "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK",
                                      "CU_DEVICE_ATTRIBUTE_WARP_SIZE", "CU_DEVICE_ATTRIBUTE_MAX"}));
  EXPECT_TRUE(enums[1].is_status);
  EXPECT_EQ(enums[1].cases[1].description, "a value is invalid");

  ASSERT_EQ(p.attribute_lists.size(), 1u);
  const auto& attrs = p.attribute_lists[0];
  EXPECT_EQ(attrs.file, "device_attributes.inc");
  ASSERT_EQ(attrs.entries.size(), 3u) << "the _MAX sentinel is left out";
  EXPECT_EQ(attrs.entries[0].name, "max_threads_per_block");
  EXPECT_EQ(attrs.entries[1].name, "max_shared_memory_per_block");
  EXPECT_EQ(attrs.entries[2].name, "warp_size");
}

TEST(Rules, StatusDescriptions) {
  EXPECT_EQ(
      describe_status(
          {"CUDA_ERROR_NOT_READY", 600,
           "This indicates that asynchronous operations issued previously have not completed yet. "
           "More.",
           false}),
      "asynchronous operations issued previously have not completed yet");
  EXPECT_EQ(describe_status({"NVRTC_ERROR_OUT_OF_MEMORY", 1, "", false}), "out of memory");
  EXPECT_EQ(describe_status({"NVRTC_SUCCESS", 0, "", false}), "success");
}

TEST(Rules, DeclaresFunctionPointerParameters) {
  EXPECT_EQ(declare("int (*)(void*, void*)", "callback"), "int (*callback)(void*, void*)");
  EXPECT_EQ(declare("const char* const*", "headers"), "const char* const* headers");
}

// The first version of each variant, never another variant's: cuCtxCreate_v4 is 12.5's
// ABI, cuCtxCreate_v2 3.2's; a variant the table does not know is 0, not a guess.
// The decisions of the parameters' documentation are listed "to review" with the rule
// that decided, and only they: a classification that the types, names and [out]
// markers give as well has nothing to review.
const FunctionPlan& planned_in(const Plan& plan, const std::string& name) {
  for (const auto& lib : plan.libraries) {
    for (const auto& f : lib.functions) {
      if (f.function.name == name) {
        return f;
      }
    }
  }
  throw std::runtime_error(name + " not planned");
}

TEST(Rules, DecisionsOfTheDocumentationAreListedToReview) {
  Api api;
  Header cuda;
  cuda.file = "cuda.h";
  cuda.functions = {
      // An output only because the text says "Returned": no Get/Create in the name.
      function("cuMemAlloc", {pointer("CUdeviceptr", "dptr", "Returned device pointer"),
                              value("size_t", "bytesize", "Requested allocation size in bytes")}),
      // Get + first position: an output with or without the text.
      function("cuCtxGetDevice", {pointer("CUdevice", "device", "Returned device ID")}),
      // Get + a documented pointer that is not first: an output because it has a text
      // at all (one that does not say "returned").
      function("cuThingGetFlags",
               {value("CUthing", "hThing"), pointer("unsigned int", "flags", "Flags")}),
      // An [out] marker decides, not the text.
      function("cuThingMake", {marked(pointer("CUthing", "thing", "The thing"), "out")}),
      // "See description" makes numNodes an in/out count and nodes a vector.
      function("cuGraphGetNodes", {value("CUgraph", "hGraph", "Graph to query"),
                                   pointer("CUgraphNode", "nodes", "Pointer to return the nodes"),
                                   pointer("size_t", "numNodes", "See description")}),
  };
  api.headers.push_back(cuda);
  const Plan plan = make_plan(api);
  const auto& alloc = planned_in(plan, "cuMemAlloc").to_review;
  ASSERT_EQ(alloc.size(), 1u);
  EXPECT_EQ(alloc[0].param, "dptr");
  EXPECT_EQ(alloc[0].rule, "documented as written by the call (\"returned\", \"stores\", ...)");
  EXPECT_TRUE(planned_in(plan, "cuCtxGetDevice").to_review.empty());
  EXPECT_TRUE(planned_in(plan, "cuThingMake").to_review.empty());
  const auto& flags = planned_in(plan, "cuThingGetFlags").to_review;
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].param, "flags");
  EXPECT_NE(flags[0].rule.find("Get function: a documented pointer"), std::string::npos)
      << flags[0].rule;
  const auto& nodes = planned_in(plan, "cuGraphGetNodes").to_review;
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes[0].param, "nodes");
  EXPECT_NE(nodes[0].rule.find("second form (enumeration counted by numNodes): vector"),
            std::string::npos)
      << nodes[0].rule;
  // Each role has the rule that decided it.
  const auto& rules = planned_in(plan, "cuThingMake").role_rules;
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0], "[out] marker");
}

TEST(KnownAbi, EachVariantHasItsOwnFirstVersion) {
  EXPECT_EQ(known_abi_version("cuCtxCreate_v2"), 3020);
  EXPECT_EQ(known_abi_version("cuCtxCreate_v4"), 12050);
  EXPECT_EQ(known_abi_version("cuStreamGetCtx"), 9020);
  EXPECT_EQ(known_abi_version("cuStreamGetCtx_v2"), 12050);
  EXPECT_EQ(known_abi_version("cuMemcpyHtoD_v2_ptds"), 7000);
  EXPECT_EQ(known_abi_version("cuCtxCreate_v9"), 0);
  EXPECT_EQ(known_abi_version("cuCtxCreate"), 0) << "the v1 ABI is not in the table";
  EXPECT_EQ(unversioned("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
}

TEST(KnownAbi, DefinesGiveVersionsAndNameWhatIsUnknown) {
  Api api;
  api.cuda_version = 13030;
  Header cuda{"cuda.h", {}, {}, {}, {}};
  Function create = function("cuCtxCreate", {});
  create.symbol = "cuCtxCreate_v4";
  Function copy = function("cuMemcpyHtoD", {});
  copy.symbol = "cuMemcpyHtoD_v2";
  copy.per_thread_symbol = "cuMemcpyHtoD_v2_ptds";
  Function instantiate = function("cuGraphInstantiate", {});
  instantiate.symbol = "cuGraphInstantiateWithFlags";
  Function future = function("cuFutureThing", {});
  future.symbol = "cuFutureThing_v2";
  cuda.functions = {create, copy, instantiate, future};
  Header nvrtc{"nvrtc.h", {function("nvrtcVersion", {})}, {}, {}, {}};
  api.headers = {cuda, nvrtc};

  assign_abi_from_defines(api);
  EXPECT_EQ(api.abi_source, AbiSource::Defines);
  const auto& f = api.headers[0].functions;
  EXPECT_EQ(f[0].abi_version, 12050);
  EXPECT_EQ(f[0].proc_name, "") << "cuGetProcAddress knows it as cuCtxCreate";
  EXPECT_FALSE(f[0].abi_version_unknown);
  EXPECT_EQ(f[1].abi_version, 3020);
  EXPECT_EQ(f[1].per_thread_abi_version, 7000);
  EXPECT_EQ(f[2].abi_version, 11040);
  EXPECT_EQ(f[2].proc_name, "cuGraphInstantiateWithFlags");
  EXPECT_EQ(f[3].abi_version, 13030) << "unknown: requested as CUDA_VERSION";
  EXPECT_TRUE(f[3].abi_version_unknown);
  EXPECT_EQ(f[3].proc_name, "") << "cuFutureThing_v2 is asked for as cuFutureThing";
  EXPECT_EQ(api.headers[1].functions[0].abi_version, 0) << "only the driver has ABI versions";
  EXPECT_FALSE(api.headers[1].functions[0].abi_version_unknown);
}

TEST(Rules, TwoCallBufferProtocolKeepsTheCountAndArrayAsInputsOfTheFirstForm) {
  // The shape of NVML's nvmlDeviceGetComputeRunningProcesses: the count is the array's
  // capacity in and the needed count out. The first form passes both through (and throws
  // on NVML_ERROR_INSUFFICIENT_SIZE); the second (shapes.cpp) sizes the array.
  const Function processes =
      function("fixDeviceGetProcesses",
               {value("fixDevice_t", "device", "The device"),
                pointer("unsigned int", "infoCount",
                        "Reference in which to provide the infos array size, and to return the "
                        "number of returned elements"),
                pointer("fixProcessInfo_t", "infos",
                        "Reference in which to return the process information")},
               "nvmlReturn_t", "nvml.h");
  LibraryConfig config = *library_config("nvml.h");
  const FunctionPlan sized = plan_function(processes, config);
  EXPECT_EQ(sized.shape, Shape::Void);
  EXPECT_EQ(sized.roles,
            (std::vector<ParamRole>{ParamRole::Input, ParamRole::Input, ParamRole::Input}));
  EXPECT_EQ(sized.sized_count, 1u);
  EXPECT_EQ(sized.sized_arrays, std::vector<std::size_t>{2});
  EXPECT_TRUE(sized.sized_capacity_in);
  EXPECT_FALSE(sized.sized_in_bytes);
  EXPECT_EQ(sized.sized_status, "NVML_ERROR_INSUFFICIENT_SIZE");
  // A count written only, beside a buffer the caller sizes from elsewhere (the shape of
  // nvmlDeviceGetGpuInstances): the first form returns the count.
  const Function instances =
      function("fixDeviceGetInstances",
               {value("fixDevice_t", "device", "The device"),
                pointer("fixInstance_t", "instances",
                        "Returns the instances, the buffer must be large enough"),
                pointer("unsigned int", "count", "The count of returned instances")},
               "nvmlReturn_t", "nvml.h");
  const FunctionPlan written = plan_function(instances, config);
  EXPECT_EQ(written.shape, Shape::Value);
  EXPECT_EQ(written.roles,
            (std::vector<ParamRole>{ParamRole::Input, ParamRole::Input, ParamRole::Output}));
  EXPECT_FALSE(written.sized_capacity_in);
  // A library without the protocol sees no such pair.
  config.sized_buffer_status.clear();
  EXPECT_TRUE(plan_function(processes, config).sized_arrays.empty());
  // Two plain outputs whose names say no count stay typed under the protocol.
  const Function utilization =
      function("fixDeviceGetEncoderUtilization",
               {value("fixDevice_t", "device", "The device"),
                pointer("unsigned int", "utilization",
                        "Reference to an unsigned int for encoder utilization info"),
                pointer("unsigned int", "samplingPeriodUs",
                        "Reference to an unsigned int for the sampling period")},
               "nvmlReturn_t", "nvml.h");
  EXPECT_EQ(plan_function(utilization, *library_config("nvml.h")).shape, Shape::Aggregate);
  // A count output beside other outputs, documented as a plain count, stays typed.
  const Function stats =
      function("fixDeviceGetEncoderStats",
               {value("fixDevice_t", "device", "The device"),
                pointer("unsigned int", "sessionCount",
                        "Reference to an unsigned int for count of active encoder sessions"),
                pointer("unsigned int", "averageFps",
                        "Reference to an unsigned int for trailing average FPS")},
               "nvmlReturn_t", "nvml.h");
  EXPECT_EQ(plan_function(stats, *library_config("nvml.h")).shape, Shape::Aggregate);
}

}  // namespace
}  // namespace cuwrap::gen
