// The process's imports of pool pointers (cuMemPoolImportPointer). The driver maps one
// exported allocation once per process and pool and does not count imports: importing
// it again answers the same address (a pinned pool's answers CUDA_ERROR_ALREADY_MAPPED),
// and one cuMemFreeAsync unmaps it for every importer. So cuwrap counts them, as
// cuda.core's cache of imports does: an import of export data already held reuses that
// import without asking the driver, each Buffer::from_ipc_descriptor adds a holder, and
// only the last holder's release frees the import. Every function here runs with the
// lock lock_ipc_imports() gives, which imports and last frees hold throughout, so that
// no import can race a free.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <mutex>

namespace cuwrap::detail {

/// Lock the registry of imports (one lock for the whole process).
std::unique_lock<std::mutex> lock_ipc_imports();

/// Return the address this process holds `data` imported at into `pool` (0: none).
CUdeviceptr held_ipc_import(CUmemoryPool pool, const CUmemPoolPtrExportData& data) noexcept;

/// Return how many Buffers hold the import of `ptr` into `pool` (0: none).
std::size_t ipc_import_holders(CUmemoryPool pool, CUdeviceptr ptr) noexcept;

/// Add a holder of the import of `data` into `pool` at `ptr` (throws std::bad_alloc only).
void add_ipc_import_holder(CUmemoryPool pool, CUdeviceptr ptr, const CUmemPoolPtrExportData& data);

/// Remove a holder of the import of `ptr` into `pool`; forgets the import with its last.
void drop_ipc_import_holder(CUmemoryPool pool, CUdeviceptr ptr) noexcept;

}  // namespace cuwrap::detail
