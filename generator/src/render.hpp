// Stage 3: binding plan → the text of the generated files, through the ctemplate
// templates in templates/ (what a wrapper looks like is written there, not here).
#pragma once

#include "rules.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap::gen {

/// One generated file: its path relative to the output directory, and its text.
struct OutputFile {
  std::string path;  ///< e.g. "include/cuwrap/driver.hpp"
  std::string text;
};

/// Thrown when a template is missing or does not expand.
class RenderFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Render every generated file of `plan` with the templates in `template_dir`.
/// \throws RenderFailure when a template cannot be loaded or expanded.
std::vector<OutputFile> render(const Plan& plan, const std::filesystem::path& template_dir);

}  // namespace cuwrap::gen
