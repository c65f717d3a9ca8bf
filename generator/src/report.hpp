// Stage 5: the coverage report — what got a typed form, what only the raw form, why.
#pragma once

#include "rules.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

namespace cuwrap::gen {

/// Per-header counts of the coverage report.
struct Coverage {
  std::string header;
  std::size_t declared = 0;  ///< functions declared by the header (all get the raw form)
  std::size_t typed = 0;     ///< functions that also have the typed form
  std::size_t raw_only = 0;  ///< functions with only the raw form
};

/// Return the coverage of each library of `plan`, in plan order.
std::vector<Coverage> coverage(const Plan& plan);

/// Print the human-readable report: per header the counts, then each raw-only
/// function with its reason, and, for cuda.h, where the ABI versions came from when
/// not from cudaTypedefs.h and each function whose ABI version nothing knew.
void print_report(const Plan& plan, std::ostream& out);

/// Return the report as JSON: where the ABI versions came from ("abi_versions_from"),
/// the functions whose ABI nothing knew ("abi_version_unknown"), per header the counts
/// and one entry per function (C name, symbols, ABI versions, inputs, outputs, shape,
/// raw-only reason).
nlohmann::json report_json(const Plan& plan);

}  // namespace cuwrap::gen
