// compile_ptx: PTX to a cubin in the process, through nvPTXCompiler (the toolkit's
// libnvptxcompiler_static.a, linked into cuwrap with -DCUWRAP_WITH_NVPTXCOMPILER=ON).
//
// Declared in every build: where the build has no nvPTXCompiler (CUWRAP_HAS_NVPTXCOMPILER
// is 0, the default) it throws a LoadError saying how to build with it.
// docs/nvptxcompiler.md says more.
#pragma once

#include <cuwrap/error.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuwrap {

/// Compile the PTX program `ptx` to a cubin with nvPTXCompiler.
///
/// \param ptx the PTX text (`.version`, `.target sm_XX`, ... and its entries).
/// \param options ptxas options, e.g. `--gpu-name=sm_90`, `-O3`, `--verbose`.
/// \return the cubin's bytes (an ELF image, loadable by ObjectCode::from_cubin).
/// \throws NvPtxCompilerError when nvPTXCompiler fails; its log() holds the error log.
/// \throws LoadError when cuwrap was built without nvPTXCompiler (the default build).
///
/// Example:
/// \code
///   const std::vector<std::string> options{"--gpu-name=sm_90"};
///   const std::vector<std::byte> cubin = cuwrap::compile_ptx(ptx_text, options);
/// \endcode
std::vector<std::byte> compile_ptx(std::string_view ptx, std::span<const std::string> options = {});

}  // namespace cuwrap
