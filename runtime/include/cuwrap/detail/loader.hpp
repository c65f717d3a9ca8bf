// Run-time loading of the CUDA libraries and their entry points.
//
// Nothing in cuwrap links against libcuda, libnvrtc, libnvJitLink or libnvvm. Each generated
// wrapper owns one slot (a pointer in the generated symbol tables); the
// first call resolves the entry point through this loader and stores it, later calls
// cost one acquire load (a plain load on x86-64) and a predictable branch.
//
// Driver entry points come from cuGetProcAddress with, per function, the CUDA version
// whose ABI matches the header's prototype (from cudaTypedefs.h), so the driver returns
// the _v2/_v3 variant the wrapper was generated for. NVRTC,
// nvJitLink and libNVVM entry points come from dlsym of the (versioned) symbol the header
// names.
//
// The loader never asks the driver for an ABI newer than the driver itself
// (cuDriverGetVersion, read once when libcuda is opened): cuGetProcAddress may answer
// such a request with an older variant of another signature. Such an entry point is a
// LoadError naming the function, the version it needs and the driver's; a driver older
// than kMinimumDriverVersion (version.hpp) is a LoadError at first use.
#pragma once

#include <cstddef>
#include <string>

namespace cuwrap {

/// Return the message of the last load failure on this thread ("" if none).
///
/// The raw:: wrappers never throw: when a library or entry point is missing they
/// return an error status (CUDA_ERROR_NOT_FOUND, NVRTC_ERROR_INTERNAL_ERROR,
/// NVJITLINK_ERROR_INTERNAL, NVVM_ERROR_INVALID_INPUT) and leave the reason here.
std::string last_load_error();

namespace detail {

/// The libraries the generated bindings load: one enumerator per wrapped header, defined
/// by the generated <cuwrap/detail/symbols.hpp> (Driver, Nvrtc, NvJitLink, Nvvm).
enum class Library : unsigned char;

/// One entry point as the generator saw it in the header.
struct Symbol {
  const char* name;    ///< public C name, e.g. "cuMemAlloc" (what cuGetProcAddress takes)
  const char* symbol;  ///< versioned symbol, e.g. "cuMemAlloc_v2", "__nvJitLinkCreate_13_0"
  /// Driver only: the CUDA version whose ABI matches the header's prototype, from
  /// cudaTypedefs.h (`#define PFN_cuStreamGetCtx PFN_cuStreamGetCtx_v9020` → 9020). The
  /// driver re-versions some names (cuStreamGetCtx gained a parameter in 12.5), so asking
  /// for the headers' CUDA_VERSION would return a function of another signature.
  /// 0 means the CUDA_VERSION the bindings were generated from.
  int version = 0;
  /// Driver only: the same for the per-thread-default-stream variant
  /// (`PFN_cuMemcpy_v7000_ptds` → 7000); 0 means `version`.
  int ptds_version = 0;
  /// Driver only: the name cuGetProcAddress knows this ABI by, when it is not `name`
  /// (`cuGraphInstantiate` is `#define`d to cuGraphInstantiateWithFlags;
  /// `cuStreamGetCtx_v2` is cuStreamGetCtx at 12050). nullptr means `name`.
  const char* proc_name = nullptr;
};

/// How the loader finds one library: a row of the generated kLibraries table.
struct LibraryInfo {
  const char* display;  ///< how messages name it, e.g. "libnvvm"
  const char* header;   ///< the header its bindings come from, e.g. "nvvm.h"
  const char* env;      ///< environment variable naming another file, e.g. "CUWRAP_LIBNVVM"
  const char* soname;   ///< file name opened through the dynamic loader, e.g. "libnvvm.so.4"
  /// Directories below a toolkit root ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda) tried when
  /// the dynamic loader does not find it, ':'-separated ("nvvm/lib64:lib64:lib"); "" for
  /// the driver, which is never taken from a toolkit.
  const char* lib_dirs;
  const Symbol* symbols;     ///< its entry points (nullptr when the header was absent)
  std::size_t symbol_count;  ///< how many
  bool generated;            ///< false: the header was not found when generating
  /// The entry points are libcuda's, resolved as the driver's are (cudaGL.h, cudaEGL.h).
  bool driver_entry_points;
  /// A library linked statically into cuwrap (nvPTXCompiler: `soname` names its archive,
  /// libnvptxcompiler_static.a): its entry points' addresses, by index, taken instead of
  /// dlopen/dlsym; nullptr entries in a build without it. nullptr for a shared library.
  void* const* addresses;
  /// For such a library, the CMake option that links it ("CUWRAP_WITH_NVPTXCOMPILER"),
  /// which the error of a build without it names; nullptr otherwise.
  const char* option;
};

/// Resolve entry `index` of `library`; throw LoadError naming library/symbol on failure.
/// `per_thread` selects the per-thread-default-stream variant (driver only).
void* resolve_entry(Library library, std::size_t index, bool per_thread);

/// Resolve like resolve_entry, but return nullptr (and record last_load_error()).
void* try_resolve_entry(Library library, std::size_t index, bool per_thread) noexcept;

/// Return the installed driver's cuDriverGetVersion(), read once when libcuda is opened.
///
/// Throws LoadError when libcuda cannot be loaded or is older than
/// kMinimumDriverVersion.
int loaded_driver_version();

/// Return the driver entry point `name` in its ABI of CUDA `version` (e.g. the CUDA
/// 2.0 form of cuEventElapsedTime where the bindings carry the 12.8 one), for the
/// fallbacks of runtime/src/base/compat.cpp. Throws LoadError when `version` is newer than
/// the driver or the driver has no such entry point. Not cached: callers keep it.
void* resolve_driver_proc(const char* name, int version);

/// Return the file name or path used for `library` (after environment overrides).
std::string library_path(Library library);

// The slots are plain pointers accessed with the compiler's atomic builtins rather than
// std::atomic<void*>: the generated headers then need no <atomic> (and no function
// template per entry point), which keeps the cost of including them low. GCC and Clang
// (and compilers that follow them) provide these builtins; on x86-64 the acquire load is
// a plain load.

/// The entry point in `slot`, resolved through the loader on first use; throws LoadError
/// when the library or the symbol is missing.
inline void* entry(void*& slot, Library library, std::size_t index, bool per_thread = false) {
  void* fn = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
  if (fn == nullptr) [[unlikely]] {
    fn = resolve_entry(library, index, per_thread);
    __atomic_store_n(&slot, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

/// As entry, but nullptr instead of an exception (for the raw:: forms, which never throw;
/// last_load_error() then says why).
inline void* try_entry(void*& slot, Library library, std::size_t index,
                       bool per_thread = false) noexcept {
  void* fn = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
  if (fn == nullptr) [[unlikely]] {
    fn = try_resolve_entry(library, index, per_thread);
    if (fn != nullptr) {
      __atomic_store_n(&slot, fn, __ATOMIC_RELEASE);
    }
  }
  return fn;
}

}  // namespace detail
}  // namespace cuwrap
