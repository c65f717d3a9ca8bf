// The owning handle of the generated layer: cuwrap::driver::unique_handle<H> (an alias of
// detail::unique_handle<H, handle_release<H>>, which <cuwrap/driver.hpp> defines for each
// handle type cuda.h creates and destroys in pairs) and cuwrap::driver::make_unique(h).
//
// \code
//   cuwrap::driver::unique_handle<CUmodule> module =
//       cuwrap::driver::make_unique(cuwrap::driver::cuModuleLoadData(image));
//   CUfunction fn = cuwrap::driver::cuModuleGetFunction(module.get(), "k");
// \endcode
#pragma once

#include <utility>

namespace cuwrap::detail {

/// Own one handle of type `H`, released with `Release::release(h)` (noexcept) when this
/// ends, unless it is null. Move-only, like std::unique_ptr.
template <class H, class Release>
class unique_handle {  // NOLINT(readability-identifier-naming): API.md 5.6 (std::unique_ptr's
                       // style)
 public:
  /// Own nothing.
  unique_handle() noexcept = default;
  /// Own `handle` (null: nothing).
  explicit unique_handle(H handle) noexcept : handle_(handle) {}
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;
  /// Take what `other` owns; `other` owns nothing after.
  unique_handle(unique_handle&& other) noexcept : handle_(std::exchange(other.handle_, H{})) {}
  /// Release what this owns, then take what `other` owns.
  unique_handle& operator=(unique_handle&& other) noexcept {
    if (this != &other) {
      reset(std::exchange(other.handle_, H{}));
    }
    return *this;
  }
  /// Release the handle (a failure goes to the release-failure handler; never throws).
  ~unique_handle() { reset(); }

  /// Return the handle (still owned).
  H get() const noexcept { return handle_; }
  /// Return true when a handle is owned.
  explicit operator bool() const noexcept { return handle_ != H{}; }
  /// Give up ownership and return the handle, which the caller now releases.
  [[nodiscard]] H release() noexcept { return std::exchange(handle_, H{}); }
  /// Release the handle owned, if any, and own `handle` instead.
  void reset(H handle = H{}) noexcept {
    const H old = std::exchange(handle_, handle);
    if (old != H{}) {
      Release::release(old);
    }
  }

 private:
  H handle_{};
};

}  // namespace cuwrap::detail
