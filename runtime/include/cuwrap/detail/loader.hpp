// Run-time loading of the CUDA libraries and their entry points.
//
// Nothing in cuwrap links against libcuda, libnvrtc or libnvJitLink. Each generated
// wrapper owns one slot (a std::atomic<void*> in the generated symbol tables); the
// first call resolves the entry point through this loader and stores it, later calls
// cost one acquire load (a plain load on x86-64) and a predictable branch.
//
// Driver entry points come from cuGetProcAddress with, per function, the CUDA version
// whose ABI matches the header's prototype (from cudaTypedefs.h), so the driver returns
// the _v2/_v3 variant the wrapper was generated for. NVRTC and
// nvJitLink entry points come from dlsym of the versioned symbol the header names.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace cuwrap {

/// Return the message of the last load failure on this thread ("" if none).
///
/// The raw:: wrappers never throw: when a library or entry point is missing they
/// return an error status (CUDA_ERROR_NOT_FOUND, NVRTC_ERROR_INTERNAL_ERROR,
/// NVJITLINK_ERROR_INTERNAL) and leave the reason here.
std::string last_load_error();

namespace detail {

/// The three libraries the generated bindings load.
enum class Library : unsigned char { Driver, Nvrtc, NvJitLink };

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

/// Resolve entry `index` of `library`; throw LoadError naming library/symbol on failure.
/// `per_thread` selects the per-thread-default-stream variant (driver only).
void* resolve_entry(Library library, std::size_t index, bool per_thread);

/// Resolve like resolve_entry, but return nullptr (and record last_load_error()).
void* try_resolve_entry(Library library, std::size_t index, bool per_thread) noexcept;

/// Return the file name or path used for `library` (after environment overrides).
std::string library_path(Library library);

/// Return the entry point stored in `slot`, resolving it on first use. Throws LoadError.
template <class Fn>
inline Fn* entry(std::atomic<void*>& slot, Library library, std::size_t index,
                 bool per_thread = false) {
  void* fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) [[unlikely]] {
    fn = resolve_entry(library, index, per_thread);
    slot.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<Fn*>(fn);
}

/// Return the entry point stored in `slot`, or nullptr when it cannot be loaded.
template <class Fn>
inline Fn* try_entry(std::atomic<void*>& slot, Library library, std::size_t index,
                     bool per_thread = false) noexcept {
  void* fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) [[unlikely]] {
    fn = try_resolve_entry(library, index, per_thread);
    if (fn != nullptr) {
      slot.store(fn, std::memory_order_release);
    }
  }
  return reinterpret_cast<Fn*>(fn);
}

}  // namespace detail
}  // namespace cuwrap
