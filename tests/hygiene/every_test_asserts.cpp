// every_test_asserts: fail when a GoogleTest body can pass without checking anything.
//
//   every_test_asserts PATH...
//
// Scans each PATH (a file, or a folder searched recursively for *.cpp and *.cu; folders
// named "fixtures" hold inputs of tests, not tests, and are passed over unless named
// directly) for TEST, TEST_F, TEST_P, TYPED_TEST and TYPED_TEST_P definitions. A body
// passes when it calls an assertion or always skips: an EXPECT_* or ASSERT_* macro, FAIL,
// GTEST_FAIL, ADD_FAILURE(_AT), a GTEST_SKIP that is a statement of the body itself (a skip
// under an if is a guard, not a check), or one of the project helpers in
// kAssertingHelpers that the same file defines with such a call. Every other body is
// listed as FILE:LINE: SUITE.NAME: why, and the program exits 1; it exits 0 when every
// body passes, 2 on a usage or I/O error.
//
// Comments, preprocessor lines and the contents of string and character literals (raw
// strings included) are blanked before the scan, so an assertion named in a comment or a
// string does not count and braces inside them do not unbalance a body.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// The macros that define a test: the word before '(' and a body in braces.
constexpr std::array<std::string_view, 5> kTestMacros = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST",
                                                         "TYPED_TEST_P"};

/// GoogleTest's checks that are not EXPECT_* or ASSERT_*.
constexpr std::array<std::string_view, 4> kGtestChecks = {"FAIL", "GTEST_FAIL", "ADD_FAILURE",
                                                          "ADD_FAILURE_AT"};

/// Project helpers that assert (or fail the test) themselves, so that a body whose only
/// check is a call to one of them checks something. A helper belongs here only when every
/// path through it ends in an EXPECT/ASSERT, a FAIL or a skip; a guard that may return
/// without checking anything (CUWRAP_REQUIRE_GPU and the like) does not. The list is held
/// to account: a test relying on a helper passes only when its file defines the helper
/// with a body that calls a GoogleTest check itself.
struct AssertingHelper {
  std::string_view name;
  std::string_view why;  // where it is defined and what it asserts
};
constexpr std::array kAssertingHelpers = {
    AssertingHelper{"expect_round_trip",
                    "runtime/test_memory.cpp and test_array_texture.cpp: EXPECT_EQ on the "
                    "bytes copied through device memory and read back"},
    AssertingHelper{"expect_host_written_device_read",
                    "runtime/test_memory.cpp: EXPECT/ASSERT that a kernel read and wrote the "
                    "host-accessible bytes"},
    AssertingHelper{"expect_host_buffer_span_copies",
                    "runtime/test_memory.cpp: EXPECT_EQ on host spans copied in and out"},
    AssertingHelper{"check_cross_device_copy_waits_for_event",
                    "runtime/test_multi_gpu.cpp: EXPECT_TRUE that the peer copy saw the "
                    "kernel's result (skips where peer access is impossible)"},
    AssertingHelper{"expect_at_least_as_typed",
                    "generator/test_reference.cpp: EXPECT that every function is at least as "
                    "typed as cuda.bindings"},
    AssertingHelper{"expect_defines_match_typedefs",
                    "generator/test_toolkits.cpp: EXPECT that without cudaTypedefs.h the "
                    "generator refuses, and that --abi-from-defines gives every driver entry "
                    "point the ABI version cudaTypedefs.h gives it (skips without headers)"},
    AssertingHelper{"check_one",
                    "generator/test_mutation.cpp: EXPECT that a mutated header generates "
                    "whole or fails with a location"},
    AssertingHelper{"expect_usable_and_freed",
                    "runtime/test_buffers.cpp: EXPECT that a buffer whose resource is gone "
                    "copies both ways, is freed and reports no release failure"},
    AssertingHelper{"expect_regenerates",
                    "generator/test_toolkits.cpp: EXPECT full coverage and compiling output "
                    "(skips without that toolkit's headers)"},
    AssertingHelper{"expect_documented_comparison",
                    "generator/test_toolkits.cpp: EXPECT that docs/regenerating.md's counts "
                    "and docs/comparisons/ are what cuwrap-gen --compare writes"},
    AssertingHelper{"expect_prefetched",
                    "conformance/test_managed_ops.cpp: EXPECT_EQ that a managed buffer's "
                    "last prefetch location is where it was prefetched"},
    AssertingHelper{"expect_discard_prefetched_here",
                    "conformance/test_managed_ops.cpp: EXPECT_EQ that discard-prefetch to "
                    "the device leaves it the last prefetch location"},
    AssertingHelper{"expect_batch_copies_values",
                    "conformance/test_copy_batch.cpp: EXPECT_TRUE that every destination of "
                    "a copy_batch holds its source's value"},
    AssertingHelper{"expect_all_prefetched_here",
                    "conformance/test_managed_ops.cpp: EXPECT_EQ that the device is the last "
                    "prefetch location of every buffer of a batch"},
};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

/// Return `text` with comments, preprocessor directives and the contents of string and
/// character literals replaced by spaces (newlines kept, so line numbers stay).
std::string blank_comments_and_literals(const std::string& text) {
  std::string out = text;
  const std::size_t n = text.size();
  auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < n; ++k) {
      if (out[k] != '\n') {
        out[k] = ' ';
      }
    }
  };
  bool line_start = true;  // only white space since the last newline
  std::size_t i = 0;
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      // A directive with its continuation lines. Both branches of an #if stay, so a
      // test with an #else that skips is scanned twice, once per branch.
      std::size_t end = i;
      while (end < n && !(text[end] == '\n' && text[end - 1] != '\\')) {
        ++end;
      }
      blank(i, end);
      i = end;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\r') {
      line_start = false;
    }
    if (c == '/' && i + 1 < n && (text[i + 1] == '/' || text[i + 1] == '*')) {
      const bool line_comment = text[i + 1] == '/';
      std::size_t end = text.find(line_comment ? "\n" : "*/", i + 2);
      end = end == std::string::npos ? n : end + (line_comment ? 0 : 2);
      blank(i, end);
      i = end;
      continue;
    }
    const bool raw_prefix = i == 0 || !is_ident_char(text[i - 1]) || text[i - 1] == 'u' ||
                            text[i - 1] == 'U' || text[i - 1] == 'L' || text[i - 1] == '8';
    if (c == 'R' && i + 1 < n && text[i + 1] == '"' && raw_prefix) {
      const std::size_t open = text.find('(', i + 2);
      if (open != std::string::npos) {
        const std::string close = ")" + text.substr(i + 2, open - (i + 2)) + "\"";
        std::size_t end = text.find(close, open + 1);
        end = end == std::string::npos ? n : end + close.size();
        blank(i + 2, end - 1);
        i = end;
        continue;
      }
    }
    // A ' after a (hex) digit is a digit separator (1'000), not a character literal.
    const bool quote =
        c == '"' ||
        (c == '\'' && (i == 0 || std::isxdigit(static_cast<unsigned char>(text[i - 1])) == 0));
    if (quote) {
      std::size_t k = i + 1;
      while (k < n && text[k] != c && text[k] != '\n') {
        k += text[k] == '\\' ? 2 : 1;
      }
      blank(i + 1, k);
      i = k + 1;
      continue;
    }
    ++i;
  }
  return out;
}

std::size_t line_of(const std::string& text, std::size_t pos) {
  return 1 + static_cast<std::size_t>(
                 std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

std::size_t skip_space(const std::string& code, std::size_t i) {
  while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i])) != 0) {
    ++i;
  }
  return i;
}

/// Return the index just past the bracket matching the one at `open`, or npos.
std::size_t match_bracket(const std::string& code, std::size_t open, char left, char right) {
  int depth = 0;
  for (std::size_t i = open; i < code.size(); ++i) {
    if (code[i] == left) {
      ++depth;
    } else if (code[i] == right && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

/// Call `visit(word, open)` for each identifier in code[from, to) followed by '(' (at `open`).
template <class Visit>
void for_each_call(const std::string& code, std::size_t from, std::size_t to, Visit visit) {
  for (std::size_t i = from; i < to;) {
    if (!is_ident_char(code[i]) || (i > 0 && is_ident_char(code[i - 1]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < to && is_ident_char(code[end])) {
      ++end;
    }
    const std::size_t next = skip_space(code, end);
    if (next < to && code[next] == '(') {
      visit(std::string_view(code.data() + i, end - i), next);
    }
    i = end;
  }
}

bool is_gtest_check(std::string_view word) {
  return word.starts_with("EXPECT_") || word.starts_with("ASSERT_") ||
         std::find(kGtestChecks.begin(), kGtestChecks.end(), word) != kGtestChecks.end();
}

bool is_asserting_helper(std::string_view word) {
  return std::any_of(kAssertingHelpers.begin(), kAssertingHelpers.end(),
                     [&](const AssertingHelper& h) { return h.name == word; });
}

/// What code[from, to) calls: whether a GoogleTest check, and which asserting helpers.
struct Calls {
  bool gtest_check = false;
  std::vector<std::string> helpers;
};

/// Return whether `word`, a call in the body that starts at code[from] (its '{'), is a
/// GTEST_SKIP that always runs: a statement of its own at the top level of the body. A
/// skip under an `if` or `else` is a guard: the test must still check something on the
/// path that goes on.
bool is_unconditional_skip(const std::string& code, std::size_t from, std::string_view word) {
  if (word != "GTEST_SKIP") {
    return false;
  }
  const auto at = static_cast<std::size_t>(word.data() - code.data());
  int depth = 0;
  for (std::size_t i = from; i < at; ++i) {
    depth += code[i] == '{' ? 1 : (code[i] == '}' ? -1 : 0);
  }
  std::size_t before = at;
  while (before > from && std::isspace(static_cast<unsigned char>(code[before - 1])) != 0) {
    --before;
  }
  const char previous = code[before - 1];
  return depth == 1 && (previous == '{' || previous == ';' || previous == '}');
}

Calls calls_in(const std::string& code, std::size_t from, std::size_t to) {
  Calls calls;
  for_each_call(code, from, to, [&](std::string_view word, std::size_t) {
    if (is_gtest_check(word) || is_unconditional_skip(code, from, word)) {
      calls.gtest_check = true;
    } else if (is_asserting_helper(word)) {
      calls.helpers.emplace_back(word);
    }
  });
  return calls;
}

/// Return whether `code` defines a function `name` whose body calls a GoogleTest check.
bool defines_checking_helper(const std::string& code, std::string_view name) {
  bool found = false;
  for_each_call(code, 0, code.size(), [&](std::string_view word, std::size_t open) {
    if (found || word != name) {
      return;
    }
    const std::size_t close = match_bracket(code, open, '(', ')');
    if (close == std::string::npos) {
      return;
    }
    std::size_t brace = skip_space(code, close);
    for (const std::string_view qualifier : {"const", "noexcept", "override"}) {
      if (code.compare(brace, qualifier.size(), qualifier) == 0) {
        brace = skip_space(code, brace + qualifier.size());
      }
    }
    if (brace >= code.size() || code[brace] != '{') {
      return;  // a call or a declaration
    }
    const std::size_t end = match_bracket(code, brace, '{', '}');
    found = end != std::string::npos && calls_in(code, brace, end).gtest_check;
  });
  return found;
}

struct Finding {
  std::string path;
  std::size_t line;
  std::string test;
  std::string why;
};

/// Append a finding for each test defined in `path` whose body checks nothing; return the
/// number of tests found.
std::size_t scan_file(const fs::path& path, std::vector<Finding>& findings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path.string());
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string code = blank_comments_and_literals(buffer.str());
  std::size_t tests = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (!is_ident_char(code[i]) || (i > 0 && is_ident_char(code[i - 1]))) {
      continue;
    }
    std::size_t end = i;
    while (end < code.size() && is_ident_char(code[end])) {
      ++end;
    }
    const std::string_view word(code.data() + i, end - i);
    const std::size_t open = skip_space(code, end);
    if (std::find(kTestMacros.begin(), kTestMacros.end(), word) == kTestMacros.end() ||
        open >= code.size() || code[open] != '(') {
      i = end - 1;
      continue;
    }
    const std::size_t close = match_bracket(code, open, '(', ')');
    if (close == std::string::npos) {
      break;
    }
    const std::size_t brace = skip_space(code, close);
    if (brace >= code.size() || code[brace] != '{') {
      i = close - 1;  // a mention, not a definition
      continue;
    }
    const std::size_t body_end = match_bracket(code, brace, '{', '}');
    if (body_end == std::string::npos) {
      throw std::runtime_error(path.string() + ":" + std::to_string(line_of(code, brace)) +
                               ": unbalanced braces in the body of a test");
    }
    ++tests;
    std::string name(code, open + 1, close - open - 2);
    std::erase_if(name, [](char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; });
    std::replace(name.begin(), name.end(), ',', '.');
    const Calls calls = calls_in(code, brace, body_end);
    if (!calls.gtest_check && calls.helpers.empty()) {
      findings.push_back(
          {path.string(), line_of(code, i), name,
           "the body has no EXPECT_/ASSERT_, FAIL, unconditional GTEST_SKIP or asserting helper"});
    }
    for (const std::string& helper :
         calls.gtest_check ? std::vector<std::string>{} : calls.helpers) {
      if (!defines_checking_helper(code, helper)) {
        findings.push_back({path.string(), line_of(code, i), name,
                            "its only check is " + helper +
                                "(), which this file does not define with an assertion"});
      }
    }
    i = body_end - 1;
  }
  return tests;
}

bool is_source(const fs::path& path) {
  return path.extension() == ".cpp" || path.extension() == ".cu";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr
        << "usage: every_test_asserts PATH...  (files, or folders searched for *.cpp, *.cu)\n";
    return 2;
  }
  try {
    std::vector<fs::path> files;
    for (int a = 1; a < argc; ++a) {
      const fs::path root = argv[a];
      if (fs::is_regular_file(root)) {
        files.push_back(root);
        continue;
      }
      if (!fs::is_directory(root)) {
        std::cerr << "every_test_asserts: " << root.string() << " is neither a file nor a folder\n";
        return 2;
      }
      for (auto it = fs::recursive_directory_iterator(root);
           it != fs::recursive_directory_iterator(); ++it) {
        if (it->is_directory() && it->path().filename() == "fixtures") {
          it.disable_recursion_pending();
        } else if (it->is_regular_file() && is_source(it->path())) {
          files.push_back(it->path());
        }
      }
    }
    std::sort(files.begin(), files.end());
    std::vector<Finding> findings;
    std::size_t tests = 0;
    for (const fs::path& file : files) {
      tests += scan_file(file, findings);
    }
    for (const Finding& f : findings) {
      std::cout << f.path << ":" << f.line << ": " << f.test << ": " << f.why << "\n";
    }
    std::cout << "every_test_asserts: " << tests << " tests in " << files.size() << " files, "
              << findings.size() << " without an assertion\n";
    return findings.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "every_test_asserts: " << e.what() << "\n";
    return 2;
  }
}
