// The checks every import from another process passes before cuwrap hands out memory
// (docs/ipc.md, "What is checked"). Pure functions of their arguments, so that the fuzz
// test (tests/runtime/test_ipc_fuzz.cpp) reaches them without a GPU.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cuwrap::detail {

/// Throw std::invalid_argument, naming `operation` and both sizes, unless `claimed`
/// bytes from `offset` bytes past `ptr` lie inside the range [`base`, `base` +
/// `range_size`) that the driver says the import `ptr` belongs to (cuMemGetAddressRange).
void check_imported_range(const char* operation, CUdeviceptr ptr, std::uint64_t offset,
                          std::uint64_t claimed, CUdeviceptr base, std::size_t range_size);

}  // namespace cuwrap::detail
