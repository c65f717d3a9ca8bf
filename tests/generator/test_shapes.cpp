// shapes.cpp on hand-built models: enumerations, span pairing, typed attributes.
#include "model_builders.hpp"
#include "rules.hpp"
#include "shapes.hpp"

#include <gtest/gtest.h>

namespace cuwrap::gen {
namespace {

using testing::function;
using testing::pointer;
using testing::value;

// Plan `functions` as cuda.h, with `enums`, and return the plans.
std::vector<FunctionPlan> planned(std::vector<Function> functions, std::vector<Enum> enums = {}) {
  Api api;
  api.cuda_version = 12030;
  Header h;
  h.file = "cuda.h";
  h.functions = std::move(functions);
  h.enums = std::move(enums);
  api.headers.push_back(h);
  return make_plan(api).libraries.front().functions;
}

std::vector<FormRole> roles(const FunctionPlan& p) {
  std::vector<FormRole> out;
  for (const auto& fp : p.second->params) {
    out.push_back(fp.role);
  }
  return out;
}

TEST(Shapes, InOutCountMakesAnEnumeration) {
  const auto plans = planned(
      {function("cuGraphGetNodes", {value("CUgraph", "hGraph", "Graph to query"),
                                    pointer("CUgraphNode", "nodes", "Pointer to return the nodes"),
                                    pointer("size_t", "numNodes", "See description")})});
  ASSERT_TRUE(plans[0].second.has_value());
  EXPECT_EQ(plans[0].second->sizing, Sizing::Enumerate);
  EXPECT_EQ(roles(plans[0]),
            (std::vector<FormRole>{FormRole::Input, FormRole::Vector, FormRole::VectorCount}));
  EXPECT_EQ(plans[0].second->shape, "vector");
}

// Plan `functions` as nvml.h (the library of the two-call buffer protocol).
std::vector<FunctionPlan> planned_nvml(std::vector<Function> functions) {
  Api api;
  api.cuda_version = 13000;
  Header cuda;
  cuda.file = "cuda.h";
  api.headers.push_back(cuda);
  Header h;
  h.file = "nvml.h";
  h.functions = std::move(functions);
  api.headers.push_back(h);
  for (const auto& library : make_plan(api).libraries) {
    if (library.config.header == "nvml.h") {
      return library.functions;
    }
  }
  return {};
}

TEST(Shapes, TwoCallBufferProtocolMakesVectorsSizedByAskingAgain) {
  const auto plans = planned_nvml({function(
      "fixDeviceGetRetired",
      {value("fixDevice_t", "device", "The device"),
       pointer("fixValueType_t", "valueType", "Returns the type of the values"),
       pointer("unsigned int", "pageCount",
               "Reference in which to provide the addresses buffer size, and to return the "
               "number of pages"),
       pointer("unsigned long long", "addresses", "Buffer to write the page addresses into"),
       pointer("unsigned long long", "timestamps", "Buffer to write the timestamps into")},
      "nvmlReturn_t", "nvml.h")});
  ASSERT_EQ(plans.size(), 1u);
  ASSERT_TRUE(plans[0].second.has_value());
  EXPECT_EQ(plans[0].second->sizing, Sizing::Capacity);
  EXPECT_EQ(roles(plans[0]),
            (std::vector<FormRole>{FormRole::Input, FormRole::Output, FormRole::VectorCount,
                                   FormRole::Vector, FormRole::Vector}));
  EXPECT_EQ(plans[0].second->shape, "aggregate");  // the value type beside two vectors
  EXPECT_NE(plans[0].second->why.find("pageCount sizes addresses, timestamps"), std::string::npos)
      << plans[0].second->why;
}

TEST(Shapes, TwoCallBufferProtocolInBytesHasNoVectorForm) {
  const auto plans = planned_nvml(
      {function("fixInstanceGetMetadata",
                {value("fixInstance_t", "instance", "The instance"),
                 pointer("fixMetadata_t", "metadata", "Metadata buffer"),
                 pointer("unsigned int", "bufferSize", "Size of the metadata buffer in bytes")},
                "nvmlReturn_t", "nvml.h")});
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].shape, Shape::Void);
  EXPECT_FALSE(plans[0].second.has_value()) << "no vector of structs is sized in bytes";
}

TEST(Shapes, CountPairsWithItsArraysByNameOrDocumentation) {
  const auto plans =
      planned({function("cuGraphAddEmptyNode",
                        {pointer("CUgraphNode", "phGraphNode", "Returns newly created node"),
                         value("CUgraph", "hGraph", "Graph to which to add the node"),
                         pointer("CUgraphNode", "dependencies", "Dependencies of the node", true),
                         value("size_t", "numDependencies", "Number of dependencies")})});
  ASSERT_TRUE(plans[0].second.has_value());
  EXPECT_EQ(roles(plans[0]), (std::vector<FormRole>{FormRole::Output, FormRole::Input,
                                                    FormRole::Span, FormRole::SpanCount}));
  EXPECT_EQ(plans[0].second->params[2].element, "CUgraphNode const");
  EXPECT_EQ(plans[0].second->shape, "value");
}

// One count counts every input array beside the one it is named after: the arrays
// documented as arrays, or naming the counted one, are spans of the same count; the
// ones documented "Optional" may be empty.
TEST(Shapes, ArraysBesideTheCountedOneAreSpansOfTheSameCount) {
  const auto plans = planned(
      {function(
           "cuGraphAddDependencies",
           {value("CUgraph", "hGraph", "Graph to which dependencies are added"),
            pointer("CUgraphNode", "from", "Array of nodes that provide the dependencies", true),
            pointer("CUgraphNode", "to", "Array of dependent nodes", true),
            pointer("CUgraphEdgeData", "edgeData", "Optional array of edge data.", true),
            value("size_t", "numDependencies", "Number of dependencies to be added")}),
       function("cuGraphAddNode",
                {pointer("CUgraphNode", "phGraphNode", "Returns newly created node"),
                 value("CUgraph", "hGraph", "Graph to which to add the node"),
                 pointer("CUgraphNode", "dependencies", "Dependencies of the node", true),
                 pointer("CUgraphEdgeData", "dependencyData",
                         "Optional edge data for the dependencies. If NULL, the data is", true),
                 value("size_t", "numDependencies", "Number of dependencies"),
                 pointer("CUgraphNodeParams", "nodeParams", "Specification of the node")})});
  ASSERT_TRUE(plans[0].second.has_value());
  EXPECT_EQ(roles(plans[0]), (std::vector<FormRole>{FormRole::Input, FormRole::Span, FormRole::Span,
                                                    FormRole::Span, FormRole::SpanCount}));
  for (std::size_t i : {1u, 2u, 3u}) {
    EXPECT_EQ(plans[0].second->params[i].count, 4u) << i;
  }
  EXPECT_FALSE(plans[0].second->params[1].optional);
  EXPECT_FALSE(plans[0].second->params[2].optional);
  EXPECT_TRUE(plans[0].second->params[3].optional);
  ASSERT_TRUE(plans[1].second.has_value());
  EXPECT_EQ(roles(plans[1]),
            (std::vector<FormRole>{FormRole::Output, FormRole::Input, FormRole::Span,
                                   FormRole::Span, FormRole::SpanCount, FormRole::Input}));
  EXPECT_TRUE(plans[1].second->params[3].optional);
}

// `optionValues` extends `options`: counted by numOptions even with other counts around;
// an "Array of" input beside two counts is not guessed at.
TEST(Shapes, ArraysNamedAfterTheCountedOneShareItsCount) {
  const auto plans = planned(
      {function("cuLibraryLoadData",
                {pointer("CUlibrary", "library", "Returned library"),
                 pointer("void", "code", "Code to load", true),
                 pointer("CUjit_option", "jitOptions", "Options for JIT"),
                 pointer("void*", "jitOptionsValues", "Option values for JIT"),
                 value("unsigned int", "numJitOptions", "Number of options"),
                 pointer("CUlibraryOption", "libraryOptions", "Options for loading"),
                 pointer("void*", "libraryOptionValues", "Option values for loading"),
                 value("unsigned int", "numLibraryOptions", "Number of options for loading"),
                 pointer("int", "extras", "Array of extra things", true)})});
  ASSERT_TRUE(plans[0].second.has_value());
  EXPECT_EQ(roles(plans[0]),
            (std::vector<FormRole>{FormRole::Output, FormRole::Input, FormRole::Span,
                                   FormRole::Span, FormRole::SpanCount, FormRole::Span,
                                   FormRole::Span, FormRole::SpanCount, FormRole::Input}));
  EXPECT_EQ(plans[0].second->params[3].count, 4u);
  EXPECT_EQ(plans[0].second->params[6].count, 7u);
}

TEST(Shapes, TiedPairingsPairNothing) {
  // Both counts' documentation names the array: no way to tell which counts it.
  const auto plans = planned({function(
      "cuThing", {pointer("int", "items", "Items", true), value("size_t", "numA", "Size of items"),
                  value("size_t", "numB", "Also the size of items")})});
  EXPECT_FALSE(plans[0].second.has_value());
}

TEST(Shapes, AttributeValueTypedFromTheEnumDocumentation) {
  Enum e;
  e.name = "CUmemPool_attribute";
  e.enumerators = {
      {"CU_MEMPOOL_ATTR_RELEASE_THRESHOLD", 4, "Bytes to keep (value type = cuuint64_t)", false},
      {"CU_MEMPOOL_ATTR_UNDOCUMENTED", 5, "No type named", false}};
  auto get =
      function("cuMemPoolGetAttribute", {value("CUmemoryPool", "pool", "The pool"),
                                         value("CUmemPool_attribute", "attr", "The attribute"),
                                         pointer("void", "value", "Retrieved value")});
  const auto plans = planned({get}, {e});
  ASSERT_TRUE(plans[0].second.has_value());
  const SecondForm& form = *plans[0].second;
  EXPECT_EQ(form.shape, "typed attribute");
  EXPECT_FALSE(form.setter);
  ASSERT_TRUE(form.key.has_value());
  // Only the documented enumerator gets a type: the other one does not compile typed.
  EXPECT_EQ(form.key->types, (std::vector<std::pair<std::string, std::string>>{
                                 {"CU_MEMPOOL_ATTR_RELEASE_THRESHOLD", "cuuint64_t"}}));
}

TEST(Shapes, FirstFormIsKept) {
  const auto plans = planned(
      {function("cuGraphGetNodes", {value("CUgraph", "hGraph", "Graph to query"),
                                    pointer("CUgraphNode", "nodes", "Pointer to return the nodes"),
                                    pointer("size_t", "numNodes", "See description")})});
  EXPECT_EQ(plans[0].shape, Shape::Void);  // the pointer + count form stays
}

}  // namespace
}  // namespace cuwrap::gen
