// The bodies of <cuwrap/jit_options.hpp>: out of line, so that a translation unit
// including the generated driver layer does not compile them (docs/performance.md,
// "Compile time of the headers").
#include <cuwrap/detail/jit_call.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/jit_options.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap {
namespace {

// The position of `option` in `options`, or `none` when absent.
std::size_t option_index(const std::vector<CUjit_option>& options, CUjit_option option,
                         std::size_t none) noexcept {
  const auto it = std::find(options.begin(), options.end(), option);
  return it == options.end() ? none : static_cast<std::size_t>(it - options.begin());
}

}  // namespace

namespace detail {

std::string jit_log_text(const char* buffer, std::size_t capacity, std::size_t filled) {
  if (buffer == nullptr || capacity == 0) {
    return {};
  }
  const std::size_t limit = std::min(capacity, filled == 0 ? capacity : filled);
  const void* nul = std::memchr(buffer, '\0', limit);
  return std::string(buffer, nul != nullptr ? static_cast<const char*>(nul) : buffer + limit);
}

JitCall::JitCall(std::span<const CUjit_option> options, std::span<void*> values, bool add_error_log)
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

JitCall::~JitCall() = default;

std::size_t JitCall::find(CUjit_option option) const noexcept {
  return option_index(options_, option, kNone);
}

void JitCall::write_back() noexcept {
  std::copy_n(own_values_.begin(), caller_values_.size(), caller_values_.begin());
}

std::string JitCall::error_log() noexcept {
  try {
    const std::size_t filled =
        error_size_index_ == kNone ? 0 : jit_slot_size(value_array()[error_size_index_]);
    return jit_log_text(error_buffer_, error_capacity_, filled);
  } catch (...) {  // no memory for the text: the status still says what failed
    return {};
  }
}

}  // namespace detail

namespace driver {

namespace {

std::size_t checked_size(std::size_t bytes, const char* what) {
  if (bytes == 0 || bytes > 0xFFFFFFFFu) {
    throw std::invalid_argument(std::string("JitOptions::") + what + ": bytes is " +
                                std::to_string(bytes) + "; a JIT log holds 1 to 4294967295 bytes");
  }
  return bytes;
}

}  // namespace

JitOptions& JitOptions::info_log(std::size_t bytes) {
  info_.assign(checked_size(bytes, "info_log"), '\0');
  put(CU_JIT_INFO_LOG_BUFFER, nullptr, nullptr);
  put(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, nullptr, nullptr);
  return *this;
}

JitOptions& JitOptions::error_log(std::size_t bytes) {
  error_.assign(checked_size(bytes, "error_log"), '\0');
  put(CU_JIT_ERROR_LOG_BUFFER, nullptr, nullptr);
  put(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, nullptr, nullptr);
  return *this;
}

JitOptions& JitOptions::wall_time() {
  put(CU_JIT_WALL_TIME, nullptr, nullptr);
  return *this;
}

std::string JitOptions::info_log() const {
  return log_of(info_, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
}

std::string JitOptions::error_log() const {
  return log_of(error_, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
}

float JitOptions::wall_time_ms() const noexcept {
  const std::size_t i = index(CU_JIT_WALL_TIME);
  float ms = 0;
  if (i != kNone) {
    // The driver overwrites the value itself with a float.
    std::memcpy(&ms, &values_[i], sizeof ms);
  }
  return ms;
}

std::span<const CUjit_option> JitOptions::options() const noexcept { return options_; }

std::span<void*> JitOptions::values_for_call() {
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

std::size_t JitOptions::index(CUjit_option option) const noexcept {
  return option_index(options_, option, kNone);
}

void JitOptions::put(CUjit_option option, void* value, const char* caller) {
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

std::string JitOptions::log_of(const std::vector<char>& buffer, CUjit_option size_option) const {
  const std::size_t i = index(size_option);
  const std::size_t filled = i == kNone ? 0 : detail::jit_slot_size(values_[i]);
  // Before any call the size slot holds nothing: the buffer is all NULs.
  return detail::jit_log_text(buffer.data(), buffer.size(), filled);
}

namespace {

// The C function's `void*` for read-only input (it never writes through it).
void* input_pointer(const void* data) noexcept { return const_cast<void*>(data); }

// `text` NUL-terminated: as it is when its last byte is a NUL, else a copy with one.
struct TerminatedText {
  explicit TerminatedText(std::string_view text) {
    if (text.empty() || text.back() != '\0') {
      copy.assign(text);
      copy.push_back('\0');
      text = copy;
    }
    view = text;
  }
  std::string copy;
  std::string_view view;
};

}  // namespace

void cuLinkAddData(CUlinkState state, CUjitInputType type, std::span<const std::byte> data,
                   const char* name, JitOptions& jit) {
  cuLinkAddData(state, type, input_pointer(data.data()), data.size(), name, jit);
}

void cuLinkAddData(CUlinkState state, CUjitInputType type, std::span<const std::byte> data,
                   const char* name) {
  cuLinkAddData(state, type, input_pointer(data.data()), data.size(), name, {}, {});
}

void cuLinkAddData(CUlinkState state, CUjitInputType type, std::string_view text, const char* name,
                   JitOptions& jit) {
  const TerminatedText terminated(text);
  cuLinkAddData(state, type, std::as_bytes(std::span(terminated.view)), name, jit);
}

void cuLinkAddData(CUlinkState state, CUjitInputType type, std::string_view text,
                   const char* name) {
  const TerminatedText terminated(text);
  cuLinkAddData(state, type, std::as_bytes(std::span(terminated.view)), name);
}

}  // namespace driver
}  // namespace cuwrap
