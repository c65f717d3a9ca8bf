// detail::JitCall: how the typed forms of the driver's JIT calls (<cuwrap/driver.hpp>)
// pass their option arrays: a copy of the keys (the C functions take them as non-const),
// the caller's values (written back by the driver), and an error log of its own for a
// call whose caller asked for none, carried by the DriverError of a failure
// (DriverError::log()). Only the library's generated source, which compiles those
// typed forms, includes it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cuwrap::detail {

/// Throw the DriverError of a failed JIT call, carrying `error_log` (may be empty).
[[noreturn]] void throw_jit_error(CUresult code, const char* function, std::string error_log);

/// Return the NUL-terminated text in `buffer` of `capacity` bytes, at most `filled`
/// bytes of it (a JIT log buffer after the call; the driver writes back how much it filled).
std::string jit_log_text(const char* buffer, std::size_t capacity, std::size_t filled);

/// Return the `unsigned int` a JIT option's `void*` value slot holds.
inline std::size_t jit_slot_size(void* slot) noexcept {
  return static_cast<std::size_t>(
      static_cast<unsigned int>(reinterpret_cast<std::uintptr_t>(slot)));
}

/// One JIT call's option arrays, as the typed forms pass them (see the file comment).
class JitCall {
 public:
  /// Bytes of the error log added to a call whose caller asked for none.
  static constexpr std::size_t kErrorLogBytes = 16384;

  /// Take the caller's `options` (copied) and `values` (passed on, or copied and written
  /// back when a log is added); with `add_error_log`, add an error log unless `options`
  /// has one. `values` is as long as `options` (the typed forms check it).
  JitCall(std::span<const CUjit_option> options, std::span<void*> values, bool add_error_log);
  JitCall(const JitCall&) = delete;
  JitCall& operator=(const JitCall&) = delete;
  ~JitCall();

  /// Return the number of options to pass.
  unsigned int count() const noexcept { return static_cast<unsigned int>(options_.size()); }
  /// Return the options to pass (a copy: the C functions take non-const keys).
  CUjit_option* options() noexcept { return options_.empty() ? nullptr : options_.data(); }
  /// Return the values to pass: the caller's, or the copy with the added log.
  void** values() noexcept { return value_array(); }

  /// Write the values back to the caller's array and throw DriverError (carrying the
  /// error log) unless `code` is CUDA_SUCCESS.
  void check(CUresult code, const char* function) {
    if (own_) {
      write_back();
    }
    if (code != CUDA_SUCCESS) [[unlikely]] {
      throw_jit_error(code, function, error_log());
    }
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  std::size_t find(CUjit_option option) const noexcept;
  void** value_array() noexcept {
    if (own_ || !own_values_.empty()) {
      return own_values_.data();
    }
    return caller_values_.empty() ? nullptr : caller_values_.data();
  }
  void write_back() noexcept;
  std::string error_log() noexcept;

  std::vector<CUjit_option> options_;
  std::span<void*> caller_values_;
  std::vector<void*> own_values_;
  std::vector<char> own_log_;
  bool own_ = false;
  std::size_t error_index_ = kNone;
  std::size_t error_size_index_ = kNone;
  const char* error_buffer_ = nullptr;
  std::size_t error_capacity_ = 0;
};

}  // namespace cuwrap::detail
