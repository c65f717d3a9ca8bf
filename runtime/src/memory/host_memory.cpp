// register_host_memory(): cuMemHostRegister and its owner, which unregisters in the
// context the memory was registered in.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/host_memory.hpp>

#include "base/destroy_in.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {

unsigned HostRegisterOptions::flags() const noexcept {
  unsigned flags = 0;
  if (portable) {
    flags |= CU_MEMHOSTREGISTER_PORTABLE;
  }
  if (device_mapped) {
    flags |= CU_MEMHOSTREGISTER_DEVICEMAP;
  }
  if (read_only) {
    flags |= CU_MEMHOSTREGISTER_READ_ONLY;
  }
  if (io_memory) {
    flags |= CU_MEMHOSTREGISTER_IOMEMORY;
  }
  return flags;
}

namespace {

void require_memory(std::span<std::byte> memory, const char* function) {
  if (memory.empty() || memory.data() == nullptr) {
    throw std::invalid_argument(std::string(function) +
                                ": memory is empty (a registration needs at least one byte)");
  }
}

}  // namespace

// ---- RegisteredHostMemoryRef ------------------------------------------------------------

RegisteredHostMemoryRef RegisteredHostMemoryRef::from_handle(std::span<std::byte> memory) {
  require_memory(memory, "RegisteredHostMemoryRef::from_handle");
  const detail::ScopedCurrentOrPrimary scope(0);
  // Mapped or not: the driver answers CUDA_ERROR_INVALID_VALUE for memory that is
  // registered without CU_MEMHOSTREGISTER_DEVICEMAP, and for memory not registered at all.
  CUdeviceptr device_pointer = 0;
  const CUresult status = driver::raw::cuMemHostGetDevicePointer(&device_pointer, memory.data(), 0);
  if (status != CUDA_SUCCESS) {
    // cuMemHostGetFlags tells memory registered without a mapping (no device pointer)
    // from memory the driver does not know (DriverError).
    (void)driver::cuMemHostGetFlags(memory.data());
    device_pointer = 0;
  }
  return {memory.data(), memory.size(), device_pointer, 0};
}

std::span<std::byte> RegisteredHostMemoryRef::host_span() const {
  require_open("host_span");
  return {data_, size_};
}

void* RegisteredHostMemoryRef::data() const {
  require_open("data");
  return data_;
}

std::size_t RegisteredHostMemoryRef::size() const {
  require_open("size");
  return size_;
}

CUdeviceptr RegisteredHostMemoryRef::device_pointer() const {
  require_open("device_pointer");
  return device_pointer_;
}

BufferRef RegisteredHostMemoryRef::device_buffer() const {
  require_open("device_buffer");
  if (device_pointer_ == 0) {
    throw std::logic_error(
        "RegisteredHostMemory::device_buffer: the memory is not mapped into the device's "
        "address space (register it with HostRegisterOptions::device_mapped)");
  }
  return BufferRef(device_pointer_, size_);
}

unsigned RegisteredHostMemoryRef::flags() const {
  require_open("flags");
  return flags_;
}

void RegisteredHostMemoryRef::require_open(const char* operation) const {
  if (data_ == nullptr) {
    throw std::logic_error(std::string("RegisteredHostMemory::") + operation +
                           ": the registration is closed");
  }
}

void RegisteredHostMemoryRef::require_multiple(std::size_t element_size) const {
  if (size_ % element_size != 0) {
    throw std::invalid_argument("RegisteredHostMemory::host_span: " + std::to_string(size_) +
                                " bytes are not a whole number of " + std::to_string(element_size) +
                                "-byte elements");
  }
}

// ---- RegisteredHostMemory ---------------------------------------------------------------

RegisteredHostMemory::RegisteredHostMemory(RegisteredHostMemory&& other) noexcept
    : RegisteredHostMemoryRef(std::exchange(other.data_, nullptr), std::exchange(other.size_, 0),
                              std::exchange(other.device_pointer_, 0),
                              std::exchange(other.flags_, 0)),
      context_(std::exchange(other.context_, nullptr)) {}

RegisteredHostMemory& RegisteredHostMemory::operator=(RegisteredHostMemory&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

RegisteredHostMemory::~RegisteredHostMemory() { close(); }

void RegisteredHostMemory::close() noexcept {
  if (data_ == nullptr) {
    return;
  }
  std::byte* const data = std::exchange(data_, nullptr);
  detail::destroy_in(context_, "cuMemHostUnregister", "RegisteredHostMemory",
                     [data] { return driver::raw::cuMemHostUnregister(data); });
  size_ = 0;
  device_pointer_ = 0;
  flags_ = 0;
  context_ = nullptr;
}

RegisteredHostMemory register_host_memory(std::span<std::byte> memory,
                                          const HostRegisterOptions& options) {
  require_memory(memory, "register_host_memory");
  const unsigned flags = options.flags();
  const detail::ScopedCurrentOrPrimary scope(0);
  driver::cuMemHostRegister(memory.data(), memory.size(), flags);
  RegisteredHostMemory registered(memory.data(), memory.size(), 0, flags,
                                  options.portable ? nullptr : scope.context());
  if (options.device_mapped) {
    // The owner exists already: a failure here unregisters the memory again.
    registered.device_pointer_ = driver::cuMemHostGetDevicePointer(memory.data(), 0);
  }
  return registered;
}

}  // namespace cuwrap
