// nvrtcCreateProgram with a program's headers as one list of {name, source} pairs, beside
// the generated forms of <cuwrap/nvrtc.hpp> (which includes this header): the C function
// and its span form take the names and the sources as two arrays that must be as long as
// each other, a mismatch found only at run time; a list of pairs cannot have one.
#pragma once

#include <nvrtc.h>

#include <initializer_list>
#include <span>

namespace cuwrap::nvrtc {

/// One header of a program: the name the source includes it by, and its text.
struct ProgramHeader {
  const char* name;    ///< the name the source includes it by: "vec.h"
  const char* source;  ///< the header's text
};

/// \brief Creates a program with its headers given as {name, source} pairs.
///
/// Typed form of nvrtcCreateProgram: `headers` in place of its two arrays (and their
/// count); throws NvrtcError unless NVRTC answers NVRTC_SUCCESS.
// NOLINTNEXTLINE(readability-identifier-naming): the C API's name, as the generated forms
nvrtcProgram nvrtcCreateProgram(const char* src, const char* name,
                                std::span<const ProgramHeader> headers);

/// \brief Creates a program with its headers given as a braced list of {name, source}.
// NOLINTNEXTLINE(readability-identifier-naming): the C API's name
inline nvrtcProgram nvrtcCreateProgram(const char* src, const char* name,
                                       std::initializer_list<ProgramHeader> headers) {
  return nvrtcCreateProgram(src, name,
                            std::span<const ProgramHeader>(headers.begin(), headers.size()));
}

}  // namespace cuwrap::nvrtc
