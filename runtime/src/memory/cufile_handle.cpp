// CuFileDriver, CuFileHandle, CuFileBufferRegistration: cuFile (GPUDirect Storage)
// reading into and writing from Buffers. Without cufile.h at build time the operations
// throw, saying so; the checks of arguments still run first.
#include <cuwrap/cufile_handle.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/error.hpp>

#if CUWRAP_HAS_CUFILE
#include <cuwrap/cufile.hpp>
#endif

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace cuwrap {

namespace {

#if !CUWRAP_HAS_CUFILE
[[noreturn]] void throw_no_header(const char* operation) {
  throw std::runtime_error(std::string(operation) +
                           ": cuwrap was built without cufile.h, so it has no cuFile "
                           "bindings (configure with -DCUWRAP_EXTRA_HEADERS_DIR=<directory "
                           "with cufile.h>; docs/cufile.md)");
}
#endif

#if CUWRAP_HAS_CUFILE
// The process's references to the cuFile driver session, under its mutex.
struct DriverSession {
  std::mutex mutex;
  long references = 0;
};

DriverSession& session() {
  static DriverSession instance;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
  return instance;
}
#endif

// Check a transfer's arguments against `buffer` before any cuFile call.
void check_transfer(const char* operation, const CuFileHandleRef& file, BufferRef buffer,
                    std::size_t size, off_t file_offset, off_t buffer_offset) {
  if (file.handle() == nullptr) {
    throw std::logic_error(std::string(operation) + " on a closed CuFileHandle");
  }
  if (file_offset < 0 || buffer_offset < 0) {
    throw std::invalid_argument(std::string(operation) + ": file_offset " +
                                std::to_string(file_offset) + " and buffer_offset " +
                                std::to_string(buffer_offset) + " must not be negative");
  }
  const std::size_t capacity = buffer.size();
  const auto start = static_cast<std::size_t>(buffer_offset);
  if (start > capacity || size > capacity - start) {
    throw std::out_of_range(std::string(operation) + ": buffer_offset " +
                            std::to_string(buffer_offset) + " + size " + std::to_string(size) +
                            " passes the end of the " + std::to_string(capacity) + "-byte buffer");
  }
}

#if CUWRAP_HAS_CUFILE
// Turn cuFileRead/cuFileWrite's result into bytes, or throw: -1 with errno for a file
// system error, the negated CUfileOpError for a cuFile status, else a negated errno.
std::size_t transferred(ssize_t result, int saved_errno, const char* function) {
  if (result >= 0) {
    return static_cast<std::size_t>(result);
  }
  const ssize_t code = -result;
  if (code > CUFILEOP_BASE_ERR) {
    throw CuFileError(CUfileError_t{static_cast<CUfileOpError>(code), CUDA_SUCCESS}, function);
  }
  const int error = result == -1 && saved_errno != 0 ? saved_errno : static_cast<int>(code);
  throw std::system_error(error, std::generic_category(), function);
}
#endif

}  // namespace

// CuFileDriver

CuFileDriver CuFileDriver::open() {
#if CUWRAP_HAS_CUFILE
  DriverSession& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.references == 0) {
    cufile::cuFileDriverOpen();
  }
  ++s.references;
  CuFileDriver driver;
  driver.open_ = true;
  return driver;
#else
  throw_no_header("CuFileDriver::open");
#endif
}

CuFileDriver::CuFileDriver(CuFileDriver&& other) noexcept : open_(other.open_) {
  other.open_ = false;
}

CuFileDriver& CuFileDriver::operator=(CuFileDriver&& other) noexcept {
  return detail::move_assign(*this, static_cast<CuFileDriver&&>(other));
}

CuFileDriver::~CuFileDriver() { close(); }

void CuFileDriver::close() noexcept {
  if (!open_) {
    return;
  }
  open_ = false;
#if CUWRAP_HAS_CUFILE
  DriverSession& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (--s.references == 0) {
    detail::report_release_failure(cufile::raw::cuFileDriverClose(), "cuFileDriverClose",
                                   "CuFileDriver");
  }
#endif
}

int CuFileDriver::version() const {
  if (!open_) {
    throw std::logic_error("CuFileDriver::version on a closed CuFileDriver");
  }
#if CUWRAP_HAS_CUFILE
  return cufile::cuFileGetVersion();
#else
  throw_no_header("CuFileDriver::version");
#endif
}

// CuFileHandleRef

CuFileHandleRef CuFileHandleRef::from_handle(void* handle, int fd) {
  if (handle == nullptr) {
    throw std::invalid_argument("CuFileHandleRef::from_handle: the handle is null");
  }
  return {handle, fd};
}

std::size_t CuFileHandleRef::read(BufferRef dst, std::size_t size, off_t file_offset,
                                  off_t buffer_offset) const {
  check_transfer("CuFileHandle::read", *this, dst, size, file_offset, buffer_offset);
#if CUWRAP_HAS_CUFILE
  errno = 0;
  const ssize_t result = cufile::cuFileRead(handle_, reinterpret_cast<void*>(dst.handle()), size,
                                            file_offset, buffer_offset);
  return transferred(result, errno, "cuFileRead");
#else
  throw_no_header("CuFileHandle::read");
#endif
}

std::size_t CuFileHandleRef::write(BufferRef src, std::size_t size, off_t file_offset,
                                   off_t buffer_offset) const {
  check_transfer("CuFileHandle::write", *this, src, size, file_offset, buffer_offset);
#if CUWRAP_HAS_CUFILE
  errno = 0;
  const ssize_t result = cufile::cuFileWrite(handle_, reinterpret_cast<const void*>(src.handle()),
                                             size, file_offset, buffer_offset);
  return transferred(result, errno, "cuFileWrite");
#else
  throw_no_header("CuFileHandle::write");
#endif
}

// CuFileHandle

CuFileHandle CuFileHandle::open(const std::string& path, const CuFileOptions& options) {
  CuFileDriver driver = CuFileDriver::open();  // LoadError before the file is touched
  int flags = options.read && options.write ? O_RDWR : options.write ? O_WRONLY : O_RDONLY;
  flags |= O_CLOEXEC;
  if (options.create) {
    flags |= O_CREAT;
  }
  if (options.truncate) {
    flags |= O_TRUNC;
  }
  if (options.direct) {
    flags |= O_DIRECT;
  }
  const int fd = ::open(path.c_str(), flags, static_cast<mode_t>(options.mode));
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "CuFileHandle::open: cannot open '" + path + "'");
  }
  CuFileHandle file = adopt(fd);
  return file;
}

CuFileHandle CuFileHandle::adopt(int fd) {
  if (fd < 0) {
    throw std::invalid_argument("CuFileHandle::adopt: fd " + std::to_string(fd) +
                                " is not a file descriptor");
  }
  CuFileHandle file;
  file.fd_ = fd;  // closed by the destructor of `file` if what follows throws
#if CUWRAP_HAS_CUFILE
  file.driver_ = CuFileDriver::open();
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  file.handle_ = cufile::cuFileHandleRegister(&descr);
  return file;
#else
  throw_no_header("CuFileHandle::adopt");
#endif
}

CuFileHandle::CuFileHandle(CuFileHandle&& other) noexcept
    : CuFileHandleRef(other.handle_, other.fd_), driver_(std::move(other.driver_)) {
  other.handle_ = nullptr;
  other.fd_ = -1;
}

CuFileHandle& CuFileHandle::operator=(CuFileHandle&& other) noexcept {
  return detail::move_assign(*this, static_cast<CuFileHandle&&>(other));
}

CuFileHandle::~CuFileHandle() { close(); }

void CuFileHandle::close() noexcept {
#if CUWRAP_HAS_CUFILE
  if (handle_ != nullptr) {
    cufile::raw::cuFileHandleDeregister(handle_);
  }
#endif
  handle_ = nullptr;
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  driver_.close();
}

// CuFileBufferRegistration

CuFileBufferRegistration CuFileBufferRegistration::register_buffer(BufferRef buffer, int flags) {
  const CUdeviceptr address = buffer.handle();
  const std::size_t size = buffer.size();
  if (size == 0) {
    throw std::invalid_argument("CuFileBufferRegistration::register_buffer: the buffer is empty");
  }
#if CUWRAP_HAS_CUFILE
  CuFileBufferRegistration registration;
  registration.driver_ = CuFileDriver::open();
  cufile::cuFileBufRegister(reinterpret_cast<const void*>(address), size, flags);
  registration.address_ = address;
  return registration;
#else
  static_cast<void>(address);
  static_cast<void>(flags);
  throw_no_header("CuFileBufferRegistration::register_buffer");
#endif
}

CuFileBufferRegistration::CuFileBufferRegistration(CuFileBufferRegistration&& other) noexcept
    : address_(other.address_), driver_(std::move(other.driver_)) {
  other.address_ = 0;
}

CuFileBufferRegistration& CuFileBufferRegistration::operator=(
    CuFileBufferRegistration&& other) noexcept {
  return detail::move_assign(*this, static_cast<CuFileBufferRegistration&&>(other));
}

CuFileBufferRegistration::~CuFileBufferRegistration() { close(); }

void CuFileBufferRegistration::close() noexcept {
#if CUWRAP_HAS_CUFILE
  if (address_ != 0) {
    detail::report_release_failure(
        cufile::raw::cuFileBufDeregister(reinterpret_cast<const void*>(address_)),
        "cuFileBufDeregister", "CuFileBufferRegistration");
  }
#endif
  address_ = 0;
  driver_.close();
}

}  // namespace cuwrap
