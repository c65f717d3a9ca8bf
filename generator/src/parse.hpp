// Stage 1: read the CUDA headers with libclang into the API model (model.hpp).
//
// This is the only part of cuwrap-gen that knows libclang.
#pragma once

#include "model.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap::gen {

/// The headers cuwrap-gen wraps, in the order they are read and reported.
inline const std::vector<std::string> kWrappedHeaders = {"cuda.h", "nvrtc.h", "nvJitLink.h"};

/// Thrown when the include directory or one of the headers does not exist.
class MissingInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown when a header does not parse; what() holds libclang's diagnostics, one
/// `file:line:col: message` per line.
class ParseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parse `headers` (file names inside `include_dir`) into the API model.
///
/// cuda.h, when listed, is read a second time with CUDA_API_PER_THREAD_DEFAULT_STREAM
/// defined to learn which functions have per-thread-default-stream variants.
/// \throws MissingInput when the directory or a header is missing.
/// \throws ParseFailure when libclang reports errors.
Api parse_headers(const std::filesystem::path& include_dir,
                  const std::vector<std::string>& headers = kWrappedHeaders);

/// Split a Doxygen comment into its brief and `\param` texts (exposed for tests).
struct DocComment {
  std::string brief;
  struct ParamDoc {
    std::string name;
    std::string direction;  ///< "in", "out", "in,out" or ""
    std::string text;
  };
  std::vector<ParamDoc> params;
};

/// Parse the raw text of a `/** ... */` comment.
DocComment parse_doc_comment(const std::string& raw);

}  // namespace cuwrap::gen
