// The pipeline of cuwrap-gen. See pipeline.hpp.
#include "pipeline.hpp"

#include "output.hpp"
#include "parse.hpp"
#include "render.hpp"
#include "report.hpp"
#include "rules.hpp"

#include <fstream>

namespace cuwrap::gen {

ExitCode run(const Options& options, std::ostream& out, std::ostream& err) {
  try {
    const Api api =
        parse_headers(options.cuda_include, kWrappedHeaders,
                      options.abi_from_defines ? AbiSource::Defines : AbiSource::Typedefs);
    for (const auto& omitted : api.omitted) {
      out << "cuwrap-gen: " << omitted << '\n';
    }
    const Plan plan = make_plan(api);
    for (const auto& stale : write_output(options.output, render(plan, options.templates))) {
      out << "cuwrap-gen: removed " << stale.generic_string()
          << " (written by an earlier run, not by this one)\n";
    }
    if (options.print_coverage) {
      print_report(plan, out);
    }
    if (!options.report.empty()) {
      std::ofstream report(options.report, std::ios::trunc);
      report << report_json(plan).dump(2) << '\n';
      report.close();
      if (!report) {
        err << "cuwrap-gen: cannot write report " << options.report.string() << '\n';
        return ExitCode::Failure;
      }
    }
    return ExitCode::Success;
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
