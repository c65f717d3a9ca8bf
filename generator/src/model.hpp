// The API model: what cuwrap-gen learned from the CUDA headers, as plain structs.
//
// parse.cpp fills it from libclang; rules.cpp and render.cpp read it. Nothing here
// knows libclang, so the later stages can be tested on models built by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuwrap::gen {

/// One parameter of a C function, as the header declares it.
struct Param {
  std::string name;              ///< as declared ("dptr"); "argN" when the header omits it
  std::string type;              ///< type spelling, e.g. "CUdeviceptr*", "const char* const*"
  bool is_pointer = false;       ///< declared as `T*` (a typedef such as CUstream is not)
  std::string pointee;           ///< T of `T*` without top-level const ("CUdeviceptr"); "" if not
  bool pointee_const = false;    ///< `const T*`
  bool pointee_complete = true;  ///< T is a complete object type (an output can be made of it)
  std::string doc;               ///< the header's `\param` text, e.g. "Returned context handle"
  std::string direction;         ///< "in", "out", "in,out" from a `[out]`-style marker, else ""
};

/// One C function of a wrapped header.
struct Function {
  std::string name;               ///< public name as written, e.g. "cuMemAlloc"
  std::string symbol;             ///< versioned symbol, e.g. "cuMemAlloc_v2"
  std::string per_thread_symbol;  ///< per-thread-default-stream symbol, "" if none
  /// The public function is a header-inline forwarder (nvJitLink style) to `symbol`;
  /// the loaded entry then has the forwarded-to declaration's type.
  bool inline_forwarder = false;
  /// The CUDA version whose ABI matches this prototype, for cuGetProcAddress (driver
  /// only; 0 when cudaTypedefs.h names none). The driver re-versions some names
  /// (cuStreamGetCtx gained a parameter in 12.5): asking for CUDA_VERSION would return
  /// a function of another signature.
  int abi_version = 0;
  int per_thread_abi_version = 0;  ///< the same for the `_ptds`/`_ptsz` variant
  /// Nothing knew the ABI of this prototype (or of its per-thread variant): it is
  /// requested as CUDA_VERSION, and the report names it.
  bool abi_version_unknown = false;
  /// The name cuGetProcAddress knows that ABI by when it is not `name`: the base of a
  /// `#define`d target (cuGraphInstantiate → "cuGraphInstantiateWithFlags") or of an
  /// explicitly versioned name (cuStreamGetCtx_v2 → "cuStreamGetCtx"). "" means `name`.
  std::string proc_name;
  /// Where abi_version came from, for the report (driver only; "" elsewhere):
  /// "cudaTypedefs.h PFN_cuCtxCreate_v12050" (the typedef matched to the prototype),
  /// "define cuCtxCreate -> cuCtxCreate_v4" (--abi-from-defines: the versioned symbol the
  /// header's #define maps the name to) or "symbol cuDeviceGetName" (an unmapped name).
  std::string abi_source;
  std::string return_type;  ///< e.g. "CUresult", "const char*"
  std::vector<Param> params;
  bool variadic = false;
  bool deprecated = false;
  std::string brief;   ///< the `\brief` text on one line
  std::string header;  ///< file name only, e.g. "cuda.h"
};

/// One enumerator with its value and documentation.
struct Enumerator {
  std::string name;
  std::int64_t value = 0;
  std::string doc;  ///< the enumerator's doc comment on one line
  bool deprecated = false;
};

/// One enum type, named as C code names it (the typedef name when there is one).
struct Enum {
  std::string name;  ///< e.g. "CUresult"
  std::vector<Enumerator> enumerators;
  std::string header;
};

/// One typedef of a wrapped header (kept for the report and future rules).
struct Typedef {
  std::string name;
  std::string underlying;
  std::string header;
};

/// One `#define public versioned` line: how a public name maps to its ABI symbol.
struct VersionDefine {
  std::string name;               ///< "cuMemAlloc", "cuMemcpyHtoD"
  std::string symbol;             ///< "cuMemAlloc_v2", "cuMemcpyHtoD_v2"
  std::string per_thread_symbol;  ///< "cuMemcpyHtoD_v2_ptds" when the define wraps PTDS/PTSZ
  std::string header;
};

/// Everything read from one wrapped header.
struct Header {
  std::string file;                 ///< "cuda.h", "nvrtc.h", "nvJitLink.h"
  std::vector<Function> functions;  ///< in declaration order
  std::vector<Enum> enums;
  std::vector<Typedef> typedefs;
  std::vector<VersionDefine> defines;
};

/// Where the driver functions' ABI versions (Function::abi_version) come from.
enum class AbiSource {
  Typedefs,  ///< cudaTypedefs.h: each prototype matched to its `PFN_name_vNNNN` typedef
  /// cuda.h's versioned names (`#define cuCtxCreate cuCtxCreate_v4`) and the first
  /// version of each variant that cuwrap-gen knows (known_abi.hpp)
  Defines,
};

/// Return how the report and the bindings name `source`: "cudaTypedefs.h" or
/// "versioned names" (of cuda.h).
inline const char* abi_source_name(AbiSource source) {
  return source == AbiSource::Typedefs ? "cudaTypedefs.h" : "versioned names";
}

/// The whole model: the wrapped headers and the toolkit version they come from.
struct Api {
  int cuda_version = 0;  ///< CUDA_VERSION from cuda.h
  AbiSource abi_source = AbiSource::Typedefs;
  std::vector<Header> headers;
  /// The optional headers that were not found, each with where they were looked for and
  /// what the bindings leave out ("nvvm.h not found (looked for ...): ...").
  std::vector<std::string> omitted;

  /// Return the header named `file`, or nullptr.
  const Header* find(const std::string& file) const {
    for (const auto& h : headers) {
      if (h.file == file) {
        return &h;
      }
    }
    return nullptr;
  }
};

}  // namespace cuwrap::gen
