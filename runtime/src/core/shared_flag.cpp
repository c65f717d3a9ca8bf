// detail::SharedFlag's block: a reference count and the flag, both atomic.
#include <cuwrap/detail/shared_flag.hpp>

#include <atomic>
#include <utility>

namespace cuwrap::detail {

struct SharedFlag::Block {
  std::atomic<long> references{1};
  std::atomic<bool> set{true};
};

SharedFlag SharedFlag::make() { return SharedFlag(new Block); }

SharedFlag::SharedFlag(const SharedFlag& other) noexcept : block_(other.block_) {
  if (block_ != nullptr) {
    block_->references.fetch_add(1, std::memory_order_relaxed);
  }
}

SharedFlag& SharedFlag::operator=(const SharedFlag& other) noexcept {
  if (this != &other) {
    SharedFlag copy(other);
    std::swap(block_, copy.block_);
  }
  return *this;
}

SharedFlag& SharedFlag::operator=(SharedFlag&& other) noexcept {
  if (this != &other) {
    release();
    block_ = std::exchange(other.block_, nullptr);
  }
  return *this;
}

SharedFlag::~SharedFlag() { release(); }

void SharedFlag::release() noexcept {
  if (block_ != nullptr && block_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete block_;
  }
  block_ = nullptr;
}

bool SharedFlag::is_set() const noexcept {
  return block_ == nullptr || block_->set.load(std::memory_order_acquire);
}

void SharedFlag::clear() noexcept {
  if (block_ != nullptr) {
    block_->set.store(false, std::memory_order_release);
  }
}

}  // namespace cuwrap::detail
