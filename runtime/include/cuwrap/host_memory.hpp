// Page-locking host memory that the program already has (cuMemHostRegister): PyCUDA's
// register_host_memory, cuda-api-wrappers' memory::host::register_.
//
// RegisteredHostMemory is the owner: its destructor (or close()) unregisters the memory,
// in the context it was registered in. RegisteredHostMemoryRef is the view of it that
// functions take; registered memory is copied from and to at the speed of pinned memory,
// and with HostRegisterOptions::device_mapped a kernel reads and writes it through
// device_pointer() (or device_buffer()).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/ranges.hpp>

#include <cuda.h>

#include <cstddef>
#include <span>
#include <type_traits>

namespace cuwrap {

/// How cuMemHostRegister page-locks the memory (its CU_MEMHOSTREGISTER_* flags).
struct HostRegisterOptions {
  /// Pinned for every context, not only the one current at registration
  /// (CU_MEMHOSTREGISTER_PORTABLE).
  bool portable = false;
  /// Mapped into the device's address space: device_pointer() names it for kernels
  /// (CU_MEMHOSTREGISTER_DEVICEMAP).
  bool device_mapped = false;
  /// Memory the device only reads (CU_MEMHOSTREGISTER_READ_ONLY; the device attribute
  /// CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED says whether it can).
  bool read_only = false;
  /// I/O memory, e.g. a PCIe device's BAR mapped into the process
  /// (CU_MEMHOSTREGISTER_IOMEMORY); the driver refuses ordinary memory.
  bool io_memory = false;

  /// Return the CU_MEMHOSTREGISTER_* flags these options stand for.
  unsigned flags() const noexcept;
};

/// A view of registered host memory: its bytes and, when mapped, its device address.
///
/// Trivially copyable; names memory it does not own (a RegisteredHostMemory, or memory
/// someone else registered, from from_handle). It must not outlive the registration.
class RegisteredHostMemoryRef {
 public:
  /// View `memory`, which is already registered (by this program's own C code or another
  /// library). Asks the driver for the device address of mapped memory
  /// (cuMemHostGetDevicePointer, in the current context or device 0's primary one);
  /// device_pointer() is 0 when it is not mapped.
  ///
  /// Throws std::invalid_argument for an empty span or a null address, DriverError when
  /// the driver does not know the memory as registered (CUDA_ERROR_INVALID_VALUE).
  static RegisteredHostMemoryRef from_handle(std::span<std::byte> memory);

  /// Return the registered bytes.
  std::span<std::byte> host_span() const;
  /// Return the registered bytes as `T`s; throws std::invalid_argument when the size is
  /// not a multiple of sizeof(T).
  template <class T>
  requires std::is_trivially_copyable_v<T> std::span<T> host_span()
  const {
    const std::span<std::byte> bytes = host_span();
    require_multiple(sizeof(T));
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  /// Return the first registered byte.
  void* data() const;
  /// Return the number of registered bytes.
  std::size_t size() const;
  /// Return the address a kernel uses for the memory (mapped registrations), else 0.
  CUdeviceptr device_pointer() const;
  /// Return the mapped memory as a BufferRef over device_pointer(), for copies and
  /// launches that take buffers. Throws std::logic_error when it is not mapped
  /// (HostRegisterOptions::device_mapped).
  BufferRef device_buffer() const;
  /// Return the flags the memory was registered with (0 for a from_handle view, whose
  /// flags the driver does not tell).
  unsigned flags() const;

 protected:
  RegisteredHostMemoryRef() = default;
  RegisteredHostMemoryRef(std::byte* data, std::size_t size, CUdeviceptr device_pointer,
                          unsigned flags) noexcept
      : data_(data), size_(size), device_pointer_(device_pointer), flags_(flags) {}
  /// Throw std::logic_error naming `operation` when this names no memory (a closed or
  /// moved-from owner).
  void require_open(const char* operation) const;

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  CUdeviceptr device_pointer_ = 0;
  unsigned flags_ = 0;

 private:
  void require_multiple(std::size_t element_size) const;
};

/// Host memory page-locked by register_host_memory(); unregistered when destroyed.
///
/// Move-only. A default-constructed one is closed (is_open() false), to be assigned later.
/// The memory itself stays the program's: it must outlive the registration, and after
/// close() it is ordinary pageable memory again.
class RegisteredHostMemory : public RegisteredHostMemoryRef {
 public:
  /// Make a closed registration.
  RegisteredHostMemory() = default;
  /// Take over `other`'s registration; `other` is closed.
  RegisteredHostMemory(RegisteredHostMemory&& other) noexcept;
  /// Unregister this memory, then take over `other`'s registration.
  RegisteredHostMemory& operator=(RegisteredHostMemory&& other) noexcept;
  RegisteredHostMemory(const RegisteredHostMemory&) = delete;
  RegisteredHostMemory& operator=(const RegisteredHostMemory&) = delete;
  /// Unregister the memory (close()).
  ~RegisteredHostMemory();

  /// Unregister the memory now (cuMemHostUnregister, in the context it was registered
  /// in); idempotent. Never throws: a failure goes to the release-failure handler.
  void close() noexcept;
  /// Return whether the memory is still registered by this object.
  bool is_open() const noexcept { return data_ != nullptr; }

 private:
  friend RegisteredHostMemory register_host_memory(std::span<std::byte> memory,
                                                   const HostRegisterOptions& options);
  RegisteredHostMemory(std::byte* data, std::size_t size, CUdeviceptr device_pointer,
                       unsigned flags, CUcontext context) noexcept
      : RegisteredHostMemoryRef(data, size, device_pointer, flags), context_(context) {}

  CUcontext context_ = nullptr;  // where cuMemHostRegister ran (null for portable: any)
};

/// Page-lock `memory` (cuMemHostRegister) and return the owner that unregisters it.
///
/// The registration is made in the current context, or in device 0's primary context
/// when none is current (none is current again afterwards); portable registrations serve
/// every context. With `options.device_mapped`, device_pointer() names the memory for
/// kernels (cuMemHostGetDevicePointer in that context).
///
/// Throws std::invalid_argument for an empty span; DriverError from cuMemHostRegister
/// (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED when part of it is registered already,
/// CUDA_ERROR_NOT_SUPPORTED for read-only registration on a device without it).
///
/// Example:
/// \code
///   std::vector<float> host(1 << 20);
///   cuwrap::RegisteredHostMemory pinned =
///       cuwrap::register_host_memory(host, {.device_mapped = true});
///   cuwrap::launch(stream, config, kernel, pinned.device_buffer().as<float>(), n);
/// \endcode
RegisteredHostMemory register_host_memory(std::span<std::byte> memory,
                                          const HostRegisterOptions& options = {});

/// Page-lock the elements of a contiguous range of trivially copyable values (a
/// std::vector, std::array, C array or span); as register_host_memory(std::span<std::byte>).
template <detail::contiguous_range Range>
requires(std::is_trivially_copyable_v<detail::range_value_t<Range>> &&
         !std::is_const_v<typename detail::span_of_t<Range>::element_type>) RegisteredHostMemory
    register_host_memory(Range&& memory, const HostRegisterOptions& options = {}) {
  return register_host_memory(std::as_writable_bytes(detail::dynamic_span(memory)), options);
}

}  // namespace cuwrap
