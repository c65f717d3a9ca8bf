// Stage 6: compare two coverage reports (an old toolkit or an old run against this one),
// for a person reviewing a regeneration: functions added and removed, C signatures,
// typed forms and ABI versions that changed, enums and enumerators added or removed,
// attributes whose value type changed, what fell to raw-only and why, and the changed
// functions whose classification the documentation decided.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace cuwrap::gen {

/// Thrown when a report file cannot be used: missing, not JSON, not a report, or of
/// another format version. The message names the path (and both versions).
class ReportError : public std::runtime_error {
 public:
  ReportError(const std::string& what, bool missing)
      : std::runtime_error(what), missing_(missing) {}
  /// Whether the file does not exist (the command line's exit status 2).
  bool missing() const { return missing_; }

 private:
  bool missing_;
};

/// Check that `report` is a report of this cuwrap-gen's format (kReportFormatVersion);
/// `source` names it in the message.
/// \throws ReportError naming `source`, its format version and this one's.
void check_report(const nlohmann::json& report, const std::string& source);

/// Read and check the JSON report at `path`.
/// \throws ReportError naming `path`: missing, unreadable, not JSON, or another format.
nlohmann::json read_report(const std::filesystem::path& path);

/// Compare `old_report` with `new_report` (both checked with check_report). The result
/// has "format_version", "old" and "new" ({"cuda_version", "source"}, the sources
/// named by `old_source` and `new_source`), "summary" (the counts) and one list per
/// kind of change (see docs/regenerating.md).
nlohmann::json compare_reports(const nlohmann::json& old_report, const nlohmann::json& new_report,
                               const std::string& old_source, const std::string& new_source);

/// Return the comparison as Markdown: a title naming the two CUDA versions, the table
/// of counts, one section per kind of change that has entries. (The sources are in the
/// JSON only, so that the Markdown of the same headers is the same on every machine.)
std::string comparison_markdown(const nlohmann::json& comparison);

/// Return the counts on one line: "CUDA 12.6 → CUDA 13.0: 14 functions added, ...".
std::string comparison_summary(const nlohmann::json& comparison);

}  // namespace cuwrap::gen
