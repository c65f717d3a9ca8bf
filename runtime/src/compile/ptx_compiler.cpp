// compile_ptx through the generated nvPTXCompiler layer, or the loader's error in a build
// without it.
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/ptx_compiler.hpp>

#if CUWRAP_HAS_NVPTXCOMPILER
#include <cuwrap/nvptxcompiler.hpp>
#endif

namespace cuwrap {

std::vector<std::byte> compile_ptx(std::string_view ptx, std::span<const std::string> options) {
#if CUWRAP_HAS_NVPTXCOMPILER
  namespace ptxc = nvptxcompiler;
  nvPTXCompilerHandle handle = ptxc::nvPTXCompilerCreate(ptx.size(), ptx.data());
  // Destroyed on every path; a destructor never throws, so the status is ignored.
  struct Destroy {
    nvPTXCompilerHandle& handle;
    ~Destroy() { static_cast<void>(ptxc::raw::nvPTXCompilerDestroy(&handle)); }
  } destroy{handle};
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  ptxc::nvPTXCompilerCompile(handle, argv);  // an NvPtxCompilerError carries the error log
  std::vector<std::byte> image(ptxc::nvPTXCompilerGetCompiledProgramSize(handle));
  ptxc::nvPTXCompilerGetCompiledProgram(handle, image.data());
  return image;
#else
  static_cast<void>(ptx);
  static_cast<void>(options);
  // The loader's error: "cuwrap was built without nvPTXCompiler (configure with ...)".
  detail::resolve_entry(detail::Library::NvPtxCompiler, 0, false);
  throw LoadError(detail::library_path(detail::Library::NvPtxCompiler), "",
                  "cuwrap was built without nvPTXCompiler");
#endif
}

}  // namespace cuwrap
