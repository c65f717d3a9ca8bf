// The driver ABI versions cuwrap-gen knows without cudaTypedefs.h: the first CUDA
// version of each versioned driver symbol, for `cuwrap-gen --abi-from-defines`.
//
// cudaTypedefs.h is the true source (parse.cpp matches each prototype to its
// `PFN_name_vNNNN` typedef). Where it is missing, the header's own versioned names
// (`#define cuCtxCreate cuCtxCreate_v4`) still say which variant each prototype is;
// this table says which CUDA version introduced that variant.
#pragma once

#include "model.hpp"

#include <string>

namespace cuwrap::gen {

/// Strip a trailing `_vN` and `_ptds`/`_ptsz` from a symbol: cuMemAlloc_v2 → cuMemAlloc.
std::string unversioned(const std::string& symbol);

/// Return the CUDA version whose driver ABI `symbol` is ("cuCtxCreate_v4" → 12050,
/// "cuMemcpyHtoD_v2_ptds" → 7000), as cudaTypedefs.h of CUDA 12.4, 12.6 and 13.0 give
/// it; 0 for a symbol it does not know (a variant newer than CUDA 13.0). Never a guess
/// from another variant of the same function: asking cuGetProcAddress for another
/// variant's version may return a function of another signature.
int known_abi_version(const std::string& symbol);

/// Give every cuda.h function of `api` its ABI version from its versioned symbol
/// (known_abi_version) and its cuGetProcAddress name from the symbol's base, and set
/// api.abi_source to AbiSource::Defines. A symbol the table does not know is requested
/// as api.cuda_version and marked abi_version_unknown (the report names it).
void assign_abi_from_defines(Api& api);

}  // namespace cuwrap::gen
