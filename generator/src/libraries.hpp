// The libraries cuwrap-gen wraps: one row per C header, holding every per-library fact
// (where the header lives, what the shared library is called, its status type, how the
// header's toolkit version is read). The stages read this table instead of naming a
// header in code, so wrapping another NVIDIA C header is a row here plus rules.
#pragma once

#include <string>
#include <vector>

namespace cuwrap::gen {

/// How a header tells which toolkit it comes from (for the mixed-toolkit check).
enum class VersionSource {
  CudaVersionMacro,  ///< `#define CUDA_VERSION 13000` (cuda.h): the reference version
  SymbolSuffix,      ///< versioned symbols such as `__nvJitLinkCreate_13_0`
  FunctionMarkers,   ///< functions whose first or last toolkit is known, "(CUDA 12.8+)" notes
  None,              ///< nothing in the header: it is trusted to sit in the same toolkit
};

/// Return how the docs and the report name `source` ("CUDA_VERSION", ...).
const char* version_source_name(VersionSource source);

/// What is fixed about one wrapped library (cuda.h → the driver, ...): one table row.
struct LibraryConfig {
  std::string header;  ///< "cuda.h"
  /// Where the header may be, relative to --cuda-include, in search order: "." is that
  /// directory itself ("../nvvm/include" for nvvm.h in a toolkit tree).
  std::vector<std::string> include_dirs = {"."};
  /// The header is looked for only in the directories of --extra-headers, never below
  /// --cuda-include: a library bound on request (NVML, nvFatbin), so that the bindings of
  /// a toolkit do not change with which of these headers its install happens to have.
  bool extra_headers_only = false;
  /// The header may be missing (nvJitLink.h before CUDA 12, nvvm.h in header-only sets):
  /// the bindings then omit the library, and the generator says so.
  bool optional = false;
  std::string library;      ///< detail::Library enumerator: "Driver"
  std::string ns;           ///< namespace and file stem: "driver" (cuwrap::driver, driver.hpp)
  std::string table;        ///< symbol table stem: "Driver" (kDriverSymbols)
  std::string slots;        ///< slot array stem: "driver" (g_driver_slots)
  std::string status_type;  ///< "CUresult"
  /// A status that is a struct rather than an enum (cuFile's `CUfileError_t {CUfileOpError
  /// err; CUresult cu_err;}`): the member holding the library's code ("err") and that
  /// code's enum ("CUfileOpError"). Checks compare the member with `success`; exceptions,
  /// to_string and describe() take the enum. "" for an enum status (the status is the code).
  std::string status_code_member;
  std::string status_code_type;
  /// A second code such a struct carries (cuFile's `cu_err`, a CUresult) that means
  /// something only when the code is `status_detail_when` (CU_FILE_CUDA_DRIVER_ERROR): the
  /// exception keeps it (accessor `status_detail_accessor`, "cuda_error"; the type's zero
  /// value otherwise) and its message names it. "" for none.
  std::string status_detail_member;
  std::string status_detail_type;
  std::string status_detail_when;
  std::string status_detail_accessor;
  std::string load_failure;     ///< what raw:: returns when the entry cannot be loaded
  std::string log_handle_type;  ///< handle whose log an exception carries ("" for none)
  bool per_thread = false;      ///< has per-thread-default-stream variants
  std::string error_type;       ///< the exception the typed forms throw: "DriverError"
  std::string display;          ///< how messages name the shared library: "libcuda"
  /// The shared library's file name; "{major}" stands for the toolkit's major version
  /// ("libnvrtc.so.{major}" → libnvrtc.so.13).
  std::string soname;
  std::string env;  ///< environment variable naming another file: "CUWRAP_LIBCUDA"
  /// Directories below a toolkit root ($CUDA_HOME, /usr/local/cuda) where the library may
  /// be when the dynamic loader does not find it, in search order; none for the driver.
  std::vector<std::string> lib_dirs;
  VersionSource version_source = VersionSource::None;
  /// The entry points are libcuda's, asked from cuGetProcAddress as cuda.h's are, with the
  /// ABI versions of `typedefs_header` (cudaGL.h, cudaEGL.h: the driver's graphics interop).
  bool driver_entry_points = false;
  /// The header naming each entry point's ABI version (`PFN_cuGLGetDevices_v6050`), next
  /// to the header; "" for none (cuda.h's cudaTypedefs.h is read on its own).
  std::string typedefs_header;
  /// System headers the header includes (GL/gl.h for cudaGL.h): where the compiler does not
  /// find them the library is omitted, as a missing optional header is.
  std::vector<std::string> system_headers;
  /// A handwritten header of cuwrap's that adds forms to the library's typed header
  /// (which includes it after its own declarations): "" for none.
  std::string support_header;

  // What the generated error layer (detail/libraries.hpp, detail/library_errors.hpp,
  // src/library_errors.cpp) and the generated CMake list (libraries.cmake) make of the row.
  std::string success;  ///< the status that means success: "CUDA_SUCCESS"
  /// The function giving a status's text ("" for none: the header's documentation,
  /// detail::describe, says it), taking the status and returning `const char*`
  /// (nvvmGetErrorString) or, when `error_string_out`, writing it through a `const char**`
  /// and returning a status (cuGetErrorString).
  std::string error_string;
  bool error_string_out = false;
  /// `error_string` is a function the header itself defines (static inline; cuFile's
  /// cufileop_status_error): called directly, so the text needs no loaded library.
  bool error_string_inline = false;
  /// The pair that reads the log an exception carries from the `log_handle_type` handle:
  /// `size_function(handle, size_t*)` (counting the NUL), then `function(handle, char*)`.
  std::string log_size_function;
  std::string log_function;
  std::string log_what;  ///< what the log is, for the docs: "the program log"
  /// The function reporting the loaded library's version ("nvrtcVersion"): the docs and
  /// the coverage report name it; "" for none.
  std::string version_function;
  std::string error_alias;  ///< another name of `error_type` ("NVVMError"), "" for none
  /// The status of the library's two-call buffer protocol (NVML: a pointer to the count,
  /// beside the array, is the array's capacity in and the needed count out, and a call
  /// with too small an array returns NVML_ERROR_INSUFFICIENT_SIZE); "" for none. Rules
  /// see such count/array pairs by this row.
  std::string sized_buffer_status;
  /// cuwrap's runtime throws and reports this status itself (the driver: its error frames,
  /// CUDA_ERROR_DEINITIALIZED at process exit, the JIT error log): the generated layer
  /// declares throw_<ns>_error and report_release_failure but does not define them.
  bool handwritten_throw = false;
  /// The CMake option that must be ON for the build to compile the library ("" for none:
  /// built wherever its header is); for libraries that only link statically.
  std::string cmake_option;
  /// The library ships as a static archive only ("nvptxcompiler_static" for
  /// libnvptxcompiler_static.a), linked into cuwrap where `cmake_option` is ON: its entry
  /// points come from a generated table of their addresses, not from dlopen/dlsym, and
  /// `soname`, `env` and `lib_dirs` are unused. "" for a shared library.
  std::string static_library;
};

/// Return the macro that says whether a build has the library: "CUWRAP_HAS_NVRTC".
std::string has_macro(const LibraryConfig& config);

/// Return the type of the code a status holds: `status_code_type` for a struct status,
/// else the status type itself ("CUresult").
const std::string& status_code_type(const LibraryConfig& config);

/// Return the expression reading the code of the status named `status`: "code.err" for a
/// struct status (`status_code_member`), else `status` itself.
std::string status_code(const LibraryConfig& config, const std::string& status);

/// Whether `config` is the first row with its error type (the one that declares it;
/// cudaGL.h and cudaEGL.h share cuda.h's DriverError).
bool owns_error_type(const LibraryConfig& config);

/// Return the table of wrapped libraries, in the order they are read and reported.
const std::vector<LibraryConfig>& library_configs();

/// Return the row of `header`, or nullptr when cuwrap-gen does not wrap it.
const LibraryConfig* library_config(const std::string& header);

/// Return `config.soname` for a toolkit of CUDA_VERSION `cuda_version` ("{major}" filled);
/// for a statically linked library, its archive's file name ("libnvptxcompiler_static.a").
std::string soname_for(const LibraryConfig& config, int cuda_version);

/// Set the directories where an optional library's header is looked for when the CUDA
/// include directory has none (cuwrap-gen --extra-headers): headers that a toolkit
/// install may lack (nvml.h comes with the driver's development files).
void set_extra_header_dirs(std::vector<std::string> dirs);

/// Return the directories set_extra_header_dirs gave (absolute paths or as given).
const std::vector<std::string>& extra_header_dirs();

/// The wrapped headers, in table order ("cuda.h", "nvrtc.h", ...).
std::vector<std::string> wrapped_headers();

}  // namespace cuwrap::gen
