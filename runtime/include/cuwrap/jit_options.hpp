// JIT options of the driver's JIT calls (cuModuleLoadDataEx, cuLinkCreate, cuLinkAddData,
// cuLinkAddFile, cuLibraryLoadData, cuLibraryLoadFromFile), in and out.
//
// cuwrap::driver::JitOptions sets options by enum with typed values and asks for the info
// and error logs and the wall time, which it reads back after the call; the typed forms
// of <cuwrap/driver.hpp> take it in place of the two option arrays. detail::JitCall is
// what those typed forms pass the arrays through: a copy of the keys (the C functions
// take them as non-const), the caller's values (written back by the driver), and an
// error log of its own for a call whose caller asked for none, carried by the DriverError
// of a failure (DriverError::error_log()).
#pragma once

#include <cuda.h>
#include <cuwrap/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace cuwrap {
namespace detail {

/// Throw the DriverError of a failed JIT call, carrying `error_log` (may be empty).
[[noreturn]] void throw_jit_error(CUresult code, const char* function, std::string error_log);

/// Return the NUL-terminated text in `buffer` of `capacity` bytes, at most `filled`
/// bytes of it (a JIT log buffer after the call; the driver writes back how much it filled).
inline std::string jit_log_text(const char* buffer, std::size_t capacity, std::size_t filled) {
  if (buffer == nullptr || capacity == 0) {
    return {};
  }
  const std::size_t limit = std::min(capacity, filled == 0 ? capacity : filled);
  const void* nul = std::memchr(buffer, '\0', limit);
  return std::string(buffer, nul != nullptr ? static_cast<const char*>(nul) : buffer + limit);
}

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
  JitCall(std::span<const CUjit_option> options, std::span<void*> values, bool add_error_log)
      : options_(options.begin(), options.end()), caller_values_(values) {
    error_index_ = find(CU_JIT_ERROR_LOG_BUFFER);
    if (error_index_ == kNone && add_error_log) {
      own_log_.assign(kErrorLogBytes, '\0');
      own_values_.assign(values.begin(), values.end());
      error_index_ = options_.size();
      options_.push_back(CU_JIT_ERROR_LOG_BUFFER);
      own_values_.push_back(own_log_.data());
      options_.push_back(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
      own_values_.push_back(reinterpret_cast<void*>(static_cast<std::uintptr_t>(own_log_.size())));
      own_ = true;
    }
    if (error_index_ != kNone) {
      error_buffer_ = static_cast<const char*>(value_array()[error_index_]);
      error_size_index_ = find(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
      error_capacity_ =
          error_size_index_ == kNone ? 0 : jit_slot_size(value_array()[error_size_index_]);
    }
  }
  JitCall(const JitCall&) = delete;
  JitCall& operator=(const JitCall&) = delete;
  ~JitCall() = default;

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
      std::copy_n(own_values_.begin(), caller_values_.size(), caller_values_.begin());
    }
    if (code != CUDA_SUCCESS) [[unlikely]] {
      throw_jit_error(code, function, error_log());
    }
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  std::size_t find(CUjit_option option) const noexcept {
    const auto it = std::find(options_.begin(), options_.end(), option);
    return it == options_.end() ? kNone : static_cast<std::size_t>(it - options_.begin());
  }
  void** value_array() noexcept {
    if (own_ || !own_values_.empty()) {
      return own_values_.data();
    }
    return caller_values_.empty() ? nullptr : caller_values_.data();
  }
  std::string error_log() noexcept {
    try {
      const std::size_t filled =
          error_size_index_ == kNone ? 0 : jit_slot_size(value_array()[error_size_index_]);
      return jit_log_text(error_buffer_, error_capacity_, filled);
    } catch (...) {  // no memory for the text: the status still says what failed
      return {};
    }
  }

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

}  // namespace detail

namespace driver {

/// JIT options in and out, for the typed forms of cuModuleLoadDataEx, cuLinkCreate,
/// cuLinkAddData, cuLinkAddFile, cuLibraryLoadData and cuLibraryLoadFromFile.
///
/// \code
///   cuwrap::driver::JitOptions jit;
///   jit.set(CU_JIT_MAX_REGISTERS, 32u);
///   jit.info_log(8192);
///   jit.error_log(8192);
///   jit.wall_time();
///   CUmodule m = cuwrap::driver::cuModuleLoadDataEx(image, jit);
///   std::cout << jit.info_log() << " in " << jit.wall_time_ms() << " ms\n";
/// \endcode
///
/// The driver writes the logs and the wall time while the call runs. cuLinkCreate keeps
/// the values for the link state's life: a JitOptions given to it must outlive the link
/// state and stay unchanged until cuLinkDestroy; its logs fill as inputs are added and
/// the link completes.
class JitOptions {
 public:
  /// Set `option` to `value` (an integer, an enumerator or a pointer, as the option's
  /// documentation types it; a later set of the same option replaces it).
  ///
  /// The logs and the wall time have their own calls (info_log(bytes), error_log(bytes),
  /// wall_time()): setting those options here throws std::invalid_argument.
  template <class T>
  JitOptions& set(CUjit_option option, T value) {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>,
                  "a JIT option's value is an integer, an enumerator or a pointer");
    if constexpr (std::is_pointer_v<T>) {
      put(option, const_cast<void*>(static_cast<const void*>(value)), "set");
    } else {
      put(option,
          reinterpret_cast<void*>(static_cast<std::uintptr_t>(static_cast<std::uint64_t>(value))),
          "set");
    }
    return *this;
  }

  /// Ask for the informational log, `bytes` long (including its NUL); read it with info_log().
  JitOptions& info_log(std::size_t bytes) {
    info_.assign(checked_size(bytes, "info_log"), '\0');
    put(CU_JIT_INFO_LOG_BUFFER, nullptr, nullptr);
    put(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, nullptr, nullptr);
    return *this;
  }
  /// Ask for the error log, `bytes` long (including its NUL); read it with error_log().
  JitOptions& error_log(std::size_t bytes) {
    error_.assign(checked_size(bytes, "error_log"), '\0');
    put(CU_JIT_ERROR_LOG_BUFFER, nullptr, nullptr);
    put(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, nullptr, nullptr);
    return *this;
  }
  /// Ask for the wall time the compiler and linker spent; read it with wall_time_ms().
  JitOptions& wall_time() {
    put(CU_JIT_WALL_TIME, nullptr, nullptr);
    return *this;
  }

  /// Return the informational log of the last call ("" if none was asked for or written).
  std::string info_log() const { return log_of(info_, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES); }
  /// Return the error log of the last call ("" if none was asked for or written).
  std::string error_log() const { return log_of(error_, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES); }
  /// Return the wall time of the last call in milliseconds (0 if wall_time() was not asked for).
  float wall_time_ms() const noexcept {
    const std::size_t i = index(CU_JIT_WALL_TIME);
    float ms = 0;
    if (i != kNone) {
      // The driver overwrites the value itself with a float.
      std::memcpy(&ms, &values_[i], sizeof ms);
    }
    return ms;
  }

  /// Return the options set, in order.
  std::span<const CUjit_option> options() const noexcept { return options_; }
  /// Return the values, made ready for one call: the log buffers and their sizes set
  /// anew (the driver overwrote the sizes with what it filled), the wall time cleared.
  std::span<void*> values_for_call() {
    for (std::size_t i = 0; i < options_.size(); ++i) {
      switch (options_[i]) {
        case CU_JIT_INFO_LOG_BUFFER:
          std::fill(info_.begin(), info_.end(), '\0');
          values_[i] = info_.data();
          break;
        case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
          values_[i] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(info_.size()));
          break;
        case CU_JIT_ERROR_LOG_BUFFER:
          std::fill(error_.begin(), error_.end(), '\0');
          values_[i] = error_.data();
          break;
        case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
          values_[i] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(error_.size()));
          break;
        case CU_JIT_WALL_TIME:
          values_[i] = nullptr;
          break;
        default:
          break;
      }
    }
    return values_;
  }
  /// Return the number of options set.
  std::size_t size() const noexcept { return options_.size(); }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  static std::size_t checked_size(std::size_t bytes, const char* what) {
    if (bytes == 0 || bytes > 0xFFFFFFFFu) {
      throw std::invalid_argument(std::string("JitOptions::") + what + ": bytes is " +
                                  std::to_string(bytes) +
                                  "; a JIT log holds 1 to 4294967295 bytes");
    }
    return bytes;
  }
  std::size_t index(CUjit_option option) const noexcept {
    const auto it = std::find(options_.begin(), options_.end(), option);
    return it == options_.end() ? kNone : static_cast<std::size_t>(it - options_.begin());
  }
  // `caller`: the public call setting it (its options managed by info_log, error_log
  // and wall_time are refused there); nullptr for those calls themselves.
  void put(CUjit_option option, void* value, const char* caller) {
    if (caller != nullptr &&
        (option == CU_JIT_INFO_LOG_BUFFER || option == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ||
         option == CU_JIT_ERROR_LOG_BUFFER || option == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES ||
         option == CU_JIT_WALL_TIME)) {
      throw std::invalid_argument("JitOptions::" + std::string(caller) + ": option " +
                                  std::to_string(static_cast<int>(option)) +
                                  " is a log or the wall time: ask with info_log(bytes), "
                                  "error_log(bytes) or wall_time()");
    }
    const std::size_t i = index(option);
    if (i != kNone) {
      values_[i] = value;
      return;
    }
    options_.push_back(option);
    values_.push_back(value);
  }
  std::string log_of(const std::vector<char>& buffer, CUjit_option size_option) const {
    const std::size_t i = index(size_option);
    const std::size_t filled = i == kNone ? 0 : detail::jit_slot_size(values_[i]);
    // Before any call the size slot holds nothing: the buffer is all NULs.
    return detail::jit_log_text(buffer.data(), buffer.size(), filled);
  }

  std::vector<CUjit_option> options_;
  std::vector<void*> values_;
  std::vector<char> info_;
  std::vector<char> error_;
};

}  // namespace driver
}  // namespace cuwrap
