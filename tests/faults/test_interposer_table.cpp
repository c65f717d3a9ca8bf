// The generator's half of the interposer (generator/src/interposer.cpp): which functions
// get a wrapper, the handle rules and the rendered table, on hand-built models; then the
// real table the interposer is built from, against cuda.h of the configured toolkit.
#include "interposer.hpp"
#include "model_builders.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

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
  Function f = function(
      "cuMemAlloc", {marked(pointer("CUdeviceptr", "dptr"), "out"), value("size_t", "bytesize")});
  f.symbol = "cuMemAlloc_v2";
  f.abi_version = 3020;
  return f;
}

TEST(InterposerTable, WrapsStatusReturningDriverFunctionsOnly) {
  EXPECT_TRUE(interposer_wraps(mem_alloc()));
  EXPECT_FALSE(interposer_wraps(function("cuGetProcAddress", {})))
      << "implemented by the interposer";
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
  EXPECT_FALSE(handle_effect("cuStreamSynchronize").has_value());
}

TEST(InterposerTable, RendersOneEntryPerVariantWithItsAbiVersion) {
  Function copy = function("cuMemcpyHtoD",
                           {value("CUdeviceptr", "dstDevice"), pointer("void", "srcHost", "", true),
                            value("size_t", "ByteCount")});
  copy.symbol = "cuMemcpyHtoD_v2";
  copy.per_thread_symbol = "cuMemcpyHtoD_v2_ptds";
  copy.abi_version = 3020;
  copy.per_thread_abi_version = 7000;
  const auto file = render_interposer(driver_plan({mem_alloc(), copy}), CUWRAP_GEN_TEMPLATE_DIR);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->path, "interposer/interposer.cpp");
  const std::string& text = file->text;
  EXPECT_TRUE(has(text, "{\"cuMemAlloc\", \"cuMemAlloc\", \"cuMemAlloc_v2\", 3020, false,"))
      << text;
  EXPECT_TRUE(has(text, "\"dptr,bytesize\", 1u, 0u, Effect::Create, \"memory\", 0}")) << text;
  EXPECT_TRUE(has(text, "\"cuMemcpyHtoD_v2\", 3020, false,")) << text;
  EXPECT_TRUE(has(text, "\"cuMemcpyHtoD_v2_ptds\", 7000, true,"))
      << "the per-thread variant: " << text;
  EXPECT_TRUE(has(text, "\"dstDevice,srcHost,ByteCount\", 0u, 1u, Effect::None"))
      << "device address in hex";
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

// ---- The real table against cuda.h ------------------------------------------------
//
// The interposer is built from the table file of the configured bindings
// (CUWRAP_INTERPOSER_TABLE); cuda.h of the configured toolkit is the independent
// source it must agree with: one row per status-returning driver function, each row's
// parameters as cuda.h names them, and every handle kind both created and destroyed.

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The parameter names of a C parameter list ("CUdeviceptr *dptr, size_t bytesize"), and
// for each whether it is declared as a pointer.
struct DeclaredParams {
  std::vector<std::string> names;
  std::vector<bool> is_pointer;
};

DeclaredParams parse_params(const std::string& list) {
  DeclaredParams params;
  std::stringstream in(list);
  std::string one;
  while (std::getline(in, one, ',')) {
    const auto end = one.find_last_not_of(" \t\r\n[]0123456789");  // drop array extents
    if (end == std::string::npos) {
      continue;
    }
    auto begin = end;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(one[begin - 1])) != 0 ||
                         one[begin - 1] == '_')) {
      --begin;
    }
    const std::string name = one.substr(begin, end + 1 - begin);
    if (name == "void" && params.names.empty()) {
      continue;  // f(void)
    }
    params.names.push_back(name);
    params.is_pointer.push_back(one.find('*') != std::string::npos ||
                                one.find('[') != std::string::npos);
  }
  return params;
}

// The status-returning functions cuda.h declares at file scope: lines that start with
// "CUresult CUDAAPI" (or its deprecated form), the name and parameters possibly on the
// next line. The first declaration of each counts: the legacy ones cuda.h re-declares
// for its own build come later, indented.
std::map<std::string, DeclaredParams> cuda_h_functions(const std::string& header) {
  std::map<std::string, DeclaredParams> functions;
  std::size_t line = 0;
  while (line < header.size()) {
    const std::size_t next = std::min(header.find('\n', line), header.size());
    for (const std::string_view prefix :
         {"CUresult CUDAAPI", "__CUDA_DEPRECATED CUresult CUDAAPI"}) {
      if (header.compare(line, prefix.size(), prefix) != 0) {
        continue;
      }
      const std::size_t open = header.find('(', line);
      const std::size_t close = header.find(')', open);
      std::size_t name_begin = line + prefix.size();
      while (std::isspace(static_cast<unsigned char>(header[name_begin])) != 0) {
        ++name_begin;
      }
      std::string name = header.substr(name_begin, open - name_begin);
      name.erase(name.find_last_not_of(" \t") + 1);
      functions.try_emplace(name, parse_params(header.substr(open + 1, close - open - 1)));
    }
    line = next + 1;
  }
  return functions;
}

// One row of the table, as the interposer is compiled from it.
struct TableRow {
  std::string function;
  std::string symbol;
  bool per_thread = false;
  std::vector<std::string> params;
  std::string effect;  // None, Create, CreateByValue, Destroy
  std::string kind;
  int handle_param = -1;
};

struct Table {
  std::vector<TableRow> rows;
  std::vector<std::string> malformed;  // rows not in the expected form
};

Table read_table(const std::string& table) {
  // Two lines a row:
  //   {"NAME", "FUNCTION", "SYMBOL", VERSION, PER_THREAD, reinterpret_cast<void*>(&wN),
  //    "PARAMS", OUT_MASK, HEX_MASK, Effect::EFFECT, "KIND", HANDLE_PARAM},
  static const std::regex row(
      R"re(\s*\{"\w+", "(\w+)", "(\w+)", \d+, (true|false), reinterpret_cast<void\*>\(&w\d+\),\s+"([\w,]*)", \d+u, \d+u, Effect::(\w+), "([\w ]*)", (-?\d+)\},\s*)re");
  Table result;
  std::stringstream in(table);
  std::string first;
  std::string second;
  while (std::getline(in, first)) {
    if (first.find("reinterpret_cast<void*>(&w") == std::string::npos ||
        !std::getline(in, second)) {
      continue;
    }
    const std::string text = first + "\n" + second;
    std::smatch m;
    if (!std::regex_match(text, m, row)) {
      result.malformed.push_back(text);
      continue;
    }
    TableRow r;
    r.function = m[1].str();
    r.symbol = m[2].str();
    r.per_thread = m[3].str() == "true";
    r.params = parse_params(m[4].str()).names;
    r.effect = m[5].str();
    r.kind = m[6].str();
    r.handle_param = std::stoi(m[7].str());
    result.rows.push_back(std::move(r));
  }
  return result;
}

class RealTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    header_ = new std::map<std::string, DeclaredParams>(
        cuda_h_functions(read_text(std::filesystem::path(CUWRAP_CUDA_INCLUDE_DIR) / "cuda.h")));
    table_ = new Table(read_table(read_text(CUWRAP_INTERPOSER_TABLE)));
  }
  static void TearDownTestSuite() {
    delete header_;
    delete table_;
  }
  static const std::map<std::string, DeclaredParams>& header() { return *header_; }
  static const std::vector<TableRow>& rows() { return table_->rows; }
  static const std::vector<std::string>& malformed() { return table_->malformed; }

 private:
  static inline std::map<std::string, DeclaredParams>* header_ = nullptr;
  static inline Table* table_ = nullptr;
};

TEST_F(RealTable, WrapsEveryStatusReturningFunctionOfCudaH) {
  ASSERT_GT(header().size(), 300u)
      << "cuda.h in " << CUWRAP_CUDA_INCLUDE_DIR << " was not read as expected";
  std::set<std::string> expected;
  for (const auto& [name, params] : header()) {
    if (interposer_wraps(function(name, {}))) {
      expected.insert(name);
    }
  }
  EXPECT_FALSE(expected.count("cuGetProcAddress")) << "the interposer implements it itself";
  std::set<std::string> wrapped;
  for (const TableRow& r : rows()) {
    wrapped.insert(r.function);
  }
  std::vector<std::string> missing;
  std::set_difference(expected.begin(), expected.end(), wrapped.begin(), wrapped.end(),
                      std::back_inserter(missing));
  std::vector<std::string> unknown;
  std::set_difference(wrapped.begin(), wrapped.end(), expected.begin(), expected.end(),
                      std::back_inserter(unknown));
  EXPECT_TRUE(missing.empty()) << "in cuda.h, not in " << CUWRAP_INTERPOSER_TABLE << ": "
                               << ::testing::PrintToString(missing);
  EXPECT_TRUE(unknown.empty()) << "in " << CUWRAP_INTERPOSER_TABLE
                               << ", not declared in cuda.h: " << ::testing::PrintToString(unknown);
}

TEST_F(RealTable, RowsHaveTheParametersCudaHDeclares) {
  ASSERT_FALSE(rows().empty()) << "no rows read from " << CUWRAP_INTERPOSER_TABLE;
  EXPECT_TRUE(malformed().empty())
      << "rows not in the form this test reads: " << ::testing::PrintToString(malformed());
  for (const TableRow& r : rows()) {
    const auto declared = header().find(r.function);
    if (declared == header().end()) {
      continue;  // reported by WrapsEveryStatusReturningFunctionOfCudaH
    }
    EXPECT_EQ(r.params, declared->second.names) << r.function;
    if (r.per_thread) {
      EXPECT_TRUE(r.symbol.ends_with("_ptds") || r.symbol.ends_with("_ptsz")) << r.symbol;
    }
  }
}

TEST_F(RealTable, HandleRulesNameRealParametersAndComeInPairs) {
  std::map<std::string, std::set<std::string>> effects_by_kind;
  for (const TableRow& r : rows()) {
    const auto rule = handle_effect(r.function);
    EXPECT_EQ(r.effect != "None", rule.has_value())
        << r.function << ": the table and the rules differ";
    if (r.effect == "None") {
      continue;
    }
    effects_by_kind[r.kind].insert(r.effect == "Destroy" ? "Destroy" : "Create");
    const auto declared = header().find(r.function);
    ASSERT_NE(declared, header().end()) << r.function;
    ASSERT_GE(r.handle_param, 0) << r.function;
    ASSERT_LT(static_cast<std::size_t>(r.handle_param), declared->second.names.size())
        << r.function;
    EXPECT_EQ(declared->second.names[static_cast<std::size_t>(r.handle_param)], rule->param)
        << r.function;
    if (r.effect == "Create") {
      // The handle comes back through an output pointer.
      EXPECT_TRUE(declared->second.is_pointer[static_cast<std::size_t>(r.handle_param)])
          << r.function << "(" << rule->param << ")";
    }
  }
  EXPECT_GE(effects_by_kind.size(), 10u) << "too few handle kinds counted";
  for (const auto& [kind, effects] : effects_by_kind) {
    EXPECT_EQ(effects.size(), 2u) << "handles of kind '" << kind << "' have no "
                                  << (effects.count("Create") != 0 ? "destroying" : "creating")
                                  << " function in the table";
  }
}

}  // namespace
