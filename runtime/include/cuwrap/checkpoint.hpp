// checkpoint::Process: lock, checkpoint, restore and unlock the GPU state of a CUDA
// process (cuda.core's checkpoint.Process; the driver's cuCheckpointProcess* functions).
//
// The sequence a controller (another process, or a CPU checkpointing tool such as CRIU)
// runs on a CUDA process is lock() → checkpoint() → (the CPU side dumps or waits) →
// restore() → unlock(). checkpoint() moves the process's GPU memory into host memory
// and releases its GPUs; restore() brings it back (optionally onto other GPUs of the
// same chip). The functions exist on Linux from CUDA 12.8 (toolkit and driver); GPU
// remapping in restore() needs CUDA 13.0 headers. Older ones give UnsupportedError
// naming the version, before any other work.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cuwrap::checkpoint {

/// The CUDA toolkit and driver version of the checkpoint functions (CUDA 12.8).
inline constexpr int kCheckpointVersion = 12080;
/// The toolkit version whose headers describe GPU remapping in restore() (CUDA 13.0).
inline constexpr int kGpuRemapVersion = 13000;

/// The checkpoint state of a CUDA process (CUprocessState).
enum class ProcessState {
  Running,       ///< CU_PROCESS_STATE_RUNNING: CUDA calls proceed
  Locked,        ///< CU_PROCESS_STATE_LOCKED: further CUDA calls block
  Checkpointed,  ///< CU_PROCESS_STATE_CHECKPOINTED: GPU memory is in host memory, GPUs released
  Failed,        ///< CU_PROCESS_STATE_FAILED: an uncorrectable error in checkpoint or restore
};

/// Return "running", "locked", "checkpointed" or "failed" (cuda.core's state strings).
std::string_view to_string(ProcessState state) noexcept;

/// One GPU of a restore that moves a process: the GPU it was checkpointed on and the
/// one to restore it onto, as UUID text ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as
/// Device::uuid() writes it, or with nvidia-smi's "GPU-" prefix; the hyphens optional).
struct GpuPair {
  std::string old_uuid;  ///< the GPU that was checkpointed
  std::string new_uuid;  ///< the GPU to restore onto (same chip, enough memory)
};

/// A CUDA process, by process ID, whose GPU state can be locked, checkpointed,
/// restored and unlocked (cuda.core's checkpoint.Process).
///
/// A Process is a value (the pid): it owns nothing and copies freely. Every operation
/// is one driver call on that pid. Throws UnsupportedError naming CUDA 12.8 when cuwrap
/// was built against an older toolkit or the installed driver is older, DriverError for
/// what the driver refuses (CUDA_ERROR_ILLEGAL_STATE for an operation out of order).
///
/// Example (a controller):
/// \code
///   cuwrap::checkpoint::Process worker(worker_pid);
///   if (worker.lock(5000)) {            // false: not locked within 5 s
///     worker.checkpoint();              // its GPU memory now lives in host memory
///     worker.restore();
///     worker.unlock();
///   }
/// \endcode
class Process {
 public:
  /// Refer to the process `pid`.
  ///
  /// Throws std::invalid_argument naming the value for a pid <= 0.
  explicit Process(int pid);
  /// Return the calling process.
  static Process current();

  /// Return the process ID.
  int pid() const noexcept { return pid_; }
  /// Return the process's checkpoint state (cuCheckpointProcessGetState).
  ProcessState state() const;
  /// Return the ID of the process's CUDA restore thread
  /// (cuCheckpointProcessGetRestoreThreadId).
  int restore_thread_id() const;

  /// Lock the running process, blocking its further CUDA calls (cuCheckpointProcessLock).
  ///
  /// `timeout_ms` 0 waits as long as it takes. Returns false when the timeout passed
  /// first: the process is then still running, not locked.
  [[nodiscard]] bool lock(std::uint32_t timeout_ms = 0) const;
  /// Move the locked process's GPU memory into host memory and release its GPUs
  /// (cuCheckpointProcessCheckpoint).
  void checkpoint() const;
  /// Restore the checkpointed process, onto the GPUs it was on, or moved as
  /// `gpu_mapping` says (cuCheckpointProcessRestore); it is locked afterwards.
  ///
  /// A mapping must name every GPU the process was checkpointed on (every GPU the
  /// kernel driver sees, whatever CUDA_VISIBLE_DEVICES says). Throws
  /// std::invalid_argument naming the entry for a UUID that is not 32 hex digits,
  /// before the driver; UnsupportedError naming CUDA 13.0 for a mapping when cuwrap
  /// was built against older headers.
  void restore(std::span<const GpuPair> gpu_mapping = {}) const;
  /// Unlock the locked process so that its CUDA calls proceed (cuCheckpointProcessUnlock).
  void unlock() const;

 private:
  int pid_;
};

}  // namespace cuwrap::checkpoint
