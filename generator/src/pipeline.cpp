// The pipeline of cuwrap-gen. See pipeline.hpp.
#include "pipeline.hpp"

#include "compare.hpp"
#include "output.hpp"
#include "parse.hpp"
#include "render.hpp"
#include "report.hpp"
#include "rules.hpp"

#include <fstream>
#include <tuple>

namespace cuwrap::gen {

namespace {

// Write `text` to `path`; false when it cannot be written.
bool write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc | std::ios::binary);
  file << text;
  file.close();
  return static_cast<bool>(file);
}

Plan plan_for(const std::filesystem::path& include, const Options& options) {
  return make_plan(
      parse_headers(include, kWrappedHeaders,
                    options.abi_from_defines ? AbiSource::Defines : AbiSource::Typedefs));
}

// The old side of --compare: a report file, or the headers of an include directory.
nlohmann::json old_report(const Options& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(options.compare, ec)) {
    return report_json(plan_for(options.compare, options));
  }
  return read_report(options.compare);
}

}  // namespace

ExitCode run(const Options& options, std::ostream& out, std::ostream& err) {
  try {
    const Api api =
        parse_headers(options.cuda_include, kWrappedHeaders,
                      options.abi_from_defines ? AbiSource::Defines : AbiSource::Typedefs);
    for (const auto& omitted : api.omitted) {
      out << "cuwrap-gen: " << omitted << '\n';
    }
    const Plan plan = make_plan(api);
    if (!options.output.empty()) {
      for (const auto& stale : write_output(options.output, render(plan, options.templates))) {
        out << "cuwrap-gen: removed " << stale.generic_string()
            << " (written by an earlier run, not by this one)\n";
      }
    }
    if (options.print_coverage) {
      print_report(plan, out);
    }
    const nlohmann::json report = report_json(plan);
    for (const auto& [path, text, what] :
         {std::tuple{options.report, report.dump(2) + "\n", "report"},
          std::tuple{options.classification,
                     options.classification.empty() ? std::string() : classification_text(report),
                     "classification"}}) {
      if (!path.empty() && !write_text(path, text)) {
        err << "cuwrap-gen: cannot write " << what << " " << path.string() << '\n';
        return ExitCode::Failure;
      }
    }
    if (!options.compare.empty()) {
      const auto comparison = compare_reports(old_report(options), report, options.compare.string(),
                                              options.cuda_include.string());
      out << "cuwrap-gen: compared with " << options.compare.string() << ": "
          << comparison_summary(comparison) << '\n';
      const std::string markdown = comparison_markdown(comparison);
      if (options.compare_markdown.empty()) {
        out << '\n' << markdown;
      } else if (!write_text(options.compare_markdown, markdown)) {
        err << "cuwrap-gen: cannot write comparison " << options.compare_markdown.string() << '\n';
        return ExitCode::Failure;
      }
      if (!options.compare_json.empty() &&
          !write_text(options.compare_json, comparison.dump(2) + "\n")) {
        err << "cuwrap-gen: cannot write comparison " << options.compare_json.string() << '\n';
        return ExitCode::Failure;
      }
    }
    return ExitCode::Success;
  } catch (const ReportError& e) {
    err << "cuwrap-gen: --compare: " << e.what() << '\n';
    return e.missing() ? ExitCode::MissingInput : ExitCode::Failure;
  } catch (const MissingInput& e) {
    err << "cuwrap-gen: " << e.what() << '\n';
    return ExitCode::MissingInput;
  } catch (const ParseFailure& e) {
    err << "cuwrap-gen: the headers do not parse:\n" << e.what();
    return ExitCode::Failure;
  } catch (const std::exception& e) {
    err << "cuwrap-gen: " << e.what() << '\n';
    return ExitCode::Failure;
  }
}

}  // namespace cuwrap::gen
