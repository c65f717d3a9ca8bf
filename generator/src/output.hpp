// Stage 4: put the rendered files into the output directory, all or nothing.
#pragma once

#include "render.hpp"

#include <filesystem>
#include <stdexcept>
#include <vector>

namespace cuwrap::gen {

/// Thrown when the output directory cannot be written; nothing in it was changed.
class OutputFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Write `files` under `output` (created if missing), replacing files of the same name.
///
/// Everything is first written into a temporary directory next to `output`; only
/// when all of it is on disk are the files renamed into place, so a failure never
/// leaves half-written bindings. Other files already in `output` are left alone, and so
/// are files whose content is unchanged (their timestamps too, so nothing rebuilds).
/// \throws OutputFailure naming the directory and the reason.
void write_output(const std::filesystem::path& output, const std::vector<OutputFile>& files);

}  // namespace cuwrap::gen
