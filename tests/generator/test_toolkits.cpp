// cuwrap-gen on real toolkits: generated/ must match what the generator writes for the
// CUDA headers it was generated from (drift), the headers of generated/ and of the
// bindings this build made compile against their toolkit, the configured toolkit's
// functions are all covered, and CUDA 12.4 and 12.6 regenerate.
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cuwrap::gen {
namespace {

namespace fs = std::filesystem;
using testing::quoted;
using testing::run_command;
using testing::ScratchDir;

const fs::path kSourceDir = CUWRAP_SOURCE_DIR;
const fs::path kCheckedIn = kSourceDir / "generated";

// "13.0": how messages name a CUDA_VERSION.
std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The CUDA_VERSION that `include`/cuda.h defines, or 0.
int cuda_version_of(const fs::path& include) {
  const std::string text = testing::read_file(include / "cuda.h");
  const std::string key = "#define CUDA_VERSION ";
  const auto at = text.find(key);
  return at == std::string::npos ? 0 : std::atoi(text.c_str() + at + key.size());
}

// "" when the CUDA headers generated/ was generated from are at
// CUWRAP_CHECKED_IN_CUDA_INCLUDE, else what the tests about generated/ need.
std::string checked_in_headers_missing() {
  const fs::path include = CUWRAP_CHECKED_IN_CUDA_INCLUDE;
  const std::string wanted = "the CUDA " + version_text(CUWRAP_CHECKED_IN_VERSION) +
                             " headers generated/ was generated from";
  if (include.empty() || !fs::is_regular_file(include / "cuda.h")) {
    return "needs " + wanted +
           " (not found): set CUWRAP_CHECKED_IN_CUDA_INCLUDE (CMake cache or environment at "
           "configure time) to a directory with their cuda.h, nvrtc.h and nvJitLink.h";
  }
  if (const int found = cuda_version_of(include); found != CUWRAP_CHECKED_IN_VERSION) {
    return "needs " + wanted + ", but CUWRAP_CHECKED_IN_CUDA_INCLUDE=" + include.string() +
           " holds CUDA " + version_text(found);
  }
  return {};
}

// The headers of the libraries bound on request that generated/ binds (nvml.h, nvFatbin.h)
// and that are not in CUWRAP_CHECKED_IN_EXTRA_HEADERS here (CI has none of them).
std::vector<std::string> checked_in_extra_missing() {
  std::vector<std::string> out;
  std::istringstream in(CUWRAP_CHECKED_IN_EXTRA_MISSING);
  for (std::string header; std::getline(in, header, '|');) {
    if (!header.empty()) {
      out.push_back(header);
    }
  }
  return out;
}

// The cuwrap-gen arguments that add those headers: "" when some are missing.
std::string checked_in_extra_args() {
  return checked_in_extra_missing().empty()
             ? "--extra-headers " + quoted(CUWRAP_CHECKED_IN_EXTRA_HEADERS)
             : std::string();
}

// What a test about generated/ leaves out without those headers, for its message.
std::string checked_in_extra_note() {
  std::string headers;
  for (const auto& h : checked_in_extra_missing()) {
    headers += (headers.empty() ? "" : ", ") + h;
  }
  return "without " + headers +
         " (CUWRAP_CHECKED_IN_EXTRA_HEADERS: the versions docs/regenerating.md names), their "
         "libraries' files and the files listing every library are not compared";
}

// The header each file of a library's bindings comes from (coverage.json's namespaces:
// include/cuwrap/nvml.hpp, nvml_raw.hpp, nvml_enums.hpp, src/nvml.cpp → nvml.h).
std::map<std::string, std::string> header_of_library_files(const fs::path& coverage) {
  std::map<std::string, std::string> out;
  const nlohmann::json report = nlohmann::json::parse(testing::read_file(coverage));
  for (const auto& h : report["headers"]) {
    const std::string ns = h["namespace"].get<std::string>();
    const std::string stem = ns.substr(ns.rfind(':') + 1);
    for (const std::string& file :
         {"include/cuwrap/" + stem + ".hpp", "include/cuwrap/" + stem + "_raw.hpp",
          "include/cuwrap/" + stem + "_enums.hpp", "src/" + stem + ".cpp"}) {
      out[file] = h["header"].get<std::string>();
    }
  }
  return out;
}

// Run cuwrap-gen for `include` into `out`, with the JSON report; return the report.
nlohmann::json generate(const fs::path& include, const fs::path& out, const fs::path& report,
                        const std::string& extra = {}) {
  const auto r = run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " +
                             quoted(include.string()) + " --output " + quoted(out.string()) +
                             " --report " + quoted(report.string()) + " " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? nlohmann::json::parse(testing::read_file(report)) : nlohmann::json();
}

// The files under `dir`, relative to it.
std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) {
        out.insert(fs::relative(e.path(), dir).generic_string());
      }
    }
  }
  return out;
}

// Compile `source` with -fsyntax-only against generated headers in `include`.
testing::CommandResult syntax_check(const fs::path& source, const fs::path& include,
                                    const fs::path& cuda, const std::string& extra = {}) {
  return run_command(quoted(CUWRAP_CXX_COMPILER) +
                     " -std=c++20 -Wall -Wextra -Wpedantic -Werror -fsyntax-only " + extra + " -I" +
                     quoted(include.string()) + " -I" + quoted(CUWRAP_RUNTIME_INCLUDE_DIR) + " -I" +
                     quoted(cuda.string()) + " " + quoted(source.string()));
}

// Every header's functions all have a typed form, except those that return no status
// (pass-through: the typed namespace repeats the C signature), which are not counted
// as typed.
void expect_full_coverage(const nlohmann::json& report) {
  ASSERT_TRUE(report.contains("headers"));
  for (const auto& h : report["headers"]) {
    EXPECT_GT(h["declared"].get<int>(), 0) << h["header"];
    EXPECT_EQ(h["typed"].get<int>() + h["pass_through"].get<int>(), h["declared"].get<int>())
        << h["header"];
    EXPECT_EQ(h["raw_only"], 0) << h["header"];
    std::set<std::string> status_types;  // what the typed functions return
    for (const auto& f : h["functions"]) {
      if (f["typed"].get<bool>()) {
        status_types.insert(f["return_type"].get<std::string>());
      }
    }
    EXPECT_EQ(status_types.size(), 1u) << h["header"];
    int pass_through = 0;
    for (const auto& f : h["functions"]) {
      if (f["shape"] == "pass-through") {
        ++pass_through;
        EXPECT_FALSE(f["typed"].get<bool>()) << f["name"];
        EXPECT_EQ(status_types.count(f["return_type"].get<std::string>()), 0u)
            << f["name"] << " returns the status but has no typed form";
      } else {
        EXPECT_TRUE(f["typed"].get<bool>()) << f["name"] << ": " << f["raw_only_reason"];
      }
    }
    EXPECT_EQ(pass_through, h["pass_through"].get<int>()) << h["header"];
  }
}

// generated/ is what cuwrap-gen writes for the headers it was generated from, whatever
// toolkit this build is configured for.
TEST(Toolkit, GeneratedMatchesTheGenerator) {
  if (const std::string missing = checked_in_headers_missing(); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  ScratchDir dir;
  // The coverage report and the classification list are checked in with the bindings.
  generate(CUWRAP_CHECKED_IN_CUDA_INCLUDE, dir.path() / "out", dir.path() / "out" / "coverage.json",
           "--classification " + quoted((dir.path() / "out" / "classification.txt").string()) +
               " " + checked_in_extra_args());
  const fs::path& checked_in = kCheckedIn;
  const auto expected = files_under(dir.path() / "out");
  auto actual = files_under(checked_in);
  ASSERT_FALSE(expected.empty());
  // Without the headers of the libraries bound on request, their files cannot be made, and
  // the files naming every library the run bound differ: the rest is compared.
  const auto missing = checked_in_extra_missing();
  std::set<std::string> not_compared;
  if (!missing.empty()) {
    not_compared = {"include/cuwrap/detail/symbols.hpp", "coverage.json", "classification.txt"};
    for (const auto& [file, header] : header_of_library_files(checked_in / "coverage.json")) {
      if (std::find(missing.begin(), missing.end(), header) != missing.end()) {
        not_compared.insert(file);
      }
    }
    std::cout << "[ NOTE     ] " << checked_in_extra_note() << "\n";
  }
  for (const auto& f : expected) {
    if (not_compared.count(f) != 0) {
      continue;
    }
    ASSERT_TRUE(actual.count(f) != 0)
        << "generated/" << f << " is missing; regenerate (target cuwrap-regenerate)";
    if (f == "coverage.json" || f == "classification.txt") {  // too long to print
      EXPECT_TRUE(testing::read_file(checked_in / f) == testing::read_file(dir.path() / "out" / f))
          << "generated/" << f << " differs from what cuwrap-gen writes for "
          << CUWRAP_CHECKED_IN_CUDA_INCLUDE
          << "; regenerate it (cmake --build <dir> --target cuwrap-regenerate)";
      continue;
    }
    ASSERT_EQ(testing::read_file(checked_in / f), testing::read_file(dir.path() / "out" / f))
        << "generated/" << f << " differs from what cuwrap-gen writes for "
        << CUWRAP_CHECKED_IN_CUDA_INCLUDE
        << "; regenerate it (cmake --build <dir> --target cuwrap-regenerate), never edit it by "
           "hand";
  }
  for (const auto& f : actual) {
    EXPECT_TRUE(expected.count(f) != 0 || not_compared.count(f) != 0)
        << "generated/" << f << " is not produced by cuwrap-gen any more";
  }
}

// The lines of `text` that are not comments.
std::vector<std::string> classification_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      out.push_back(line);
    }
  }
  return out;
}

// generated/classification.txt holds each function's classification (shape, inputs,
// outputs, spans and the other roles of the second form, raw-only with its reason) for
// the checked-in bindings: a rule change that reclassifies a function fails here until
// the list is updated with it, and the review sees the changed lines.
TEST(Toolkit, ClassificationMatchesTheCheckedInList) {
  if (const std::string missing = checked_in_headers_missing(); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  ScratchDir dir;
  const fs::path list = dir.path() / "classification.txt";
  generate(CUWRAP_CHECKED_IN_CUDA_INCLUDE, dir.path() / "out", dir.path() / "report.json",
           "--classification " + quoted(list.string()) + " " + checked_in_extra_args());
  const auto now = classification_lines(testing::read_file(list));
  auto checked_in = classification_lines(testing::read_file(kCheckedIn / "classification.txt"));
  // Without the headers of the libraries bound on request their lines are not compared.
  for (const auto& header : checked_in_extra_missing()) {
    std::erase_if(checked_in,
                  [&](const std::string& line) { return line.rfind(header + " ", 0) == 0; });
  }
  ASSERT_FALSE(now.empty());
  const std::set<std::string> now_set(now.begin(), now.end());
  const std::set<std::string> checked_in_set(checked_in.begin(), checked_in.end());
  std::string changes;
  for (const auto& line : checked_in) {
    if (now_set.count(line) == 0) {
      changes += "  - " + line + "\n";
    }
  }
  for (const auto& line : now) {
    if (checked_in_set.count(line) == 0) {
      changes += "  + " + line + "\n";
    }
  }
  EXPECT_TRUE(changes.empty() && now == checked_in)
      << "the classification of the checked-in bindings changed (- generated/classification.txt, "
         "+ cuwrap-gen now):\n"
      << changes
      << "If the change is intended, update the list with the bindings: cmake --build <dir> "
         "--target cuwrap-regenerate (or cuwrap-gen --cuda-include "
      << CUWRAP_CHECKED_IN_CUDA_INCLUDE
      << " --output generated --report generated/coverage.json --classification "
         "generated/classification.txt) and commit it with the rule change.";
}

// docs/regenerating.md shows two comparisons (12.6 → 13.0 and 13.0 → 12.4) with their
// counts; docs/comparisons/ holds them whole. Both are what cuwrap-gen --compare writes
// for those headers.
void expect_documented_comparison(const fs::path& old_include, const fs::path& new_include,
                                  const std::string& file) {
  ScratchDir dir;
  const fs::path md = dir.path() / "compare.md";
  const auto r = run_command(
      quoted(CUWRAP_GEN_EXE) + " --cuda-include " + quoted(new_include.string()) + " --compare " +
      quoted(old_include.string()) + " --compare-markdown " + quoted(md.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string marker = "cuwrap-gen: compared with " + old_include.string() + ": ";
  const auto at = r.output.find(marker);
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string summary =
      r.output.substr(at + marker.size(), r.output.find('\n', at) - at - marker.size());
  const std::string doc = testing::read_file(kSourceDir / "docs" / "regenerating.md");
  EXPECT_NE(doc.find(summary), std::string::npos)
      << "docs/regenerating.md does not show the counts cuwrap-gen gives now:\n"
      << summary;
  // The excerpt the page shows after the 12.6 → 13.0 counts is part of that comparison.
  const std::string excerpt_at = "An excerpt:\n\n```text\n";
  const auto begin = doc.find(excerpt_at);
  ASSERT_NE(begin, std::string::npos);
  const auto end = doc.find("```", begin + excerpt_at.size());
  if (file == "cuda-12.6-to-13.0.md") {
    std::istringstream excerpt(
        doc.substr(begin + excerpt_at.size(), end - begin - excerpt_at.size()));
    for (std::string line; std::getline(excerpt, line);) {
      EXPECT_NE(testing::read_file(md).find(line + "\n"), std::string::npos)
          << "docs/regenerating.md's excerpt has a line the comparison does not: " << line;
    }
  }
  EXPECT_TRUE(testing::read_file(kSourceDir / "docs" / "comparisons" / file) ==
              testing::read_file(md))
      << "docs/comparisons/" << file << " differs from what cuwrap-gen --compare writes; "
      << "write it again: cuwrap-gen --cuda-include " << new_include.string() << " --compare "
      << old_include.string() << " --compare-markdown docs/comparisons/" << file;
}

TEST(Toolkit, DocumentedComparisonsAreCurrent) {
  if (const std::string missing = checked_in_headers_missing(); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  const fs::path cuda126 = CUWRAP_CUDA_12_6_INCLUDE;
  const fs::path cuda124 = CUWRAP_CUDA_12_4_INCLUDE;
  if (!fs::is_regular_file(cuda126 / "cuda.h") || !fs::is_regular_file(cuda124 / "cuda.h")) {
    GTEST_SKIP() << "needs the CUDA 12.6 and 12.4 headers (CUWRAP_CUDA_12_6_INCLUDE, "
                    "CUWRAP_CUDA_12_4_INCLUDE)";
  }
  expect_documented_comparison(cuda126, CUWRAP_CHECKED_IN_CUDA_INCLUDE, "cuda-12.6-to-13.0.md");
  expect_documented_comparison(CUWRAP_CHECKED_IN_CUDA_INCLUDE, cuda124, "cuda-13.0-to-12.4.md");
}

// docs/regenerating.md shows the summary cuwrap-gen prints for the headers generated/
// was generated from (all of it, from the cuda.h line on), and the number of functions
// per header of the 12.6 and 12.4 headers, which lack nvvm.h (the run says the bindings
// omit it).
TEST(Toolkit, DocumentedSummaryIsCurrent) {
  if (const std::string missing = checked_in_headers_missing(); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  if (!checked_in_extra_missing().empty()) {
    GTEST_SKIP() << "the summary names every library generated/ binds; " << checked_in_extra_note();
  }
  const std::string doc = testing::read_file(kSourceDir / "docs" / "regenerating.md");
  ScratchDir dir;
  const auto r = run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " +
                             quoted(CUWRAP_CHECKED_IN_CUDA_INCLUDE) + " --output " +
                             quoted((dir.path() / "out").string()) + " " + checked_in_extra_args());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string block_at = "```text\ncuda.h: ";
  const auto begin = doc.find(block_at);
  ASSERT_NE(begin, std::string::npos);
  const auto end = doc.find("```", begin + 3);
  const auto printed = r.output.find("cuda.h: ");
  ASSERT_NE(printed, std::string::npos) << r.output;
  EXPECT_EQ(doc.substr(begin + 8, end - begin - 8), r.output.substr(printed))
      << "docs/regenerating.md's summary differs from what cuwrap-gen prints now";
  const fs::path cuda126 = CUWRAP_CUDA_12_6_INCLUDE;
  const fs::path cuda124 = CUWRAP_CUDA_12_4_INCLUDE;
  for (const auto& [include, text] : {std::pair{cuda126, std::string("the 12.6 headers give ")},
                                      std::pair{cuda124, std::string("the 12.4 headers ")}}) {
    if (!fs::is_regular_file(include / "cuda.h")) {
      continue;
    }
    const auto report = generate(include, dir.path() / "x", dir.path() / "x.json");
    std::vector<int> declared;
    for (const auto& h : report["headers"]) {
      EXPECT_NE(h["header"], "nvvm.h") << include;
      declared.push_back(h["declared"].get<int>());
    }
    ASSERT_EQ(declared.size(), 3u) << include;
    const std::string counts = text + std::to_string(declared[0]) + ", " +
                               std::to_string(declared[1]) + " and " + std::to_string(declared[2]);
    EXPECT_NE(doc.find(counts), std::string::npos)
        << "docs/regenerating.md does not say: " << counts;
  }
}

// A build that generates its own bindings (another toolkit than generated/'s) compares
// them with the checked-in report: compare.md and compare.json beside its coverage.json.
TEST(Toolkit, ThisBuildsBindingsAreComparedWithTheCheckedInOnes) {
  const fs::path root = CUWRAP_BINDINGS_ROOT;
  if (!fs::exists(root / "bindings.stamp")) {
    GTEST_SKIP() << "this build does not generate its bindings (they are " << root << ")";
  }
  const auto c = nlohmann::json::parse(testing::read_file(root / "compare.json"));
  const auto coverage = nlohmann::json::parse(testing::read_file(root / "coverage.json"));
  EXPECT_EQ(c["old"]["source"], (kCheckedIn / "coverage.json").string());
  EXPECT_EQ(c["old"]["cuda_version"], CUWRAP_CHECKED_IN_VERSION);
  EXPECT_EQ(c["new"]["cuda_version"], coverage["cuda_version"]);
  EXPECT_EQ(c["summary"]["functions_added"], c["functions_added"].size());
  EXPECT_NE(testing::read_file(root / "compare.md")
                .find("# cuwrap-gen comparison: CUDA " + version_text(CUWRAP_CHECKED_IN_VERSION) +
                      " → CUDA " + version_text(coverage["cuda_version"].get<int>())),
            std::string::npos);
}

// cmake/bindings.cmake names every header cuwrap-gen writes for the configured toolkit
// (the build-time generation declares them as its byproducts), and no other.
TEST(Toolkit, CMakeListsEveryGeneratedHeader) {
  ScratchDir dir;
  // The libraries bound on request are in this build's lists where their header was found:
  // in CUWRAP_EXTRA_HEADERS_DIR, else beside the toolkit's (cmake/libraries.cmake).
  std::string extra = "--extra-headers " + quoted(CUWRAP_CUDA_INCLUDE_DIR);
  if (!std::string(CUWRAP_EXTRA_HEADERS_DIR).empty()) {
    extra = "--extra-headers " + quoted(CUWRAP_EXTRA_HEADERS_DIR) + " " + extra;
  }
  generate(CUWRAP_CUDA_INCLUDE_DIR, dir.path() / "out", dir.path() / "report.json", extra);
  std::set<std::string> written;
  for (const auto& f : files_under(dir.path() / "out")) {
    if (f.rfind("include/", 0) == 0) {
      written.insert(f);
    }
  }
  std::set<std::string> listed;
  std::istringstream list(CUWRAP_GENERATED_HEADER_FILES);
  for (std::string f; std::getline(list, f, '|');) {
    listed.insert(f);
  }
  EXPECT_EQ(listed, written);
}

TEST(Toolkit, CoversEveryFunction) {
  ScratchDir dir;
  const auto report =
      generate(CUWRAP_CUDA_INCLUDE_DIR, dir.path() / "out", dir.path() / "report.json");
  expect_full_coverage(report);
  if (report["cuda_version"] == 13000) {
    // cuda.h 13.0 declares 449 public functions (not counting the legacy ones under
    // __CUDA_API_VERSION_INTERNAL or the _ptds/_ptsz variants).
    EXPECT_EQ(report["headers"][0]["header"], "cuda.h");
    EXPECT_EQ(report["headers"][0]["declared"], 449);
    EXPECT_EQ(report["headers"][0]["typed"], 449);
  }
}

// Every driver function has the CUDA version of its ABI (from cudaTypedefs.h), so the
// loader never asks cuGetProcAddress for a newer signature than the wrapper calls.
void expect_abi_versions(const nlohmann::json& report) {
  for (const auto& h : report["headers"]) {
    if (h["header"] != "cuda.h") {
      continue;
    }
    for (const auto& f : h["functions"]) {
      EXPECT_GT(f["abi_version"].get<int>(), 0) << f["name"];
      if (!f["per_thread_symbol"].is_null()) {
        EXPECT_GT(f["per_thread_abi_version"].get<int>(), 0) << f["name"];
      }
    }
  }
}

// Return the report entry of `name` in cuda.h.
nlohmann::json driver_entry(const nlohmann::json& report, const std::string& name) {
  for (const auto& f : report["headers"][0]["functions"]) {
    if (f["name"] == name) {
      return f;
    }
  }
  return {};
}

TEST(Toolkit, DriverEntriesCarryTheAbiOfTheirPrototype) {
  ScratchDir dir;
  const auto report =
      generate(CUWRAP_CUDA_INCLUDE_DIR, dir.path() / "out", dir.path() / "report.json");
  expect_abi_versions(report);
  if (report["cuda_version"] != 13000) {
    GTEST_SKIP() << "the exact versions below are those of CUDA 13.0";
  }
  // Re-versioned names: the header's prototype is the old ABI.
  EXPECT_EQ(driver_entry(report, "cuStreamGetCtx")["abi_version"], 9020);
  EXPECT_EQ(driver_entry(report, "cuCtxSynchronize")["abi_version"], 2000);
  EXPECT_EQ(driver_entry(report, "cuCtxGetDevice")["abi_version"], 2000);
  // Explicitly versioned names are found under their base name.
  EXPECT_EQ(driver_entry(report, "cuStreamGetCtx_v2")["abi_version"], 12050);
  EXPECT_EQ(driver_entry(report, "cuStreamGetCtx_v2")["proc_name"], "cuStreamGetCtx");
  EXPECT_EQ(driver_entry(report, "cuCtxSynchronize_v2")["abi_version"], 13000);
  // A name #defined to another function is looked up as that function.
  EXPECT_EQ(driver_entry(report, "cuGraphInstantiate")["proc_name"], "cuGraphInstantiateWithFlags");
  EXPECT_EQ(driver_entry(report, "cuGraphInstantiate")["abi_version"], 11040);
  // Versioned symbols and per-thread variants.
  EXPECT_EQ(driver_entry(report, "cuMemAlloc")["abi_version"], 3020);
  EXPECT_EQ(driver_entry(report, "cuMemcpyHtoD")["abi_version"], 3020);
  EXPECT_EQ(driver_entry(report, "cuMemcpyHtoD")["per_thread_abi_version"], 7000);
}

// A set of bindings (include/ and src/ as cuwrap-gen writes them) and the CUDA headers
// they were generated from.
struct Bindings {
  std::string name;       // the test's suffix
  fs::path root;          // holds include/cuwrap/
  fs::path cuda_include;  // the toolkit headers they are compiled against
  std::string missing;    // why they cannot be tested here; "" when they can
  /// The libraries bound on request whose headers are here too ("nvml", "nvfatbin"), and
  /// the compiler flag naming those headers' directory.
  std::vector<std::string> extra_libraries = {};
  std::string extra_include = {};
};

// How a parameter is named in test listings.
void PrintTo(const Bindings& bindings, std::ostream* os) {
  *os << bindings.name << " (" << bindings.root.string() << ")";
}

// The checked-in generated/ (against the toolkit it was generated from) and, when this
// build compiles other bindings (another toolkit: generated at build time or given by
// CUWRAP_BINDINGS_DIR), those against the configured toolkit.
std::vector<Bindings> bindings_under_test() {
  std::vector<Bindings> out;
  out.push_back(
      {"CheckedIn", kCheckedIn, CUWRAP_CHECKED_IN_CUDA_INCLUDE, checked_in_headers_missing()});
  if (checked_in_extra_missing().empty()) {
    for (const auto& [file, header] : header_of_library_files(kCheckedIn / "coverage.json")) {
      const fs::path extra = CUWRAP_CHECKED_IN_EXTRA_HEADERS;
      if (file.rfind("src/", 0) == 0 && fs::is_regular_file(extra / header) &&
          !fs::is_regular_file(fs::path(CUWRAP_CHECKED_IN_CUDA_INCLUDE) / header)) {
        out.back().extra_libraries.push_back(fs::path(file).stem().string());
      }
    }
    out.back().extra_include = "-I" + quoted(CUWRAP_CHECKED_IN_EXTRA_HEADERS);
  }
  const fs::path build = CUWRAP_BINDINGS_ROOT;
  if (build.lexically_normal() != kCheckedIn.lexically_normal()) {
    out.push_back({"ThisBuild", build, CUWRAP_CUDA_INCLUDE_DIR, {}});
  }
  return out;
}

class GeneratedHeaders : public ::testing::TestWithParam<Bindings> {
 protected:
  void SetUp() override {
    if (!GetParam().missing.empty()) {
      GTEST_SKIP() << GetParam().missing;
    }
    ASSERT_TRUE(fs::is_regular_file(include() / "cuwrap" / "detail" / "symbols.hpp"))
        << "no bindings in " << GetParam().root;
  }
  fs::path include() const { return GetParam().root / "include"; }
  const fs::path& cuda() const { return GetParam().cuda_include; }
};

TEST_P(GeneratedHeaders, RepresentativeWrappersCompile) {
  const fs::path usage = fs::path(CUWRAP_TEST_SOURCE_DIR) / "wrapper_usage.cpp";
  for (const std::string mode : {"", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"}) {
    const auto r = syntax_check(usage, include(), cuda(), mode);
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
  }
}

// The headers of each library in the split (docs/regenerating.md): the typed one, the raw
// one and the enums one.
constexpr const char* kLibraries[] = {"driver", "nvrtc", "nvjitlink"};
constexpr const char* kFlavours[] = {"", "_raw", "_enums"};

// Each generated header compiles alone, warning-clean under the strictest warnings the
// public headers promise.
TEST_P(GeneratedHeaders, EachGeneratedHeaderCompilesAlone) {
  ScratchDir dir;
  std::vector<std::string> headers = {"cuwrap/detail/symbols.hpp"};
  std::vector<std::string> libraries(std::begin(kLibraries), std::end(kLibraries));
  // The libraries bound on request where their headers are here (NVML, nvFatbin).
  libraries.insert(libraries.end(), GetParam().extra_libraries.begin(),
                   GetParam().extra_libraries.end());
  for (const auto& lib : libraries) {
    for (const char* flavour : kFlavours) {
      headers.push_back("cuwrap/" + lib + flavour + ".hpp");
    }
  }
  for (const auto& header : headers) {
    const fs::path tu = dir.path() / "alone.cpp";
    std::ofstream(tu) << "#include <" << header << ">\n";
    const auto r =
        syntax_check(tu, include(), cuda(),
                     "-Wshadow -Wconversion -Wsign-conversion " + GetParam().extra_include);
    EXPECT_EQ(r.exit_code, 0) << header << "\n" << r.output;
  }
}

// The raw and enums headers declare no typed form, the typed header does (header_probe.cpp
// fails to compile otherwise), and the enums header declares no raw form either.
TEST_P(GeneratedHeaders, RawAndEnumsHeadersDeclareNoTypedForm) {
  const fs::path probe = fs::path(CUWRAP_TEST_SOURCE_DIR) / "header_probe.cpp";
  for (const char* lib : kLibraries) {
    for (const std::string flavour : kFlavours) {
      const std::string header = std::string("cuwrap/") + lib + flavour + ".hpp";
      std::string library = lib;
      std::transform(library.begin(), library.end(), library.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      std::string defines = "'-DCUWRAP_PROBE_HEADER=<" + header + ">' -DCUWRAP_PROBE_" + library +
                            " -DCUWRAP_PROBE_TYPED=" + (flavour.empty() ? "1" : "0");
      if (flavour == "_enums") {
        defines += " -DCUWRAP_PROBE_ENUMS";
      }
      const auto r = syntax_check(probe, include(), cuda(), defines);
      EXPECT_EQ(r.exit_code, 0) << header << "\n" << r.output;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Toolkit, GeneratedHeaders, ::testing::ValuesIn(bindings_under_test()),
                         [](const ::testing::TestParamInfo<Bindings>& info) {
                           return info.param.name;
                         });

// Regenerate for the toolkit headers in `include` (CUDA `version`): full coverage, ABI
// versions, and the three headers and their sources compile against those headers.
void expect_regenerates(const fs::path& include, int version, const char* variable) {
  if (include.empty() || !fs::is_regular_file(include / "cuda.h")) {
    GTEST_SKIP() << "CUDA headers not found: set " << variable
                 << " (CMake cache or environment at configure time) to a directory with "
                    "cuda.h, nvrtc.h and nvJitLink.h";
  }
  ScratchDir dir;
  const auto report = generate(include, dir.path() / "out", dir.path() / "report.json");
  EXPECT_EQ(report["cuda_version"], version);
  expect_full_coverage(report);
  expect_abi_versions(report);
  const fs::path all = dir.path() / "all.cpp";
  std::ofstream(all) << "#include <cuwrap/driver.hpp>\n#include <cuwrap/nvrtc.hpp>\n#include "
                        "<cuwrap/nvjitlink.hpp>\n";
  for (const std::string mode : {"", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"}) {
    const auto r = syntax_check(all, dir.path() / "out" / "include", include, mode);
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
  }
  for (const char* src : {"driver.cpp", "nvrtc.cpp", "nvjitlink.cpp"}) {
    const auto r =
        syntax_check(dir.path() / "out" / "src" / src, dir.path() / "out" / "include", include);
    EXPECT_EQ(r.exit_code, 0) << src << "\n" << r.output;
  }
}

TEST(Toolkit, RegeneratesForCuda126) {
  expect_regenerates(CUWRAP_CUDA_12_6_INCLUDE, 12060, "CUWRAP_CUDA_12_6_INCLUDE");
}

TEST(Toolkit, RegeneratesForCuda124) {
  expect_regenerates(CUWRAP_CUDA_12_4_INCLUDE, 12040, "CUWRAP_CUDA_12_4_INCLUDE");
}

// The toolkit headers of `include` without cudaTypedefs.h: without --abi-from-defines
// an error naming the file; with it, every driver entry point gets the ABI version,
// per-thread version and cuGetProcAddress name that cudaTypedefs.h gives it (the
// table of known versions agrees with this toolkit's cudaTypedefs.h), none unknown.
void expect_defines_match_typedefs(const fs::path& include, const char* variable) {
  if (include.empty() || !fs::is_regular_file(include / "cudaTypedefs.h")) {
    GTEST_SKIP() << "CUDA headers with cudaTypedefs.h not found: set " << variable;
  }
  ScratchDir dir;
  const fs::path bare = dir.path() / "bare";
  fs::create_directories(bare);
  for (const char* h : {"cuda.h", "nvrtc.h", "nvJitLink.h"}) {
    fs::copy_file(include / h, bare / h);
  }
  const auto refused =
      run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " + quoted(bare.string()) +
                  " --output " + quoted((dir.path() / "refused").string()));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find((bare / "cudaTypedefs.h").string()), std::string::npos)
      << refused.output;
  EXPECT_FALSE(fs::exists(dir.path() / "refused"));

  const auto typedefs = generate(include, dir.path() / "typed", dir.path() / "typed.json");
  const auto r =
      run_command(quoted(CUWRAP_GEN_EXE) + " --abi-from-defines --cuda-include " +
                  quoted(bare.string()) + " --output " + quoted((dir.path() / "out").string()) +
                  " --report " + quoted((dir.path() / "defines.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto defines = nlohmann::json::parse(testing::read_file(dir.path() / "defines.json"));
  EXPECT_EQ(defines["abi_versions_from"], "versioned names");
  EXPECT_EQ(defines["abi_version_unknown"], nlohmann::json::array());
  EXPECT_EQ(typedefs["abi_version_unknown"], nlohmann::json::array());
  const auto& a = defines["headers"][0]["functions"];
  const auto& b = typedefs["headers"][0]["functions"];
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 400u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i]["name"], b[i]["name"]);
    EXPECT_EQ(a[i]["abi_version"], b[i]["abi_version"]) << a[i]["name"];
    EXPECT_EQ(a[i]["per_thread_abi_version"], b[i]["per_thread_abi_version"]) << a[i]["name"];
    EXPECT_EQ(a[i]["proc_name"], b[i]["proc_name"]) << a[i]["name"];
  }
}

TEST(Toolkit, AbiFromDefinesMatchesCudaTypedefsOfCuda126) {
  expect_defines_match_typedefs(CUWRAP_CUDA_12_6_INCLUDE, "CUWRAP_CUDA_12_6_INCLUDE");
}

TEST(Toolkit, AbiFromDefinesMatchesCudaTypedefsOfCuda124) {
  expect_defines_match_typedefs(CUWRAP_CUDA_12_4_INCLUDE, "CUWRAP_CUDA_12_4_INCLUDE");
}

TEST(Toolkit, AbiFromDefinesMatchesCudaTypedefsOfTheConfiguredToolkit) {
  expect_defines_match_typedefs(CUWRAP_CUDA_INCLUDE_DIR, "CUWRAP_CUDA_INCLUDE_DIR");
}

// cuda.h 12.6 next to nvrtc.h and nvJitLink.h of the toolkit generated/ was generated
// from (13.0): the generator names each header's version and stops without writing
// anything.
TEST(Toolkit, MixedToolkitsAreRefusedNamingEachVersion) {
  const fs::path cuda126 = CUWRAP_CUDA_12_6_INCLUDE;
  const fs::path current = CUWRAP_CHECKED_IN_CUDA_INCLUDE;
  if (cuda126.empty() || !fs::is_regular_file(cuda126 / "cuda.h")) {
    GTEST_SKIP() << "CUDA 12.6 headers not found (CUWRAP_CUDA_12_6_INCLUDE)";
  }
  if (const std::string missing = checked_in_headers_missing(); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  ScratchDir dir;
  const fs::path mixed = dir.path() / "mixed";
  fs::create_directories(mixed);
  fs::copy_file(cuda126 / "cuda.h", mixed / "cuda.h");
  fs::copy_file(cuda126 / "cudaTypedefs.h", mixed / "cudaTypedefs.h");
  fs::copy_file(current / "nvrtc.h", mixed / "nvrtc.h");
  fs::copy_file(current / "nvJitLink.h", mixed / "nvJitLink.h");
  const auto r = run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " + quoted(mixed.string()) +
                             " --output " + quoted((dir.path() / "out").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cuda.h is CUDA 12.6 (CUDA_VERSION 12060)"), std::string::npos)
      << r.output;
  if (testing::read_file(current / "cuda.h").find("#define CUDA_VERSION 13000") !=
      std::string::npos) {
    EXPECT_NE(r.output.find("nvJitLink.h is CUDA 13.0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("nvrtc.h is CUDA 12.8 or newer"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

}  // namespace
}  // namespace cuwrap::gen
