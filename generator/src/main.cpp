// cuwrap-gen: generate cuwrap's bindings from the CUDA toolkit headers.
//
//   cuwrap-gen --cuda-include DIR --output DIR [--report FILE] [--templates DIR]
//              [--abi-from-defines] [--classification FILE]
//              [--compare OLD [--compare-markdown FILE] [--compare-json FILE]]
//
// With --compare, --output may be left out: nothing but the comparison is written.
//
// Exit status: 0 success, 1 a header does not parse or the output cannot be written,
// 2 the include directory or a header (cudaTypedefs.h too, unless --abi-from-defines)
// is missing (and for a bad command line).
#include "libraries.hpp"
#include "pipeline.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <string>

namespace {

// The templates: the source tree's (compiled in); where that is gone, those of an
// installation next to this binary (<prefix>/share/cuwrap/templates).
std::filesystem::path default_templates() {
  std::filesystem::path source_tree = CUWRAP_GEN_TEMPLATE_DIR;
  std::error_code ec;
  if (std::filesystem::is_directory(source_tree, ec)) {
    return source_tree;
  }
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto installed = exe.parent_path().parent_path() / "share" / "cuwrap" / "templates";
  return !ec && std::filesystem::is_directory(installed, ec) ? installed : source_tree;
}

}  // namespace

int main(int argc, char** argv) try {
  cuwrap::gen::Options options;
  options.templates = default_templates();
  CLI::App app{"Generate cuwrap's typed C++ bindings from cuda.h, nvrtc.h and nvJitLink.h."};
  app.add_option("--cuda-include", options.cuda_include,
                 "Directory holding cuda.h, nvrtc.h and nvJitLink.h")
      ->required();
  std::vector<std::string> extra_headers;
  app.add_option("--extra-headers", extra_headers,
                 "Directory holding headers of the table's optional libraries that the toolkit "
                 "lacks (nvml.h, nvFatbin.h, cufile.h, nvPTXCompiler.h); may be repeated")
      ->check(CLI::ExistingDirectory);
  app.add_option("--output", options.output,
                 "Directory that receives include/ and src/ (required unless --compare)");
  app.add_option("--report", options.report, "Also write the coverage report as JSON to this file");
  app.add_option("--classification", options.classification,
                 "Also write each function's classification, one line each, to this file "
                 "(generated/classification.txt is this list for the checked-in bindings)");
  auto* compare = app.add_option(
      "--compare", options.compare,
      "Compare with an old side: a JSON report of this cuwrap-gen (--report) or an include "
      "directory to read; print the counts, and the Markdown unless --compare-markdown");
  app.add_option("--compare-markdown", options.compare_markdown,
                 "Write the comparison as Markdown to this file")
      ->needs(compare);
  app.add_option("--compare-json", options.compare_json,
                 "Write the comparison as JSON to this file")
      ->needs(compare);
  app.add_option("--templates", options.templates, "Directory of the ctemplate templates")
      ->capture_default_str();
  app.add_flag("--abi-from-defines", options.abi_from_defines,
               "Without cudaTypedefs.h: take each driver entry point's ABI version from "
               "cuda.h's versioned name (cuCtxCreate_v4) and the first CUDA version "
               "cuwrap-gen knows for it; names it does not know are requested as "
               "CUDA_VERSION and listed in the report");
  app.set_version_flag("--version", std::string("cuwrap-gen ") + CUWRAP_GEN_VERSION);
  try {
    app.parse(argc, argv);
    if (options.output.empty() && options.compare.empty()) {
      throw CLI::RequiredError("--output (required unless --compare is given)");
    }
    cuwrap::gen::set_extra_header_dirs(extra_headers);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(cuwrap::gen::ExitCode::MissingInput);
  }
  return static_cast<int>(cuwrap::gen::run(options, std::cout, std::cerr));
} catch (const std::exception& e) {
  std::cerr << "cuwrap-gen: " << e.what() << '\n';
  return static_cast<int>(cuwrap::gen::ExitCode::Failure);
}
