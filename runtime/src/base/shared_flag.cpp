// detail::SharedFlag's flag object: an intrusive count (detail::Ref) and the flag.
#include "base/ref_counted.hpp"

#include <cuwrap/detail/shared_flag.hpp>

#include <atomic>

namespace cuwrap::detail {

struct OpenFlag : RefCounted {
  std::atomic<bool> set{true};
};

void ref_acquire(const OpenFlag* flag) noexcept { acquire_counted(flag); }
void ref_release(const OpenFlag* flag) noexcept { release_counted(flag); }

SharedFlag SharedFlag::make() {
  SharedFlag made;
  made.flag_ = Ref<OpenFlag>::adopt(new OpenFlag);
  return made;
}

bool SharedFlag::is_set() const noexcept {
  return flag_.get() == nullptr || flag_.get()->set.load(std::memory_order_acquire);
}

void SharedFlag::clear() noexcept {
  if (flag_.get() != nullptr) {
    flag_.get()->set.store(false, std::memory_order_release);
  }
}

}  // namespace cuwrap::detail
