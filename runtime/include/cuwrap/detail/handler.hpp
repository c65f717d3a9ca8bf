// detail::Handler: an installable handler (release failures, host-function exceptions)
// without std::function.
//
// <functional> adds about a third to the include-cost baseline (bench_header_compile) in every
// translation unit that includes it; error.hpp (included by every cuwrap header) needs a
// handler type, so it is this: a plain function pointer, or a function pointer with a
// `void*` user data for a handler that needs state. A lambda without captures converts.
#pragma once

#include <type_traits>

namespace cuwrap::detail {

/// A handler called with one `Arg`: a plain function, or a callback with user data.
template <class Arg>
class Handler {
 public:
  /// A handler with state: called with the argument and the `user_data` given.
  using Callback = void (*)(Arg value, void* user_data);

  /// Make an empty handler (installing it restores the default).
  Handler() noexcept = default;
  /// Make a handler that calls `callback(value, user_data)`.
  Handler(Callback callback, void* user_data) noexcept
      : callback_(callback), user_data_(user_data) {}
  /// Make a handler that calls `function(value)`: a plain function or a lambda without
  /// captures.
  template <class Function>
  requires std::is_convertible_v<Function, void (*)(Arg)> Handler(Function function)
  noexcept  // NOLINT(google-explicit-constructor)
      : function_(function) {}

  /// Return whether the handler calls something.
  explicit operator bool() const noexcept { return function_ != nullptr || callback_ != nullptr; }
  /// Call the handler with `value` (nothing when empty).
  void operator()(Arg value) const {
    if (function_ != nullptr) {
      function_(value);
    } else if (callback_ != nullptr) {
      callback_(value, user_data_);
    }
  }

 private:
  void (*function_)(Arg) = nullptr;
  Callback callback_ = nullptr;
  void* user_data_ = nullptr;
};

}  // namespace cuwrap::detail
