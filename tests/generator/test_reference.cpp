// Every cuda.h and nvrtc.h function is at least as typed as NVIDIA's cuda.bindings 13.3:
// each output cuda.bindings returns is returned by one of our typed forms, never left
// as an out-pointer parameter. For 13.x headers the classification is compared both
// ways: our most typed form takes what cuda.bindings takes (less the sizes it derives)
// and returns what it returns, and nothing else. The reference (reference/cuda_bindings_13.3.json)
// was dumped on the GPU machine by scripts/dump_cuda_bindings.py: per function its Python inputs
// ("params") and its numpydoc "Returns" lines (the first two are the CUresult and its status list;
// then `name : type` lines, each followed by a description). cuda.bindings names nvJitLink's
// functions in snake_case, so nvJitLink.h is checked by the coverage tests alone.
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

// cuda.bindings renames parameters that are Python keywords or builtins: its name → C's.
const std::map<std::string, std::string> kPythonNames = {
    {"typename", "type"},  {"from_", "from"},     {"input_", "input"},
    {"numbytes", "bytes"}, {"pformat", "format"},
};

// Parameters cuda.bindings names otherwise in one function: (function, its name) → C's.
const std::map<std::pair<std::string, std::string>, std::string> kRenamed = {
    {{"cuDeviceGetName", "length"}, "len"},
    {{"cuDeviceGetPCIBusId", "length"}, "len"},
    {{"cuDevSmResourceSplitByCount", "flags"}, "useFlags"},
    {{"cuDevSmResourceSplitByCount", "remainder"}, "remaining"},
};

// Where cuda.bindings' docstring names an output after another parameter: (function,
// the name in its "Returns") → the C parameter returned.
const std::map<std::pair<std::string, std::string>, std::string> kOutputErrata = {
    // "hTexRef : float": the returned border colour (pBorderColor in C).
    {{"cuTexRefGetBorderColor", "hTexRef"}, "pBorderColor"},
};

// Where our typed form returns more than cuda.bindings does, and why that is right.
const std::map<std::pair<std::string, std::string>, std::string> kReturnsMore = {
    // "Optional auto-advancing iterator": the call advances it; cuda.bindings takes it
    // by value and drops the advanced value, ours returns it for the next call.
    {{"cuLogsDumpToMemory", "iterator"}, "the advanced iterator"},
};

nlohmann::json reference() {
  return nlohmann::json::parse(testing::read_file(fs::path(CUWRAP_TEST_SOURCE_DIR) / "reference" /
                                                  "cuda_bindings_13.3.json"));
}

nlohmann::json report_for(const fs::path& include, const ScratchDir& dir) {
  const fs::path report = dir.path() / "report.json";
  const auto r = run_command(
      quoted(CUWRAP_GEN_EXE) + " --cuda-include " + quoted(include.string()) + " --output " +
      quoted((dir.path() / "out").string()) + " --report " + quoted(report.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? nlohmann::json::parse(testing::read_file(report)) : nlohmann::json();
}

// The C name of parameter `name` of `function` as cuda.bindings spells it.
std::string c_name(const std::string& function, const std::string& name,
                   const std::set<std::string>& c_params) {
  if (const auto it = kRenamed.find({function, name}); it != kRenamed.end()) {
    return it->second;
  }
  if (const auto it = kPythonNames.find(name);
      it != kPythonNames.end() && c_params.count(name) == 0) {
    return it->second;
  }
  return name;
}

// What cuda.bindings returns for one function: the outputs its docstring names (`name :
// type` lines after the status), and how many it returns without a name ("None" lines,
// or a description alone).
struct ReferenceOutputs {
  std::vector<std::string> named;
  std::size_t unnamed = 0;
};
ReferenceOutputs reference_outputs(const nlohmann::json& entry, const std::string& function,
                                   const std::set<std::string>& c_params) {
  static const std::regex kOutput(R"(^\*?(\w+) : )");
  ReferenceOutputs out;
  const auto& lines = entry["returns"];
  bool described = false;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    std::smatch m;
    const std::string line = lines[i].get<std::string>();
    if (std::regex_search(line, m, kOutput)) {
      const auto erratum = kOutputErrata.find({function, m[1]});
      out.named.push_back(erratum != kOutputErrata.end() ? erratum->second
                                                         : c_name(function, m[1], c_params));
    } else if (line == "None") {
      ++out.unnamed;
    } else if (line.rfind("- ", 0) != 0 && line.find("ERROR") == std::string::npos) {
      described = true;
    }
  }
  if (out.named.empty() && out.unnamed == 0 && described) {
    out.unnamed = 1;  // "the accessibility of the pool from the specified location"
  }
  return out;
}

// Our most typed form of one report entry: what it takes, what it returns, and the C
// parameters it supplies itself (span and vector sizes, sizeof values, string lengths).
struct OurForm {
  std::set<std::string> taken;
  std::set<std::string> returned;
  std::set<std::string> supplied;
  std::set<std::string> returned_by_any;  // by the first or the second form
  std::set<std::string> c_params;
};
OurForm our_form(const nlohmann::json& f) {
  OurForm form;
  const auto& most = f.contains("second_form") ? f["second_form"] : f;
  for (const auto& p : most["inputs"]) {
    form.taken.insert(p["name"].get<std::string>());
  }
  for (const auto& p : most["outputs"]) {
    const std::string role = p.value("role", std::string("output"));
    const bool supplies = role == "vector size" || role == "span size" || role == "sizeof value";
    (supplies ? form.supplied : form.returned).insert(p["name"].get<std::string>());
  }
  for (const auto& p : f["outputs"]) {
    form.returned_by_any.insert(p["name"].get<std::string>());
  }
  form.returned_by_any.insert(form.returned.begin(), form.returned.end());
  for (const auto& p : f.value("params", nlohmann::json::array())) {
    const std::string name = p["name"];
    form.c_params.insert(name);
    if (form.taken.count(name) == 0 && form.returned.count(name) == 0) {
      form.supplied.insert(name);  // the length of a string buffer, ...
    }
  }
  return form;
}

struct Tally {
  int checked = 0;
  int at_least_as_typed = 0;
  int same_classification = 0;  // both directions agree
  std::map<std::string, int> shapes;
};

// Check every function of `header` in the report against library `lib` of the reference.
// One way (always): every output cuda.bindings returns is returned by one of our typed
// forms. Both ways (`both_ways`, only for the toolkit generation the reference describes,
// 13.x: in 12.x some signatures are older, e.g. cuGraphGetEdges without edge data): our
// most typed form takes exactly the parameters cuda.bindings takes (less those it
// supplies itself, the sizes of spans and vectors), and returns nothing that
// cuda.bindings does not return (named, or among its unnamed results), except where
// kReturnsMore says why.
Tally check_header(const nlohmann::json& report, const nlohmann::json& ref,
                   const std::string& header, const std::string& lib, bool both_ways = true) {
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
      const OurForm ours = our_form(f);
      const ReferenceOutputs theirs = reference_outputs(ref[lib][name], name, ours.c_params);
      bool typed = true;
      bool same = true;
      // Theirs → ours: outputs.
      for (const auto& want : theirs.named) {
        // Returned, or supplied by ours: the size of a returned vector (cuGraphGetNodes'
        // numNodes), the size of a typed value (cuCoredumpGetAttribute's size).
        if (ours.returned_by_any.count(want) != 0 || ours.supplied.count(want) != 0) {
          continue;
        }
        if (ours.taken.count(want) != 0) {
          typed = false;
          ADD_FAILURE() << name << ": cuda.bindings returns '" << want
                        << "', our typed forms take it as a parameter";
        } else if (both_ways) {
          typed = false;
          ADD_FAILURE() << name << ": cuda.bindings returns '" << want
                        << "', which is no parameter of ours (a new rename? see kRenamed)";
        }
      }
      if (!both_ways) {
        t.at_least_as_typed += typed ? 1 : 0;
        continue;
      }
      // Ours → theirs: outputs.
      std::size_t unnamed = theirs.unnamed;
      for (const auto& given : ours.returned) {
        if (std::find(theirs.named.begin(), theirs.named.end(), given) != theirs.named.end() ||
            kReturnsMore.count({name, given}) != 0) {
          continue;
        }
        if (unnamed > 0) {
          --unnamed;  // one of the results cuda.bindings' docstring does not name
          continue;
        }
        same = false;
        ADD_FAILURE() << name << ": our typed form returns '" << given
                      << "', cuda.bindings does not return it";
      }
      // Theirs → ours and ours → theirs: inputs.
      std::set<std::string> their_params;
      for (const auto& p : ref[lib][name]["params"]) {
        their_params.insert(c_name(name, p.get<std::string>(), ours.c_params));
      }
      for (const auto& p : their_params) {
        if (ours.taken.count(p) != 0 || ours.supplied.count(p) != 0) {
          continue;
        }
        same = false;
        ADD_FAILURE() << name << ": cuda.bindings takes '" << p << "', "
                      << (ours.returned.count(p) != 0 ? "our typed form returns it"
                                                      : "which is no parameter of ours");
      }
      for (const auto& p : ours.taken) {
        if (their_params.count(p) == 0) {
          same = false;
          ADD_FAILURE() << name << ": our typed form takes '" << p << "', cuda.bindings does not";
        }
      }
      t.at_least_as_typed += typed ? 1 : 0;
      t.same_classification += typed && same ? 1 : 0;
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
  for (const auto& [header, lib] :
       {std::pair<std::string, std::string>{"cuda.h", "driver"}, {"nvrtc.h", "nvrtc"}}) {
    const bool same_generation = report["cuda_version"].get<int>() / 1000 == 13;
    const Tally t = check_header(report, ref, header, lib, same_generation);
    EXPECT_GT(t.checked, 0) << header;
    EXPECT_EQ(t.at_least_as_typed, t.checked) << header;
    if (same_generation) {
      EXPECT_EQ(t.same_classification, t.checked) << header;
    }
    std::cout << "CUDA " << report["cuda_version"] << " " << header << ": " << t.at_least_as_typed
              << "/" << t.checked << " functions of cuda.bindings 13.3 at least as typed";
    if (same_generation) {
      std::cout << ", " << t.same_classification << "/" << t.checked
                << " with the same inputs and outputs both ways";
    }
    std::cout << "; shapes:";
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

// The checks themselves, on a one-function reference and report.
nlohmann::json one_function_report(const nlohmann::json& inputs, const nlohmann::json& outputs) {
  return {{"headers",
           {{{"header", "cuda.h"},
             {"functions",
              {{{"name", "cuThing"},
                {"shape", "value"},
                {"inputs", inputs},
                {"outputs", outputs}}}}}}}};
}

const nlohmann::json kThingReference = {
    {"driver",
     {{"cuThing", {{"params", {"dev"}}, {"returns", {"CUresult", "...", "value : int", "x"}}}}}}};

// The number of failures `check` reports.
template <typename Check>
int failures_of(Check&& check) {
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    check();
  }
  return failures.size();
}

TEST(Reference, TheSameInputsAndOutputsPassBothWays) {
  const auto same = one_function_report({{{"name", "dev"}}}, {{{"name", "value"}}});
  EXPECT_EQ(failures_of([&] {
              const Tally t = check_header(same, kThingReference, "cuda.h", "driver");
              EXPECT_EQ(t.at_least_as_typed, 1);
              EXPECT_EQ(t.same_classification, 1);
            }),
            0);
}

// Theirs → ours: an output they return that we take as a parameter.
TEST(Reference, AnOutPointerLeftAsParameterFails) {
  const auto untyped =
      one_function_report({{{"name", "dev"}}, {{"name", "value"}}}, nlohmann::json::array());
  EXPECT_EQ(
      failures_of([&] {
        EXPECT_EQ(
            check_header(untyped, kThingReference, "cuda.h", "driver", false).at_least_as_typed, 0);
      }),
      1);
  // Both ways it is also an input of ours that cuda.bindings does not take.
  EXPECT_EQ(failures_of([&] { check_header(untyped, kThingReference, "cuda.h", "driver"); }), 2);
}

// Ours → theirs: an output we return that they do not, and an input they take that we
// do not know.
TEST(Reference, AnOutputTheyDoNotReturnOrAnInputWeLackFails) {
  const auto more =
      one_function_report({{{"name", "dev"}}}, {{{"name", "value"}}, {{"name", "extra"}}});
  EXPECT_EQ(failures_of([&] {
              EXPECT_EQ(check_header(more, kThingReference, "cuda.h", "driver").same_classification,
                        0);
            }),
            1);
  EXPECT_EQ(failures_of([&] { check_header(more, kThingReference, "cuda.h", "driver", false); }),
            0);
  // An unnamed result of theirs ("None") may be ours.
  nlohmann::json unnamed = kThingReference;
  unnamed["driver"]["cuThing"]["returns"].push_back("None");
  EXPECT_EQ(failures_of([&] { check_header(more, unnamed, "cuda.h", "driver"); }), 0);
  const auto fewer = one_function_report(nlohmann::json::array(), {{{"name", "value"}}});
  EXPECT_EQ(failures_of([&] {
              EXPECT_EQ(
                  check_header(fewer, kThingReference, "cuda.h", "driver").same_classification, 0);
            }),
            1);
}

}  // namespace
}  // namespace cuwrap::gen
