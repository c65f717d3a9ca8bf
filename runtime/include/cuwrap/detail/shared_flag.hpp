// detail::SharedFlag: a flag shared by copies, set and read from any thread: a memory
// resource's "still open", which the attribute views it hands out check before they
// reach the driver. What std::shared_ptr<std::atomic<bool>> would be, without <memory>
// and <atomic> in every translation unit that includes <cuwrap/memory_resource.hpp>
// (docs/performance.md, "Compile time of the headers"): a detail::Ref to a flag object
// that src/base/shared_flag.cpp defines.
#pragma once

#include <cuwrap/detail/ref.hpp>

namespace cuwrap::detail {

struct OpenFlag;
void ref_acquire(const OpenFlag* flag) noexcept;
void ref_release(const OpenFlag* flag) noexcept;

class SharedFlag {
 public:
  /// No flag: is_set() is true (a view of a handle the caller keeps valid).
  SharedFlag() noexcept = default;
  /// Return a new flag, set.
  static SharedFlag make();

  /// Return whether the flag is set (true without a flag).
  bool is_set() const noexcept;
  /// Clear the flag for every copy (nothing without a flag).
  void clear() noexcept;

 private:
  Ref<OpenFlag> flag_;
};

}  // namespace cuwrap::detail
