// The whole run of cuwrap-gen — parse, plan, render, write, report — with its exit
// codes, callable in-process (main.cpp, the benchmark, tests).
#pragma once

#include <filesystem>
#include <ostream>

namespace cuwrap::gen {

/// What one run reads and writes.
struct Options {
  std::filesystem::path cuda_include;  ///< directory holding cuda.h, nvrtc.h, nvJitLink.h
  std::filesystem::path output;        ///< receives include/ and src/; empty: nothing written
  std::filesystem::path report;        ///< JSON report; empty for none
  /// The classification list (one line per function, classification_text); empty for none
  std::filesystem::path classification;
  /// The old side of a comparison: a JSON report of this format, or an include directory
  /// to parse; empty for no comparison
  std::filesystem::path compare;
  std::filesystem::path compare_markdown;  ///< the comparison as Markdown; empty: to `out`
  std::filesystem::path compare_json;      ///< the comparison as JSON; empty for none
  std::filesystem::path templates;         ///< the ctemplate templates
  bool print_coverage = true;              ///< print the coverage report to `out`
  /// Take the driver ABI versions from cuda.h's versioned names instead of
  /// cudaTypedefs.h (--abi-from-defines); without it a missing cudaTypedefs.h is an error.
  bool abi_from_defines = false;
};

/// Exit codes of cuwrap-gen.
enum class ExitCode : int {
  Success = 0,
  Failure = 1,       ///< a header does not parse, a template fails, output not writable
  MissingInput = 2,  ///< the include directory, a header or the --compare report is missing
                     ///< (or a bad command line)
};

/// Run cuwrap-gen; print the report to `out` and problems to `err`. Never throws.
ExitCode run(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace cuwrap::gen
