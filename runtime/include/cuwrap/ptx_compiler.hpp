// compile_ptx: PTX to a cubin in the process, through nvPTXCompiler (the toolkit's
// libnvptxcompiler_static.a, linked into cuwrap with -DCUWRAP_WITH_NVPTXCOMPILER=ON).
//
// Declared in every build: where the build has no nvPTXCompiler (CUWRAP_HAS_NVPTXCOMPILER
// is 0, the default) it throws a LoadError saying how to build with it.
// docs/nvptxcompiler.md says more.
#pragma once

#include <cuwrap/error.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuwrap {

/// What compile_ptx passes to nvPTXCompiler (ptxas's options, each field's spelling in
/// its comment). Shaped as LinkerOptions: unset fields pass nothing.
struct PtxCompilerOptions {
  std::optional<std::string> arch{};         ///< `--gpu-name=sm_90`; default: the current device
  std::optional<int> optimization_level{};   ///< `--opt-level=N`, 0..3
  bool debug = false;                        ///< `--device-debug`
  bool lineinfo = false;                     ///< `--generate-line-info`
  bool verbose = false;                      ///< `--verbose` (the info log)
  std::optional<int> max_register_count{};   ///< `--maxrregcount=N`, N > 0
  std::vector<std::string> extra_options{};  ///< passed through verbatim
};

/// Compile the PTX program `ptx` to a cubin with nvPTXCompiler.
///
/// \param ptx the PTX text (`.version`, `.target sm_XX`, ... and its entries).
/// \param options the target and ptxas settings (PtxCompilerOptions).
/// \return the cubin's bytes (an ELF image, loadable by ObjectCode::from_cubin).
/// \throws std::invalid_argument for an empty `ptx`, a malformed `arch`, an
///         `optimization_level` outside 0..3 or a `max_register_count` below 1, before
///         anything else; and when `arch` is unset and no CUDA device is available.
/// \throws LoadError when cuwrap was built without nvPTXCompiler (the default build).
/// \throws NvPtxCompilerError when nvPTXCompiler fails; its log() holds the error log.
///
/// Example:
/// \code
///   const std::vector<std::byte> cubin =
///       cuwrap::compile_ptx(ptx_text, {.arch = "sm_90", .optimization_level = 3});
/// \endcode
std::vector<std::byte> compile_ptx(std::string_view ptx, const PtxCompilerOptions& options = {});

namespace detail {
/// The option strings compile_ptx passes for `options`, the architecture resolved to
/// `arch` (validation as compile_ptx's; exposed for tests).
std::vector<std::string> ptx_compiler_arguments(const PtxCompilerOptions& options,
                                                const std::string& arch);
/// compile_ptx's checks of `ptx` and `options` (std::invalid_argument naming the field).
void check_ptx_compiler_input(std::string_view ptx, const PtxCompilerOptions& options);
}  // namespace detail

}  // namespace cuwrap
