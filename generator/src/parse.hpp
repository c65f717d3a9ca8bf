// Stage 1: read the CUDA headers with libclang into the API model (model.hpp).
//
// This is the only part of cuwrap-gen that knows libclang.
#pragma once

#include "libraries.hpp"
#include "model.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap::gen {

/// The headers cuwrap-gen wraps, in the order they are read and reported: the headers of
/// libraries.hpp's table.
inline const std::vector<std::string> kWrappedHeaders = wrapped_headers();

/// Thrown when the headers come from different toolkits (cuda.h 12.6 next to
/// nvrtc.h 13.0); what() names each header's version and how it was found.
class MixedToolkits : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
/// defined to learn which functions have per-thread-default-stream variants. Its
/// functions' ABI versions come from `abi_source`: cudaTypedefs.h beside it, or (only
/// when asked) the versioned names and known_abi.hpp's table.
/// Each header is looked for in its table row's include directories (nvvm.h also in
/// `include_dir`/../nvvm/include). \throws MissingInput when the directory or a header
///         is missing (an optional header of the table may be missing: it is left out of
///         the model and named in Api::omitted), or
///         cudaTypedefs.h when `abi_source` is AbiSource::Typedefs and cuda.h is listed.
/// \throws ParseFailure when libclang reports errors.
/// \throws MixedToolkits when the headers' versions disagree.
Api parse_headers(const std::filesystem::path& include_dir,
                  const std::vector<std::string>& headers = kWrappedHeaders,
                  AbiSource abi_source = AbiSource::Typedefs);

/// Check that the headers of `api` come from one toolkit; `nvrtc_text` is nvrtc.h's
/// text ("" when not read). cuda.h has CUDA_VERSION; nvJitLink.h names its version in
/// its symbols (`__nvJitLinkCreate_13_0`); nvrtc.h has no version macro, so its range
/// comes from functions whose first or last toolkit is known and from its own
/// "(CUDA 12.8+)" notes. \throws MixedToolkits naming each header's version.
void check_one_toolkit(const Api& api, const std::string& nvrtc_text);

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
