// nvrtcCreateProgram with {name, source} pairs (<cuwrap/nvrtc_program_headers.hpp>):
// split into the two arrays the C function takes.
#include <cuwrap/nvrtc.hpp>
#include <cuwrap/nvrtc_program_headers.hpp>

#include <vector>

namespace cuwrap::nvrtc {

nvrtcProgram nvrtcCreateProgram(const char* src, const char* name,
                                std::span<const ProgramHeader> headers) {
  std::vector<const char*> sources;
  std::vector<const char*> names;
  sources.reserve(headers.size());
  names.reserve(headers.size());
  for (const ProgramHeader& header : headers) {
    sources.push_back(header.source);
    names.push_back(header.name);
  }
  return nvrtcCreateProgram(src, name, std::span<const char* const>(sources),
                            std::span<const char* const>(names));
}

}  // namespace cuwrap::nvrtc
