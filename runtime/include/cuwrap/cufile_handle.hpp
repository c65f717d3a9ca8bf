// CuFileHandle: a file opened for GPUDirect Storage (cuFile, libcufile) that reads into
// and writes from device Buffers, its non-owning form CuFileHandleRef, and CuFileDriver,
// one reference to the process's cuFile driver session. CuFileBufferRegistration
// registers a Buffer with cuFile (optional: unregistered buffers work, through cuFile's
// own staging). Where GPUDirect Storage is absent cuFile works in compatibility mode
// (POSIX I/O through host memory) when allowed: docs/cufile.md says how.
//
// The generated low-level layer is <cuwrap/cufile.hpp> (cuwrap::cufile, CuFileError); a
// build without cufile.h (CUWRAP_HAS_CUFILE 0) keeps these types, whose operations then
// throw std::runtime_error saying that cufile.h was missing at build time.
#pragma once

#include <cuwrap/buffer.hpp>

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace cuwrap {

/// How CuFileHandle::open opens its file (open(2) flags).
struct CuFileOptions {
  bool read = true;       ///< open for reading (O_RDONLY, or O_RDWR with `write`)
  bool write = false;     ///< open for writing (O_WRONLY, or O_RDWR with `read`)
  bool create = false;    ///< create the file when missing (O_CREAT, with `mode`)
  bool truncate = false;  ///< truncate it to length 0 (O_TRUNC)
  /// Open with O_DIRECT, which GPUDirect Storage needs for its direct path; without it
  /// cuFile uses compatibility mode for the file (where allowed).
  bool direct = false;
  unsigned mode = 0644;  ///< permissions of a created file
};

/// One reference to the process's cuFile driver session (cuFileDriverOpen): the first
/// reference opens the session, the last one's release closes it (cuFileDriverClose).
///
/// Every CuFileHandle and CuFileBufferRegistration holds one, so code that only uses
/// those never needs this type; hold one to keep the session open between them (opening
/// it costs milliseconds) or to read its properties. Move-only; close() drops the
/// reference now.
class CuFileDriver {
 public:
  /// Take a reference, opening the session when it is the first.
  ///
  /// Throws LoadError naming libcufile when the library cannot be loaded, CuFileError
  /// when cuFileDriverOpen fails (CU_FILE_DRIVER_NOT_INITIALIZED where neither the
  /// nvidia-fs driver nor compatibility mode is available).
  static CuFileDriver open();

  /// Make an empty reference (is_open() false).
  CuFileDriver() noexcept = default;
  CuFileDriver(CuFileDriver&& other) noexcept;
  CuFileDriver& operator=(CuFileDriver&& other) noexcept;
  CuFileDriver(const CuFileDriver&) = delete;
  CuFileDriver& operator=(const CuFileDriver&) = delete;
  /// Drop the reference (close()).
  ~CuFileDriver();

  /// Drop the reference now, closing the session when it was the last; idempotent, never
  /// throws (a failing cuFileDriverClose goes to the release-failure handler).
  void close() noexcept;
  /// Return whether this object holds a reference.
  bool is_open() const noexcept { return open_; }
  /// Return the version of the loaded libcufile (cuFileGetVersion: e.g. 1150 for 1.15).
  ///
  /// Throws std::logic_error on a closed reference.
  int version() const;

 private:
  bool open_ = false;
};

/// A file registered with cuFile that this object does not own: what code that only
/// reads or writes takes. Trivially copyable; the handle must outlive it.
class CuFileHandleRef {
 public:
  /// Wrap a cuFile handle (a CUfileHandle_t) registered elsewhere, for the file
  /// descriptor `fd` it was registered from. No cuFile call; null is
  /// std::invalid_argument.
  static CuFileHandleRef from_handle(void* handle, int fd);

  /// Read `size` bytes of the file at `file_offset` into `dst` at `buffer_offset`
  /// (cuFileRead); return the bytes read, fewer than `size` only at the end of the file.
  ///
  /// Checked before any call: std::logic_error on a closed handle; std::out_of_range when
  /// `buffer_offset + size` passes the end of `dst`, std::invalid_argument for a negative
  /// offset (each naming the values). A failure is std::system_error for a file system
  /// error (errno), CuFileError for a cuFile status.
  std::size_t read(BufferRef dst, std::size_t size, off_t file_offset,
                   off_t buffer_offset = 0) const;
  /// Write `size` bytes of `src` from `buffer_offset` to the file at `file_offset`
  /// (cuFileWrite); return the bytes written. Checks and throws as read().
  std::size_t write(BufferRef src, std::size_t size, off_t file_offset,
                    off_t buffer_offset = 0) const;

  /// Return the cuFile handle (a CUfileHandle_t); null for a closed CuFileHandle.
  void* handle() const noexcept { return handle_; }
  /// Return the file descriptor the handle was registered from (-1 when closed).
  int fd() const noexcept { return fd_; }

 protected:
  CuFileHandleRef() noexcept = default;
  CuFileHandleRef(void* handle, int fd) noexcept : handle_(handle), fd_(fd) {}

  void* handle_ = nullptr;
  int fd_ = -1;
};

/// A file opened and registered with cuFile (cuFileHandleRegister), owning both: close()
/// and the destructor deregister the handle and close the file descriptor.
///
/// A CuFileHandle is a CuFileHandleRef (read, write); from_handle gives the non-owning
/// form of a handle registered elsewhere. Holds a CuFileDriver reference, so the driver
/// session stays open while it lives. Move-only; a moved-from or closed handle
/// (is_open() false) refuses operations with std::logic_error.
///
/// Example:
/// \code
///   cuwrap::CuFileHandle file = cuwrap::CuFileHandle::open(
///       "/tmp/data.bin", {.read = true, .write = true, .create = true});
///   file.write(buffer, buffer.size(), 0);
///   std::size_t n = file.read(other, other.size(), 0);
/// \endcode
class CuFileHandle : public CuFileHandleRef {
 public:
  /// Open `path` with `options` and register it with cuFile.
  ///
  /// Throws LoadError naming libcufile when it cannot be loaded (before the file is
  /// opened), std::system_error naming the path when open(2) fails, CuFileError when the
  /// driver session or the registration fails.
  static CuFileHandle open(const std::string& path, const CuFileOptions& options = {});
  /// Register the open file descriptor `fd` with cuFile, adopting it: the handle closes
  /// `fd` when it closes (also when this call throws). Pass a duplicate (dup(2)) to keep yours.
  ///
  /// Throws std::invalid_argument for a negative `fd`; otherwise as open().
  static CuFileHandle adopt(int fd);

  /// Make an empty handle (is_open() false), to be assigned later.
  CuFileHandle() noexcept = default;
  CuFileHandle(CuFileHandle&& other) noexcept;
  CuFileHandle& operator=(CuFileHandle&& other) noexcept;
  CuFileHandle(const CuFileHandle&) = delete;
  CuFileHandle& operator=(const CuFileHandle&) = delete;
  /// Deregister and close (close()).
  ~CuFileHandle();

  /// Deregister the handle, close the file descriptor and drop the driver reference;
  /// idempotent, never throws.
  void close() noexcept;
  /// Return whether the object still holds a registered file.
  bool is_open() const noexcept { return handle_ != nullptr; }

 private:
  CuFileDriver driver_;
};

/// A Buffer registered with cuFile (cuFileBufRegister) for GPUDirect Storage's direct
/// path; close() and the destructor deregister it (cuFileBufDeregister).
///
/// Optional: reads and writes of unregistered buffers work too (cuFile stages them). The
/// buffer must outlive the registration. Move-only; holds a CuFileDriver reference.
class CuFileBufferRegistration {
 public:
  /// Register `buffer` whole (`flags`: 0, or CU_FILE_RDMA_REGISTER).
  ///
  /// Throws std::invalid_argument for a closed or empty buffer, LoadError when libcufile
  /// cannot be loaded, CuFileError when cuFile refuses (e.g.
  /// CU_FILE_MEMORY_ALREADY_REGISTERED).
  static CuFileBufferRegistration register_buffer(BufferRef buffer, int flags = 0);

  /// Make an empty registration (is_open() false).
  CuFileBufferRegistration() noexcept = default;
  CuFileBufferRegistration(CuFileBufferRegistration&& other) noexcept;
  CuFileBufferRegistration& operator=(CuFileBufferRegistration&& other) noexcept;
  CuFileBufferRegistration(const CuFileBufferRegistration&) = delete;
  CuFileBufferRegistration& operator=(const CuFileBufferRegistration&) = delete;
  /// Deregister (close()).
  ~CuFileBufferRegistration();

  /// Deregister now; idempotent, never throws (a failure goes to the release-failure
  /// handler).
  void close() noexcept;
  /// Return whether the object still holds a registration.
  bool is_open() const noexcept { return address_ != 0; }
  /// Return the registered device address (0 when closed).
  CUdeviceptr address() const noexcept { return address_; }

 private:
  CUdeviceptr address_ = 0;
  CuFileDriver driver_;
};

}  // namespace cuwrap
