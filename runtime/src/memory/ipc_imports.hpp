// The process's imports of pool pointers (cuMemPoolImportPointer). The driver maps one
// exported allocation once per process and pool: importing it again answers the same
// address, and one cuMemFreeAsync unmaps it for every importer (it does not count
// imports). So cuwrap counts them: each Buffer::from_ipc_descriptor adds a holder, and
// only the last holder's release frees the import (cuda.core keeps a cache of imports
// for the same reason). Every function here runs with the lock lock_ipc_imports() gives,
// which the import and the last free hold too, so that no import can race a free.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <mutex>

namespace cuwrap::detail {

/// Lock the registry of imports (one lock for the whole process).
std::unique_lock<std::mutex> lock_ipc_imports();

/// Return how many Buffers hold the import of `ptr` into `pool` (0: none).
std::size_t ipc_import_holders(CUmemoryPool pool, CUdeviceptr ptr) noexcept;

/// Add a holder of the import of `ptr` into `pool` (throws std::bad_alloc only).
void add_ipc_import_holder(CUmemoryPool pool, CUdeviceptr ptr);

/// Remove a holder of the import of `ptr` into `pool`; forgets the import with its last.
void drop_ipc_import_holder(CUmemoryPool pool, CUdeviceptr ptr) noexcept;

}  // namespace cuwrap::detail
