// The table of wrapped libraries. See libraries.hpp; docs/regenerating.md shows it.
#include "libraries.hpp"

#include <cctype>
#include <tuple>

namespace cuwrap::gen {

const char* version_source_name(VersionSource source) {
  switch (source) {
    case VersionSource::CudaVersionMacro:
      return "CUDA_VERSION";
    case VersionSource::SymbolSuffix:
      return "versioned symbols";
    case VersionSource::FunctionMarkers:
      return "functions of known toolkits";
    case VersionSource::None:
      return "none";
  }
  return "unknown";
}

const std::vector<LibraryConfig>& library_configs() {
  static const std::vector<LibraryConfig> kConfigs = [] {
    std::vector<LibraryConfig> rows;
    LibraryConfig driver;
    driver.header = "cuda.h";
    driver.library = "Driver";
    driver.ns = "driver";
    driver.table = "Driver";
    driver.slots = "driver";
    driver.status_type = "CUresult";
    driver.load_failure = "CUDA_ERROR_NOT_FOUND";
    driver.per_thread = true;
    driver.error_type = "DriverError";
    driver.display = "libcuda";
    driver.soname = "libcuda.so.1";
    driver.env = "CUWRAP_LIBCUDA";
    driver.version_source = VersionSource::CudaVersionMacro;
    driver.success = "CUDA_SUCCESS";
    driver.error_string = "cuGetErrorString";
    driver.error_string_out = true;
    driver.log_what =
        "the JIT error log of a failed JIT call, or the driver's own log lines of the "
        "failure (CUDA 12.9+ drivers)";
    driver.version_function = "cuDriverGetVersion";
    driver.handwritten_throw = true;
    rows.push_back(driver);

    LibraryConfig nvrtc;
    nvrtc.header = "nvrtc.h";
    nvrtc.library = "Nvrtc";
    nvrtc.ns = "nvrtc";
    nvrtc.table = "Nvrtc";
    nvrtc.slots = "nvrtc";
    nvrtc.status_type = "nvrtcResult";
    nvrtc.load_failure = "NVRTC_ERROR_INTERNAL_ERROR";
    nvrtc.log_handle_type = "nvrtcProgram";
    nvrtc.error_type = "NvrtcError";
    nvrtc.display = "libnvrtc";
    nvrtc.soname = "libnvrtc.so.{major}";
    nvrtc.env = "CUWRAP_LIBNVRTC";
    nvrtc.lib_dirs = {"lib64", "lib"};
    nvrtc.version_source = VersionSource::FunctionMarkers;
    nvrtc.support_header = "cuwrap/nvrtc_program_headers.hpp";
    nvrtc.success = "NVRTC_SUCCESS";
    nvrtc.log_size_function = "nvrtcGetProgramLogSize";
    nvrtc.log_function = "nvrtcGetProgramLog";
    nvrtc.log_what = "the program log";
    nvrtc.version_function = "nvrtcVersion";
    rows.push_back(nvrtc);

    LibraryConfig jit;
    jit.header = "nvJitLink.h";
    jit.optional = true;  // CUDA 11.8 has none
    jit.library = "NvJitLink";
    jit.ns = "nvjitlink";
    jit.table = "NvJitLink";
    jit.slots = "nvjitlink";
    jit.status_type = "nvJitLinkResult";
    jit.load_failure = "NVJITLINK_ERROR_INTERNAL";
    jit.log_handle_type = "nvJitLinkHandle";
    jit.error_type = "NvJitLinkError";
    jit.display = "libnvJitLink";
    jit.soname = "libnvJitLink.so.{major}";
    jit.env = "CUWRAP_LIBNVJITLINK";
    jit.lib_dirs = {"lib64", "lib"};
    jit.version_source = VersionSource::SymbolSuffix;
    jit.success = "NVJITLINK_SUCCESS";
    jit.log_size_function = "nvJitLinkGetErrorLogSize";
    jit.log_function = "nvJitLinkGetErrorLog";
    jit.log_what = "the error log";
    jit.version_function = "nvJitLinkVersion";
    rows.push_back(jit);

    LibraryConfig nvvm;
    nvvm.header = "nvvm.h";
    // A toolkit keeps libNVVM in nvvm/; the pip wheels put nvvm.h next to cuda.h.
    nvvm.include_dirs = {".", "../nvvm/include"};
    nvvm.optional = true;  // header-only sets (and some distributions) lack it
    nvvm.library = "Nvvm";
    nvvm.ns = "nvvm";
    nvvm.table = "Nvvm";
    nvvm.slots = "nvvm";
    nvvm.status_type = "nvvmResult";
    nvvm.load_failure = "NVVM_ERROR_INVALID_INPUT";
    nvvm.log_handle_type = "nvvmProgram";
    nvvm.error_type = "NvvmError";
    nvvm.display = "libnvvm";
    nvvm.soname = "libnvvm.so.4";  // the same soname from CUDA 11.2 through 13.x
    nvvm.env = "CUWRAP_LIBNVVM";
    nvvm.lib_dirs = {"nvvm/lib64", "lib64", "lib"};
    nvvm.version_source = VersionSource::None;
    nvvm.success = "NVVM_SUCCESS";
    nvvm.error_string = "nvvmGetErrorString";
    nvvm.log_size_function = "nvvmGetProgramLogSize";
    nvvm.log_function = "nvvmGetProgramLog";
    nvvm.log_what = "the program log";
    nvvm.version_function = "nvvmVersion";
    nvvm.error_alias = "NVVMError";  // libNVVM names itself NVVM
    rows.push_back(nvvm);

    LibraryConfig nvml;
    nvml.header = "nvml.h";
    nvml.optional = true;  // the driver's development files, not the toolkit, ship it
    nvml.extra_headers_only = true;
    nvml.library = "Nvml";
    nvml.ns = "nvml";
    nvml.table = "Nvml";
    nvml.slots = "nvml";
    nvml.status_type = "nvmlReturn_t";
    nvml.load_failure = "NVML_ERROR_LIBRARY_NOT_FOUND";
    nvml.error_type = "NvmlError";
    nvml.display = "libnvidia-ml";
    nvml.soname = "libnvidia-ml.so.1";  // the driver's: found through the loader's cache
    nvml.env = "CUWRAP_LIBNVML";
    nvml.version_source = VersionSource::None;  // versions with the driver, not the toolkit
    nvml.success = "NVML_SUCCESS";
    nvml.error_string = "nvmlErrorString";
    nvml.version_function = "nvmlSystemGetNVMLVersion";
    nvml.sized_buffer_status = "NVML_ERROR_INSUFFICIENT_SIZE";
    rows.push_back(nvml);

    LibraryConfig fatbin;
    fatbin.header = "nvFatbin.h";
    fatbin.optional = true;  // CUDA 12.4+; not in header-only sets
    fatbin.extra_headers_only = true;
    fatbin.library = "NvFatbin";
    fatbin.ns = "nvfatbin";
    fatbin.table = "NvFatbin";
    fatbin.slots = "nvfatbin";
    fatbin.status_type = "nvFatbinResult";
    fatbin.load_failure = "NVFATBIN_ERROR_INTERNAL";
    fatbin.error_type = "NvFatbinError";
    fatbin.display = "libnvfatbin";
    fatbin.soname = "libnvfatbin.so.{major}";
    fatbin.env = "CUWRAP_LIBNVFATBIN";
    fatbin.lib_dirs = {"lib64", "lib"};
    fatbin.version_source = VersionSource::None;
    fatbin.success = "NVFATBIN_SUCCESS";
    fatbin.error_string = "nvFatbinGetErrorString";
    fatbin.version_function = "nvFatbinVersion";
    rows.push_back(fatbin);

    // The driver's graphics interop: its own headers (and namespaces), so that programs
    // that do not use GL or EGL never need their headers; the entry points are libcuda's.
    for (const auto& [header, library, ns, typedefs, system] :
         {std::tuple{"cudaGL.h", "DriverGl", "driver_gl", "cudaGLTypedefs.h",
                     std::vector<std::string>{"GL/gl.h"}},
          std::tuple{"cudaEGL.h", "DriverEgl", "driver_egl", "cudaEGLTypedefs.h",
                     std::vector<std::string>{"EGL/egl.h", "EGL/eglext.h"}}}) {
      LibraryConfig graphics = driver;
      graphics.header = header;
      graphics.optional = true;  // and omitted where the GL/EGL headers are missing
      graphics.library = library;
      graphics.ns = ns;
      graphics.table = library;
      graphics.slots = ns;
      graphics.version_source = VersionSource::None;  // no version of its own: cuda.h's
      graphics.driver_entry_points = true;
      graphics.typedefs_header = typedefs;
      graphics.system_headers = system;
      rows.push_back(graphics);
    }

    LibraryConfig cufile;
    cufile.header = "cufile.h";
    cufile.optional = true;  // GPUDirect Storage's development files; not in every toolkit
    cufile.extra_headers_only = true;
    cufile.library = "CuFile";
    cufile.ns = "cufile";
    cufile.table = "CuFile";
    cufile.slots = "cufile";
    cufile.status_type = "CUfileError_t";  // a struct: the code and the driver's CUresult
    cufile.status_code_member = "err";
    cufile.status_code_type = "CUfileOpError";
    cufile.status_detail_member = "cu_err";
    cufile.status_detail_type = "CUresult";
    cufile.status_detail_when = "CU_FILE_CUDA_DRIVER_ERROR";
    cufile.status_detail_accessor = "cuda_error";
    // No status says "library not found"; GDS is then unsupported on this platform.
    cufile.load_failure = "CUfileError_t{CU_FILE_PLATFORM_NOT_SUPPORTED, CUDA_SUCCESS}";
    cufile.error_type = "CuFileError";
    cufile.display = "libcufile";
    cufile.soname = "libcufile.so.0";  // the same soname in CUDA 11.4 through 13.x
    cufile.env = "CUWRAP_LIBCUFILE";
    cufile.lib_dirs = {"lib64", "lib"};
    cufile.version_source = VersionSource::None;  // GDS versions on its own (cuFileGetVersion)
    cufile.success = "CU_FILE_SUCCESS";
    cufile.error_string = "cufileop_status_error";
    cufile.error_string_inline = true;
    cufile.version_function = "cuFileGetVersion";
    rows.push_back(cufile);

    // The PTX compiler ships as libnvptxcompiler_static.a only: linked into cuwrap with
    // -DCUWRAP_WITH_NVPTXCOMPILER=ON, its entry points are a table of their addresses.
    LibraryConfig ptx;
    ptx.header = "nvPTXCompiler.h";
    ptx.optional = true;  // left out unless the option is ON and the header found
    ptx.extra_headers_only = true;
    ptx.library = "NvPtxCompiler";
    ptx.ns = "nvptxcompiler";
    ptx.table = "NvPtxCompiler";
    ptx.slots = "nvptxcompiler";
    ptx.status_type = "nvPTXCompileResult";
    ptx.load_failure = "NVPTXCOMPILE_ERROR_INTERNAL";
    ptx.log_handle_type = "nvPTXCompilerHandle";
    ptx.error_type = "NvPtxCompilerError";
    ptx.display = "nvPTXCompiler";
    ptx.version_source = VersionSource::None;
    ptx.success = "NVPTXCOMPILE_SUCCESS";
    ptx.log_size_function = "nvPTXCompilerGetErrorLogSize";
    ptx.log_function = "nvPTXCompilerGetErrorLog";
    ptx.log_what = "the error log";
    ptx.version_function = "nvPTXCompilerGetVersion";
    ptx.cmake_option = "CUWRAP_WITH_NVPTXCOMPILER";
    ptx.static_library = "nvptxcompiler_static";
    rows.push_back(ptx);
    return rows;
  }();
  return kConfigs;
}

const LibraryConfig* library_config(const std::string& header) {
  for (const auto& c : library_configs()) {
    if (c.header == header) {
      return &c;
    }
  }
  return nullptr;
}

std::string soname_for(const LibraryConfig& config, int cuda_version) {
  if (!config.static_library.empty()) {
    return "lib" + config.static_library + ".a";
  }
  std::string name = config.soname;
  static constexpr std::string_view kMajor = "{major}";
  if (const auto at = name.find(kMajor); at != std::string::npos) {
    name.replace(at, kMajor.size(), std::to_string(cuda_version / 1000));
  }
  return name;
}

std::string has_macro(const LibraryConfig& config) {
  std::string macro = "CUWRAP_HAS_";
  for (const char c : config.ns) {
    macro += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return macro;
}

const std::string& status_code_type(const LibraryConfig& config) {
  return config.status_code_type.empty() ? config.status_type : config.status_code_type;
}

std::string status_code(const LibraryConfig& config, const std::string& status) {
  return config.status_code_member.empty() ? status : status + "." + config.status_code_member;
}

bool owns_error_type(const LibraryConfig& config) {
  for (const auto& c : library_configs()) {
    if (c.error_type == config.error_type) {
      return &c == &config || c.header == config.header;
    }
  }
  return false;
}

namespace {
std::vector<std::string>& extra_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
}  // namespace

void set_extra_header_dirs(std::vector<std::string> dirs) { extra_dirs() = std::move(dirs); }

const std::vector<std::string>& extra_header_dirs() { return extra_dirs(); }

std::vector<std::string> wrapped_headers() {
  std::vector<std::string> out;
  for (const auto& c : library_configs()) {
    out.push_back(c.header);
  }
  return out;
}

}  // namespace cuwrap::gen
