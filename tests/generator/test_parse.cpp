// parse.cpp on the fixture headers of tests/fixtures/ (libclang), and the doc-comment
// reader; then the plan those fixtures produce.
#include "known_abi.hpp"
#include "libraries.hpp"
#include "parse.hpp"
#include "report.hpp"
#include "rules.hpp"
#include "shapes.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace cuwrap::gen {
namespace {

const std::filesystem::path kBasic = std::filesystem::path(CUWRAP_FIXTURES_DIR) / "basic";

const Function& find(const Header& h, const std::string& name) {
  const auto it = std::find_if(h.functions.begin(), h.functions.end(),
                               [&](const Function& f) { return f.name == name; });
  if (it == h.functions.end()) {
    throw std::runtime_error("no function " + name);
  }
  return *it;
}

class ParseBasic : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { api_ = new Api(parse_headers(kBasic)); }
  static void TearDownTestSuite() {
    delete api_;
    api_ = nullptr;
  }
  static const Header& header(const std::string& file) { return *api_->find(file); }
  static Api* api_;
};
Api* ParseBasic::api_ = nullptr;

TEST_F(ParseBasic, ReadsCudaVersionAndAllHeaders) {
  EXPECT_EQ(api_->cuda_version, 12030);
  ASSERT_EQ(api_->headers.size(), 3u);
  EXPECT_EQ(header("cuda.h").functions.size(), 8u);
  EXPECT_EQ(header("nvrtc.h").functions.size(), 4u);
  EXPECT_EQ(header("nvJitLink.h").functions.size(), 2u)
      << "the __nvJitLink*_12_3 externs are not public";
}

TEST_F(ParseBasic, PublicNamesMapToVersionedSymbols) {
  const Header& cuda = header("cuda.h");
  EXPECT_EQ(find(cuda, "cuMemAlloc").symbol, "cuMemAlloc_v2");
  EXPECT_EQ(find(cuda, "cuMemGetInfo").symbol, "cuMemGetInfo_v2");
  EXPECT_EQ(find(cuda, "cuDeviceGetName").symbol, "cuDeviceGetName");
  std::vector<std::pair<std::string, std::string>> defines;
  for (const auto& d : cuda.defines) {
    defines.emplace_back(d.name, d.symbol);
  }
  EXPECT_NE(std::find(defines.begin(), defines.end(),
                      std::make_pair(std::string("cuMemAlloc"), std::string("cuMemAlloc_v2"))),
            defines.end());
}

TEST_F(ParseBasic, PerThreadVariantsComeFromTheSecondParse) {
  const Header& cuda = header("cuda.h");
  EXPECT_EQ(find(cuda, "cuMemcpyHtoD").per_thread_symbol, "cuMemcpyHtoD_v2_ptds");
  EXPECT_EQ(find(cuda, "cuStreamQuery").per_thread_symbol, "cuStreamQuery_ptsz")
      << "defined only under CUDA_API_PER_THREAD_DEFAULT_STREAM";
  EXPECT_EQ(find(cuda, "cuMemAlloc").per_thread_symbol, "");
}

TEST_F(ParseBasic, ParametersAndDocumentation) {
  const Function& alloc = find(header("cuda.h"), "cuMemAlloc");
  EXPECT_EQ(alloc.brief, "Allocates device memory");
  ASSERT_EQ(alloc.params.size(), 2u);
  EXPECT_EQ(alloc.params[0].name, "dptr");
  EXPECT_EQ(alloc.params[0].type, "CUdeviceptr*");
  EXPECT_TRUE(alloc.params[0].is_pointer);
  EXPECT_EQ(alloc.params[0].pointee, "CUdeviceptr");
  EXPECT_EQ(alloc.params[0].doc, "Returned device pointer");
  EXPECT_FALSE(alloc.params[1].is_pointer);

  const Function& version = find(header("nvrtc.h"), "nvrtcVersion");
  EXPECT_EQ(version.params[0].direction, "out");
  EXPECT_EQ(version.params[0].doc, "CUDA Runtime Compilation major version number.");

  const Function& opaque = find(header("cuda.h"), "cuOpaqueGetState");
  EXPECT_FALSE(opaque.params[0].pointee_complete);
  EXPECT_TRUE(find(header("cuda.h"), "cuLogMessage").variadic);
}

TEST_F(ParseBasic, InlineForwardersArePublicAndLoadTheirCallee) {
  const Function& create = find(header("nvJitLink.h"), "nvJitLinkCreate");
  EXPECT_EQ(create.symbol, "__nvJitLinkCreate_12_3") << "derived from the body, not hard-coded";
  EXPECT_TRUE(create.inline_forwarder);
  EXPECT_EQ(create.brief, "nvJitLinkCreate creates an instance of nvJitLinkHandle.")
      << "the comment sits before #ifndef NVJITLINK_NO_INLINE";
  EXPECT_EQ(create.params[0].direction, "out");
  EXPECT_EQ(create.params[2].type, "const char**") << "the public signature, not the extern's";
}

TEST_F(ParseBasic, EnumsUseTheirTypedefNames) {
  const Header& cuda = header("cuda.h");
  ASSERT_GE(cuda.enums.size(), 3u);
  EXPECT_EQ(cuda.enums[0].name, "CUresult");
  EXPECT_EQ(cuda.enums[0].enumerators[3].name, "CUDA_ERROR_NOT_READY");
  EXPECT_EQ(cuda.enums[0].enumerators[3].value, 600);
  EXPECT_EQ(cuda.enums[0].enumerators[0].doc, "The API call returned with no errors.");
  EXPECT_EQ(cuda.enums[1].name, "CUdevice_attribute");
  EXPECT_EQ(cuda.enums[1].enumerators[1].doc,
            "Deprecated, use CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK");
  EXPECT_EQ(header("nvrtc.h").enums[0].name, "nvrtcResult")
      << "anonymous enum named by its typedef";
}

TEST_F(ParseBasic, PlanInfersOutputsAndReportsRawOnly) {
  const Plan plan = make_plan(*api_);
  const auto& driver = plan.libraries[0].functions;
  auto shape = [&](const std::string& name) {
    return std::find_if(driver.begin(), driver.end(),
                        [&](const FunctionPlan& f) { return f.function.name == name; })
        ->shape;
  };
  EXPECT_EQ(shape("cuMemAlloc"), Shape::Value);
  EXPECT_EQ(shape("cuMemGetInfo"), Shape::Aggregate);
  EXPECT_EQ(shape("cuMemcpyHtoD"), Shape::Void);
  EXPECT_EQ(shape("cuStreamQuery"), Shape::Answer);
  EXPECT_EQ(shape("cuDeviceGetName"), Shape::String);
  EXPECT_EQ(shape("cuGraphGetNodes"), Shape::Void);
  EXPECT_EQ(shape("cuOpaqueGetState"), Shape::RawOnly);
  EXPECT_EQ(shape("cuLogMessage"), Shape::RawOnly);
  const auto& nvrtc = plan.libraries[1].functions;
  EXPECT_EQ(nvrtc[1].shape, Shape::Aggregate);  // nvrtcVersion
  EXPECT_TRUE(nvrtc[3].one_call.has_value());   // nvrtcGetPTX
}

TEST(Parse, MissingDirectoryAndHeaderAreMissingInput) {
  EXPECT_THROW(parse_headers(kBasic / "no-such-dir"), MissingInput);
  try {
    parse_headers(kBasic, {"cuda.h", "absent.h"});
    FAIL() << "expected MissingInput";
  } catch (const MissingInput& e) {
    EXPECT_NE(std::string(e.what()).find("absent.h"), std::string::npos);
  }
}

TEST(Parse, MalformedHeaderGivesFileLineColumn) {
  const testing::ScratchDir dir;
  try {
    parse_headers(testing::malformed_toolkit(dir.path()));
    FAIL() << "expected ParseFailure";
  } catch (const ParseFailure& e) {
    EXPECT_NE(std::string(e.what()).find("cuda.h:9:"), std::string::npos) << e.what();
  }
}

// The libraries bound on request, from fixture headers in their shapes
// (tests/fixtures/extra_headers: written for these tests) beside the basic toolkit.
class ParseExtraHeaders : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_extra_header_dirs(
        {(std::filesystem::path(CUWRAP_FIXTURES_DIR) / "extra_headers").string()});
    plan_ = new Plan(make_plan(parse_headers(kBasic)));
    set_extra_header_dirs({});
  }
  static void TearDownTestSuite() {
    delete plan_;
    plan_ = nullptr;
  }
  static const FunctionPlan& planned(const std::string& name) {
    for (const auto& library : plan_->libraries) {
      for (const auto& f : library.functions) {
        if (f.function.name == name) {
          return f;
        }
      }
    }
    throw std::runtime_error("no function " + name);
  }
  static Plan* plan_;
};
Plan* ParseExtraHeaders::plan_ = nullptr;

TEST_F(ParseExtraHeaders, TwoCallBufferFunctionReturnsAVector) {
  const FunctionPlan& f = planned("nvmlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(f.shape, Shape::Void) << "the first form passes the count and array through";
  ASSERT_TRUE(f.second.has_value());
  EXPECT_EQ(f.second->sizing, Sizing::Capacity);
  EXPECT_EQ(f.second->shape, "vector");
  EXPECT_EQ(f.second->params[2].role, FormRole::Vector);
  EXPECT_EQ(f.second->params[2].element, "nvmlProcessInfo_t");
  EXPECT_EQ(f.sized_status, "NVML_ERROR_INSUFFICIENT_SIZE");
}

TEST_F(ParseExtraHeaders, CharBufferGetterReturnsAString) {
  EXPECT_EQ(planned("nvmlDeviceGetName").shape, Shape::String);
  EXPECT_EQ(planned("nvmlSystemGetNVMLVersion").shape, Shape::String);
  EXPECT_EQ(planned("nvmlDeviceGetCount").shape, Shape::Value);
}

TEST_F(ParseExtraHeaders, CountWrittenOnlyIsTheFirstFormsValue) {
  const FunctionPlan& f = planned("nvmlDeviceGetInstances");
  EXPECT_EQ(f.shape, Shape::Value);
  EXPECT_FALSE(f.second.has_value());
}

TEST(DocComment, BriefAndParams) {
  const DocComment d = parse_doc_comment(
      "/**\n * \\brief Returns the thing\n * Details start here without a blank line.\n *\n"
      " * \\param pctx - Returned context handle\n *   continued\n"
      " * \\param [in,out] n  Count\\n\n */");
  EXPECT_EQ(d.brief, "Returns the thing");
  ASSERT_EQ(d.params.size(), 2u);
  EXPECT_EQ(d.params[0].name, "pctx");
  EXPECT_EQ(d.params[0].text, "Returned context handle continued");
  EXPECT_EQ(d.params[1].direction, "in,out");
  EXPECT_EQ(d.params[1].text, "Count");
}

TEST(DocComment, ExplicitLinkMarkersAreDropped) {
  // nvvm.h writes "#nvvmResult"; Doxygen would fail on a link to an undocumented type.
  const DocComment d = parse_doc_comment(
      "/**\n * \\brief Get the message string for the given #nvvmResult code.\n"
      " * \\param [in] result see #nvvmResult; C# 5 and a # alone stay.\n */");
  EXPECT_EQ(d.brief, "Get the message string for the given nvvmResult code.");
  ASSERT_EQ(d.params.size(), 1u);
  EXPECT_EQ(d.params[0].text, "see nvvmResult; C# 5 and a # alone stay.");
}

TEST(DocComment, RefCommandsKeepOnlyTheName) {
  // nvml.h writes "\ref NVML_AFFINITY_SCOPE_NODE"; a link to a constant the API reference
  // does not hold fails Doxygen.
  const DocComment d = parse_doc_comment(
      "/**\n * \\brief Same as calling \\ref nvmlGetAffinity with @ref NVML_SCOPE_NODE.\n"
      " * \\param [in] set see \\ref nvmlEventSet_t\n */");
  EXPECT_EQ(d.brief, "Same as calling nvmlGetAffinity with NVML_SCOPE_NODE.");
  ASSERT_EQ(d.params.size(), 1u);
  EXPECT_EQ(d.params[0].text, "see nvmlEventSet_t");
}

TEST(DocComment, TrailingMemberComment) {
  EXPECT_EQ(parse_doc_comment("/**< Maximum number of threads per block */").brief,
            "Maximum number of threads per block");
}

TEST(DocComment, BriefEndsAtFirstSentence) {
  EXPECT_EQ(parse_doc_comment("/** \\brief Does a thing, e.g. this. Then more. */").brief,
            "Does a thing, e.g. this.");
}

// A CUDA 13.x-shaped cuda.h without cudaTypedefs.h (--abi-from-defines), whose trailing
// compatibility block #undefs the public names and re-declares the legacy prototypes
// (cuCtxCreate(CUcontext*, unsigned int, CUdevice) next to cuCtxCreate_v2/_v3): every
// function the header maps with a #define binds the prototype of the name it maps to.
const std::filesystem::path kCompatBlock =
    std::filesystem::path(CUWRAP_FIXTURES_DIR) / "compat_block";

class ParseCompatBlock : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    api_ = new Api(parse_headers(kCompatBlock, {"cuda.h"}, AbiSource::Defines));
  }
  static void TearDownTestSuite() {
    delete api_;
    api_ = nullptr;
  }
  static const Header& cuda() { return *api_->find("cuda.h"); }
  static Api* api_;
};
Api* ParseCompatBlock::api_ = nullptr;

// Each mapped name, the symbol its #define names, and that prototype's parameter types.
struct MappedPrototype {
  std::string name;
  std::string symbol;
  std::vector<std::string> types;
  int abi_version;
};

const std::vector<MappedPrototype> kMapped = {
    {"cuCtxCreate",
     "cuCtxCreate_v4",
     {"CUcontext*", "CUctxCreateParams*", "unsigned int", "CUdevice"},
     12050},
    {"cuMemAlloc", "cuMemAlloc_v2", {"CUdeviceptr*", "size_t"}, 3020},
    {"cuMemGetInfo", "cuMemGetInfo_v2", {"size_t*", "size_t*"}, 3020},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", {"CUdeviceptr", "const void*", "size_t"}, 3020},
    {"cuGraphInstantiate",
     "cuGraphInstantiateWithFlags",
     {"CUgraphExec*", "CUgraph", "unsigned long long"},
     11040},
    {"cuGetProcAddress",
     "cuGetProcAddress_v2",
     {"const char*", "void**", "int", "cuuint64_t", "CUdriverProcAddressQueryResult*"},
     12000},
};

std::vector<std::string> types_of(const Function& f) {
  std::vector<std::string> types;
  for (const auto& p : f.params) {
    types.push_back(p.type);
  }
  return types;
}

TEST_F(ParseCompatBlock, EveryMappedFunctionBindsThePrototypeItsDefineNames) {
  EXPECT_EQ(api_->abi_source, AbiSource::Defines);
  std::set<std::string> mapped;
  for (const auto& d : cuda().defines) {
    mapped.insert(d.name);
  }
  for (const auto& expected : kMapped) {
    SCOPED_TRACE(expected.name);
    EXPECT_EQ(mapped.count(expected.name), 1u) << "the #define is not read as a mapping";
    const Function& f = find(cuda(), expected.name);
    EXPECT_EQ(f.symbol, expected.symbol);
    EXPECT_EQ(types_of(f), expected.types) << "the legacy prototype of the compatibility block";
    EXPECT_EQ(f.abi_version, expected.abi_version);
    EXPECT_FALSE(f.abi_version_unknown);
    EXPECT_EQ(f.proc_name, unversioned(expected.symbol) == expected.name
                               ? std::string()
                               : unversioned(expected.symbol));
  }
  EXPECT_EQ(find(cuda(), "cuMemcpyHtoD").per_thread_symbol, "cuMemcpyHtoD_v2_ptds");
  // Every define of the header, not only those listed: the bound prototype is the target's.
  for (const auto& d : cuda().defines) {
    SCOPED_TRACE(d.name);
    EXPECT_EQ(find(cuda(), d.name).symbol, d.symbol);
  }
}

TEST_F(ParseCompatBlock, EachNameIsBoundOnceAndUnmappedFunctionsKeepTheirPrototype) {
  for (const char* name : {"cuCtxCreate", "cuMemAlloc", "cuGetProcAddress"}) {
    EXPECT_EQ(std::count_if(cuda().functions.begin(), cuda().functions.end(),
                            [&](const Function& f) { return f.name == name; }),
              1)
        << name;
  }
  const Function& name = find(cuda(), "cuDeviceGetName");
  EXPECT_EQ(name.symbol, "cuDeviceGetName");
  EXPECT_EQ(types_of(name), (std::vector<std::string>{"char*", "int", "CUdevice"}));
}

// The JSON report of a plan's function `name` in `file`.
nlohmann::json function_report(const Api& api, const std::string& file, const std::string& name) {
  const nlohmann::json report = report_json(make_plan(api));
  for (const auto& h : report["headers"]) {
    if (h["header"] != file) {
      continue;
    }
    for (const auto& f : h["functions"]) {
      if (f["name"] == name) {
        return f;
      }
    }
  }
  throw std::runtime_error("no function " + name + " in the report of " + file);
}

TEST_F(ParseCompatBlock, ReportNamesTheDefineEachMappedFunctionsAbiComesFrom) {
  EXPECT_EQ(report_json(make_plan(*api_))["abi_versions_from"], "versioned names");
  for (const auto& expected : kMapped) {
    const nlohmann::json f = function_report(*api_, "cuda.h", expected.name);
    EXPECT_EQ(f.value("abi_source", std::string()),
              "define " + expected.name + " -> " + expected.symbol);
    EXPECT_EQ(f["abi_version"], expected.abi_version) << expected.name;
  }
  EXPECT_EQ(function_report(*api_, "cuda.h", "cuDeviceGetName").value("abi_source", std::string()),
            "symbol cuDeviceGetName");
}

TEST_F(ParseBasic, ReportNamesTheTypedefEachDriverFunctionsAbiComesFrom) {
  EXPECT_EQ(function_report(*api_, "cuda.h", "cuMemAlloc").value("abi_source", std::string()),
            "cudaTypedefs.h PFN_cuMemAlloc_v3020")
      << "mapped by #define cuMemAlloc cuMemAlloc_v2";
  EXPECT_EQ(function_report(*api_, "cuda.h", "cuDeviceGetName").value("abi_source", std::string()),
            "cudaTypedefs.h PFN_cuDeviceGetName_v2000");
  EXPECT_FALSE(function_report(*api_, "nvrtc.h", "nvrtcVersion").contains("abi_source"))
      << "only the driver's entry points have ABI versions";
}

}  // namespace
}  // namespace cuwrap::gen
