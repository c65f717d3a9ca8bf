// Stage 5: the coverage report — what got a typed form, what only the raw form, why.
#pragma once

#include "rules.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

namespace cuwrap::gen {

/// The version of the JSON report's format (its "format_version"). Raised whenever a
/// field changes meaning or goes away, so that --compare never misreads an old report.
inline constexpr int kReportFormatVersion = 2;

/// Per-header counts of the coverage report.
struct Coverage {
  std::string header;
  std::size_t declared = 0;  ///< functions declared by the header (all get the raw form)
  std::size_t typed = 0;     ///< functions that also have a typed form
  /// functions that return no status (nvrtcGetErrorString): the typed namespace
  /// repeats the C signature, which is not a typed form
  std::size_t pass_through = 0;
  std::size_t raw_only = 0;  ///< functions the rules could give no typed form
};

/// Return the coverage of each library of `plan`, in plan order.
std::vector<Coverage> coverage(const Plan& plan);

/// Print the human-readable report: per header the counts, then each raw-only
/// function with its reason, and, for cuda.h, where the ABI versions came from when
/// not from cudaTypedefs.h and each function whose ABI version nothing knew.
void print_report(const Plan& plan, std::ostream& out);

/// Return the report as JSON: its "format_version" (kReportFormatVersion), where the
/// ABI versions came from ("abi_versions_from"), the functions whose ABI nothing knew
/// ("abi_version_unknown"), the functions whose classification the documentation
/// decided ("to_review"), the attribute lists, per header the counts, the enums with
/// their enumerators and one entry per function (C name and parameters, symbols, ABI
/// versions and, for the driver, where each came from ("abi_source": "cudaTypedefs.h
/// PFN_cuCtxCreate_v12050" or "define cuCtxCreate -> cuCtxCreate_v4"), inputs, outputs,
/// shape, raw-only reason, second form).
nlohmann::json report_json(const Plan& plan);

/// Return the classification of one function entry of a JSON report on one line:
/// `shape in(name: type, ...) out(name: type, ...)`, then `; second <shape>
/// in(...) out(...)` with each parameter's role, or `raw-only (reason)`.
std::string classification_line(const nlohmann::json& function);

/// Return the classification list of a JSON report: a comment header, then one line
/// per function, `<header> <name>: <classification_line>`. The checked-in list
/// (generated/classification.txt) is compared with it by the tests.
std::string classification_text(const nlohmann::json& report);

}  // namespace cuwrap::gen
