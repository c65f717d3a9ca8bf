// compile_ptx through the generated nvPTXCompiler layer, or the loader's error in a build
// without it.
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/ptx_compiler.hpp>

#if CUWRAP_HAS_NVPTXCOMPILER
#include <cuwrap/nvptxcompiler.hpp>
#include <cuwrap/unique_handle.hpp>
#endif

#include <stdexcept>

namespace cuwrap {
namespace detail {

void check_ptx_compiler_input(std::string_view ptx, const PtxCompilerOptions& options) {
  if (ptx.empty()) {
    throw std::invalid_argument("compile_ptx: the PTX is empty");
  }
  if (options.arch) {
    static_cast<void>(normalize_arch(*options.arch, "PtxCompilerOptions::arch"));
  }
  if (options.optimization_level &&
      (*options.optimization_level < 0 || *options.optimization_level > 3)) {
    throw std::invalid_argument("PtxCompilerOptions::optimization_level is " +
                                std::to_string(*options.optimization_level) +
                                "; ptxas takes 0 to 3");
  }
  if (options.max_register_count && *options.max_register_count < 1) {
    throw std::invalid_argument("PtxCompilerOptions::max_register_count is " +
                                std::to_string(*options.max_register_count) +
                                "; it must be at least 1");
  }
}

std::vector<std::string> ptx_compiler_arguments(const PtxCompilerOptions& options,
                                                const std::string& arch) {
  std::vector<std::string> arguments{"--gpu-name=" +
                                     normalize_arch(arch, "PtxCompilerOptions::arch")};
  if (options.optimization_level) {
    arguments.push_back("--opt-level=" + std::to_string(*options.optimization_level));
  }
  if (options.debug) {
    arguments.emplace_back("--device-debug");
  }
  if (options.lineinfo) {
    arguments.emplace_back("--generate-line-info");
  }
  if (options.verbose) {
    arguments.emplace_back("--verbose");
  }
  if (options.max_register_count) {
    arguments.push_back("--maxrregcount=" + std::to_string(*options.max_register_count));
  }
  arguments.insert(arguments.end(), options.extra_options.begin(), options.extra_options.end());
  return arguments;
}

}  // namespace detail

#if CUWRAP_HAS_NVPTXCOMPILER
namespace {
struct DestroyCompiler {
  static void release(nvPTXCompilerHandle handle) noexcept {
    static_cast<void>(nvptxcompiler::raw::nvPTXCompilerDestroy(&handle));
  }
};
}  // namespace
#endif

std::vector<std::byte> compile_ptx(std::string_view ptx, const PtxCompilerOptions& options) {
  detail::check_ptx_compiler_input(ptx, options);
#if CUWRAP_HAS_NVPTXCOMPILER
  namespace ptxc = nvptxcompiler;
  const std::vector<std::string> arguments = detail::ptx_compiler_arguments(
      options, detail::resolve_arch(options.arch, "PtxCompilerOptions::arch"));
  // Destroyed on every path (unique_handle; a failure to destroy is not thrown).
  const detail::unique_handle<nvPTXCompilerHandle, DestroyCompiler> handle(
      ptxc::nvPTXCompilerCreate(ptx.size(), ptx.data()));
  std::vector<const char*> argv;
  argv.reserve(arguments.size());
  for (const auto& argument : arguments) {
    argv.push_back(argument.c_str());
  }
  ptxc::nvPTXCompilerCompile(handle.get(), argv);  // an NvPtxCompilerError carries the error log
  std::vector<std::byte> image(ptxc::nvPTXCompilerGetCompiledProgramSize(handle.get()));
  ptxc::nvPTXCompilerGetCompiledProgram(handle.get(), image.data());
  return image;
#else
  // The loader's error: "cuwrap was built without nvPTXCompiler (configure with ...)".
  detail::resolve_entry(detail::Library::NvPtxCompiler, 0, false);
  throw LoadError(detail::library_path(detail::Library::NvPtxCompiler), "",
                  "cuwrap was built without nvPTXCompiler");
#endif
}

}  // namespace cuwrap
