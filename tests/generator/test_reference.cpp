// Every cuda.h and nvrtc.h function is at least as typed as NVIDIA's cuda.bindings 13.3:
// each output cuda.bindings returns is returned by one of our typed forms, never left
// as an out-pointer parameter. The reference (reference/cuda_bindings_13.3.json) was
// dumped on the GPU machine by scripts/dump_cuda_bindings.py: per function its Python
// inputs ("params") and its numpydoc "Returns" lines (the first two are the CUresult
// and its status list; then `name : type` lines, each followed by a description).
// cuda.bindings names nvJitLink's functions in snake_case, so nvJitLink.h is checked by
// the coverage tests alone.
#include "support.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <regex>
#include <set>

namespace cuwrap::gen {
namespace {

namespace fs = std::filesystem;
using testing::quoted;
using testing::run_command;
using testing::ScratchDir;

// Where cuda.bindings' docstring names an output after another parameter.
const std::map<std::string, std::string> kReferenceErrata = {
    // "hTexRef : float": the returned border colour (pBorderColor in C).
    {"cuTexRefGetBorderColor", "hTexRef"},
};

nlohmann::json reference() {
  return nlohmann::json::parse(
      testing::read_file(fs::path(CUWRAP_TEST_SOURCE_DIR) / "reference" / "cuda_bindings_13.3.json"));
}

nlohmann::json report_for(const fs::path& include, const ScratchDir& dir) {
  const fs::path report = dir.path() / "report.json";
  const auto r = run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " + quoted(include.string()) +
                             " --output " + quoted((dir.path() / "out").string()) + " --report " +
                             quoted(report.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? nlohmann::json::parse(testing::read_file(report)) : nlohmann::json();
}

// The outputs cuda.bindings returns for one function (the `name : type` lines).
std::vector<std::string> reference_outputs(const nlohmann::json& entry) {
  static const std::regex kOutput(R"(^(\w+) : )");
  std::vector<std::string> out;
  const auto& lines = entry["returns"];
  for (std::size_t i = 2; i < lines.size(); ++i) {
    std::smatch m;
    const std::string line = lines[i].get<std::string>();
    if (std::regex_search(line, m, kOutput)) {
      out.push_back(m[1]);
    }
  }
  return out;
}

// What our typed forms give back (or supply themselves), by C parameter name.
std::set<std::string> our_outputs(const nlohmann::json& f) {
  std::set<std::string> out;
  for (const auto& o : f["outputs"]) {
    out.insert(o["name"].get<std::string>());
  }
  if (f.contains("second_form")) {
    for (const auto& o : f["second_form"]["outputs"]) {
      out.insert(o["name"].get<std::string>());
    }
  }
  return out;
}

std::set<std::string> our_parameters(const nlohmann::json& f) {
  std::set<std::string> names;
  for (const char* key : {"inputs", "outputs"}) {
    for (const auto& p : f[key]) {
      names.insert(p["name"].get<std::string>());
    }
  }
  return names;
}

struct Tally {
  int checked = 0;
  int at_least_as_typed = 0;
  std::map<std::string, int> shapes;
};

// Check every function of `header` in the report against library `lib` of the reference.
// `by_count`: also require outputs that cuda.bindings names differently from the C
// parameter (cuDeviceTotalMem's `numbytes` is C's `bytes`). Only for the toolkit
// generation the reference describes (13.x): in 12.x some signatures are older (edge
// data came to cuGraphGetEdges as cuGraphGetEdges_v2), and cuda.bindings 13.3 returns
// outputs that the older C function does not have.
Tally check_header(const nlohmann::json& report, const nlohmann::json& ref, const std::string& header,
                   const std::string& lib, bool by_count = true) {
  Tally t;
  for (const auto& h : report["headers"]) {
    if (h["header"] != header) {
      continue;
    }
    for (const auto& f : h["functions"]) {
      const std::string name = f["name"];
      t.shapes[f["shape"].get<std::string>()] += 1;
      if (!ref[lib].contains(name)) {
        continue;  // not in cuda.bindings 13.3 (internal or removed): nothing to compare
      }
      ++t.checked;
      const auto given = our_outputs(f);
      const auto params = our_parameters(f);
      std::size_t renamed = 0;  // cuda.bindings' name differs from the C parameter's
      std::size_t matched = 0;
      bool ok = true;
      for (const auto& want : reference_outputs(ref[lib][name])) {
        if (given.count(want) != 0) {
          ++matched;
        } else if (params.count(want) != 0) {
          const auto erratum = kReferenceErrata.find(name);
          if (erratum != kReferenceErrata.end() && erratum->second == want) {
            ++renamed;
            continue;
          }
          ok = false;
          ADD_FAILURE() << name << ": cuda.bindings returns '" << want
                        << "', our typed forms take it as a parameter";
        } else {
          ++renamed;
        }
      }
      if (by_count && renamed > given.size() - matched) {
        ok = false;
        ADD_FAILURE() << name << ": cuda.bindings returns " << renamed
                      << " outputs under other names; our typed forms return only "
                      << given.size() - matched << " more";
      }
      t.at_least_as_typed += ok ? 1 : 0;
    }
  }
  return t;
}

void expect_at_least_as_typed(const fs::path& include, int expected_driver_functions) {
  if (include.empty() || !fs::is_regular_file(include / "cuda.h")) {
    GTEST_SKIP() << "headers not found: " << include;
  }
  ScratchDir dir;
  const auto report = report_for(include, dir);
  const auto ref = reference();
  for (const auto& [header, lib] : {std::pair<std::string, std::string>{"cuda.h", "driver"},
                                    {"nvrtc.h", "nvrtc"}}) {
    const bool same_generation = report["cuda_version"].get<int>() / 1000 == 13;
    const Tally t = check_header(report, ref, header, lib, same_generation);
    EXPECT_GT(t.checked, 0) << header;
    EXPECT_EQ(t.at_least_as_typed, t.checked) << header;
    std::cout << "CUDA " << report["cuda_version"] << " " << header << ": " << t.at_least_as_typed
              << "/" << t.checked << " functions of cuda.bindings 13.3 at least as typed; shapes:";
    for (const auto& [shape, n] : t.shapes) {
      std::cout << " " << shape << " " << n;
    }
    std::cout << '\n';
    if (header == "cuda.h" && expected_driver_functions != 0) {
      int declared = 0;
      for (const auto& [shape, n] : t.shapes) {
        declared += n;
      }
      EXPECT_EQ(declared, expected_driver_functions);
    }
  }
}

TEST(Reference, ConfiguredToolkitIsAtLeastAsTypedAsCudaBindings) {
  const fs::path include = CUWRAP_CUDA_INCLUDE_DIR;
  const bool is13 = testing::read_file(include / "cuda.h").find("#define CUDA_VERSION 13000") !=
                    std::string::npos;
  expect_at_least_as_typed(include, is13 ? 449 : 0);
}

TEST(Reference, Cuda126IsAtLeastAsTypedAsCudaBindings) {
  expect_at_least_as_typed(CUWRAP_CUDA_12_6_INCLUDE, 0);
}

TEST(Reference, Cuda124IsAtLeastAsTypedAsCudaBindings) {
  expect_at_least_as_typed(CUWRAP_CUDA_12_4_INCLUDE, 0);
}

// The check itself: a function whose output stays a parameter fails it.
TEST(Reference, AnOutPointerLeftAsParameterFails) {
  const nlohmann::json ref = {
      {"driver",
       {{"cuThing", {{"params", {"dev"}}, {"returns", {"CUresult", "...", "value : int", "x"}}}}}}};
  const nlohmann::json typed = {
      {"headers",
       {{{"header", "cuda.h"},
         {"functions",
          {{{"name", "cuThing"},
            {"shape", "value"},
            {"inputs", {{{"name", "dev"}}}},
            {"outputs", {{{"name", "value"}}}}}}}}}}};
  nlohmann::json untyped = typed;
  untyped["headers"][0]["functions"][0]["inputs"].push_back({{"name", "value"}});
  untyped["headers"][0]["functions"][0]["outputs"] = nlohmann::json::array();
  EXPECT_EQ(check_header(typed, ref, "cuda.h", "driver").at_least_as_typed, 1);
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    EXPECT_EQ(check_header(untyped, ref, "cuda.h", "driver").at_least_as_typed, 0);
  }
  EXPECT_EQ(failures.size(), 1);
}

}  // namespace
}  // namespace cuwrap::gen
