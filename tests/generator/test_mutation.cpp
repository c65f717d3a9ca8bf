// Robustness of cuwrap-gen: mutated header text (truncated declarations, unknown types,
// unbalanced macros and braces, empty files, binary garbage) run through the whole
// pipeline in process. Every input must end in a clean result (the output directory
// whole, with every generated file) or an error that points at file:line:col, and an
// error must leave no output directory behind. Never a crash: under ASan (scripts/
// sanitize.sh) memory errors in the generator fail this test. The inputs come from a
// fixed seed, so a failure names an input that can be reproduced.
#include "pipeline.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cuwrap::gen::ExitCode;
using cuwrap::gen::testing::read_file;
using cuwrap::gen::testing::ScratchDir;

constexpr const char* kHeaders[] = {"cuda.h", "nvrtc.h", "nvJitLink.h"};

// The files every successful run writes (a subset: enough to see a whole directory).
constexpr const char* kExpectedOutputs[] = {"include/cuwrap/driver.hpp", "include/cuwrap/nvrtc.hpp",
                                            "include/cuwrap/nvjitlink.hpp",
                                            "include/cuwrap/detail/symbols.hpp", "src/driver.cpp"};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) {
    text += line;
    text += '\n';
  }
  return text;
}

// One way of breaking header text; `rng` picks where.
class Mutator {
 public:
  explicit Mutator(unsigned seed) : rng_(seed) {}

  // Return `text` broken by mutation `kind` (0..kKinds-1), with a description.
  std::string mutate(const std::string& text, int kind, std::string& what) {
    std::vector<std::string> lines = lines_of(text);
    const std::size_t at = lines.empty() ? 0 : pick(lines.size());
    switch (kind) {
      case 0: {  // cut anywhere, often inside a declaration
        const std::size_t cut = pick(text.size() + 1);
        what = "truncated at byte " + std::to_string(cut);
        return text.substr(0, cut);
      }
      case 1: {  // cut right after an opening parenthesis: a declaration never closed
        std::vector<std::size_t> opens;
        for (std::size_t i = 0; i < text.size(); ++i) {
          if (text[i] == '(') {
            opens.push_back(i);
          }
        }
        const std::size_t cut = opens.empty() ? text.size() : opens[pick(opens.size())] + 1;
        what = "cut after '(' at byte " + std::to_string(cut);
        return text.substr(0, cut);
      }
      case 2: {  // a type nobody declared
        static const std::regex type(
            R"(\b(CU\w+|size_t|int|unsigned int|nvrtc\w+|nvJitLink\w+)\b)");
        std::vector<std::smatch> hits;
        for (auto it = std::sregex_iterator(text.begin(), text.end(), type);
             it != std::sregex_iterator(); ++it) {
          hits.push_back(*it);
        }
        if (hits.empty()) {
          what = "no type to replace";
          return text;
        }
        const std::smatch& hit = hits[pick(hits.size())];
        what = "type " + hit.str() + " at byte " + std::to_string(hit.position()) + " made unknown";
        return text.substr(0, static_cast<std::size_t>(hit.position())) + "cuwrapUnknownType_t" +
               text.substr(static_cast<std::size_t>(hit.position() + hit.length()));
      }
      case 3: {  // unbalanced preprocessor conditionals and macros
        static const char* const kInserts[] = {"#if 1",
                                               "#endif",
                                               "#ifdef __cplusplus",
                                               "#else",
                                               "#define CUWRAP_BROKEN(",
                                               "#define cuInit(",
                                               "#elif",
                                               "#if",
                                               "#include \"missing_header.h\""};
        const char* insert = kInserts[pick(std::size(kInserts))];
        what = std::string("inserted '") + insert + "' before line " + std::to_string(at + 1);
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), insert);
        return join(lines);
      }
      case 4: {  // stray punctuation
        static const char* const kInserts[] = {
            "{", "}", ")", "(", ";", "extern \"C\" {", "typedef", "/*", "\"", "CUresult CUDAAPI"};
        const char* insert = kInserts[pick(std::size(kInserts))];
        what = std::string("inserted '") + insert + "' before line " + std::to_string(at + 1);
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), insert);
        return join(lines);
      }
      case 5: {  // a line lost or doubled
        if (lines.empty()) {
          what = "empty";
          return text;
        }
        if (pick(2) == 0) {
          what = "deleted line " + std::to_string(at + 1);
          lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
        } else {
          what = "doubled line " + std::to_string(at + 1);
          lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), lines[at]);
        }
        return join(lines);
      }
      case 6:
        what = "empty file";
        return std::string();
      default: {  // binary garbage, NULs included, spliced in or instead
        std::string garbage(16 + pick(512), '\0');
        for (auto& c : garbage) {
          c = static_cast<char>(pick(256));
        }
        const std::size_t pos = pick(text.size() + 1);
        what = "garbage of " + std::to_string(garbage.size()) + " bytes at byte " +
               std::to_string(pos);
        return pick(4) == 0 ? garbage : text.substr(0, pos) + garbage + text.substr(pos);
      }
    }
  }

  static constexpr int kKinds = 8;

  std::size_t pick(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

 private:
  std::mt19937 rng_;
};

struct Outcome {
  int clean = 0;
  int errors = 0;
  int outside_headers = 0;  ///< errors located only in the generator's own input file
};

// Run the pipeline on `headers` (file → text) and check the outcome.
void check_one(const ScratchDir& scratch, int index,
               const std::vector<std::pair<std::string, std::string>>& headers,
               const std::string& what, Outcome& outcome) {
  const fs::path in = scratch.path() / ("in" + std::to_string(index));
  fs::create_directories(in);
  for (const auto& [name, text] : headers) {
    std::ofstream(in / name, std::ios::binary) << text;
  }
  cuwrap::gen::Options options;
  options.cuda_include = in;
  options.output = scratch.path() / ("out" + std::to_string(index));
  options.templates = CUWRAP_GEN_TEMPLATE_DIR;
  options.print_coverage = false;
  // Mutated headers have no matching cudaTypedefs.h: the versions come from the names.
  options.abi_from_defines = true;
  std::ostringstream out;
  std::ostringstream err;
  const ExitCode code = cuwrap::gen::run(options, out, err);
  if (code == ExitCode::Success) {
    ++outcome.clean;
    for (const char* file : kExpectedOutputs) {
      EXPECT_TRUE(fs::is_regular_file(options.output / file))
          << "input " << index << " (" << what << "): a clean run without " << file;
    }
  } else {
    ++outcome.errors;
    // Usually a header's line; an unbalanced #else or brace may be reported where the
    // generator's own translation unit (cuwrap-gen-input.cpp) ends instead.
    static const std::regex location(R"([\w./+-]+\.(h|cpp):[0-9]+:[0-9]+: )");
    static const std::regex header_location(R"([\w./+-]+\.h:[0-9]+:[0-9]+: )");
    EXPECT_TRUE(std::regex_search(err.str(), location))
        << "input " << index << " (" << what << "): an error without file:line:col:\n"
        << err.str();
    if (!std::regex_search(err.str(), header_location)) {
      ++outcome.outside_headers;
    }
    EXPECT_FALSE(fs::exists(options.output))
        << "input " << index << " (" << what << "): a failed run left " << options.output;
  }
  // Nothing is left next to the output either (the generator's staging directories).
  for (const auto& entry : fs::directory_iterator(scratch.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".cuwrap-gen-"), std::string::npos)
        << "input " << index << " (" << what << "): staging left behind: " << entry.path();
  }
  fs::remove_all(in);
  fs::remove_all(options.output);
}

std::vector<std::pair<std::string, std::string>> fixture_headers() {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const char* name : kHeaders) {
    headers.emplace_back(name, read_file(fs::path(CUWRAP_FIXTURES_DIR) / "basic" / name));
  }
  return headers;
}

TEST(Mutation, BrokenFixtureHeadersFailWithALocationOrGenerateWhole) {
  constexpr int kInputs = 320;
  constexpr auto kBudget = std::chrono::seconds(40);
  const auto start = std::chrono::steady_clock::now();
  const auto base = fixture_headers();
  ASSERT_FALSE(base[0].second.empty()) << "fixture headers not found in " << CUWRAP_FIXTURES_DIR;
  ScratchDir scratch;
  Mutator mutator(20240607);
  Outcome outcome;
  int tried = 0;
  for (; tried < kInputs && std::chrono::steady_clock::now() - start < kBudget; ++tried) {
    auto headers = base;
    // Mostly cuda.h (the largest, most varied); now and then the other two.
    const std::size_t file = mutator.pick(4) == 0 ? 1 + mutator.pick(2) : 0;
    std::string what;
    headers[file].second = mutator.mutate(headers[file].second, tried % Mutator::kKinds, what);
    check_one(scratch, tried, headers, headers[file].first + ": " + what, outcome);
    if (HasFailure()) {
      break;
    }
  }
  std::cout << "mutation: " << tried << " inputs, " << outcome.clean << " clean, " << outcome.errors
            << " errors (" << outcome.outside_headers << " located outside the headers)\n";
  EXPECT_GE(tried, 100) << "too few inputs in the time budget";
  EXPECT_GT(outcome.errors, 0);
  EXPECT_GT(outcome.clean, 0) << "some mutations (a doubled blank line) must still generate";
}

// Excerpts of the real cuda.h: cut at random places, so that libclang meets real
// declarations, macros and documentation broken off mid-way.
TEST(Mutation, TruncatedRealCudaHeaderFailsWithALocationOrGeneratesWhole) {
  const std::string cuda = read_file(fs::path(CUWRAP_CUDA_INCLUDE_DIR) / "cuda.h");
  if (cuda.empty()) {
    GTEST_SKIP() << "no cuda.h in " << CUWRAP_CUDA_INCLUDE_DIR;
  }
  auto headers = fixture_headers();
  ScratchDir scratch;
  Mutator mutator(7);
  Outcome outcome;
  constexpr int kInputs = 12;
  for (int i = 0; i < kInputs; ++i) {
    std::string what;
    headers[0].second = mutator.mutate(cuda, i % 2, what);  // truncations only
    check_one(scratch, i, headers, "real cuda.h " + what, outcome);
  }
  std::cout << "mutation: " << kInputs << " real-header inputs, " << outcome.clean << " clean, "
            << outcome.errors << " errors\n";
}

}  // namespace
