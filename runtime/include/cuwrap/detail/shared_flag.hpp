// detail::SharedFlag: a flag shared by copies, set and read from any thread: a memory
// resource's "still open", which the attribute views it hands out check before they
// reach the driver. What std::shared_ptr<std::atomic<bool>> would be, without <memory>
// and <atomic> in every translation unit that includes <cuwrap/memory_resource.hpp>
// (docs/performance.md, "Compile time of the headers"): the count and the flag live in a
// block that src/core/shared_flag.cpp allocates and frees.
#pragma once

namespace cuwrap::detail {

class SharedFlag {
 public:
  /// No flag: is_set() is true (a view of a handle the caller keeps valid).
  SharedFlag() noexcept = default;
  /// Return a new flag, set.
  static SharedFlag make();
  SharedFlag(const SharedFlag& other) noexcept;
  SharedFlag& operator=(const SharedFlag& other) noexcept;
  SharedFlag(SharedFlag&& other) noexcept : block_(other.block_) { other.block_ = nullptr; }
  SharedFlag& operator=(SharedFlag&& other) noexcept;
  ~SharedFlag();

  /// Return whether the flag is set (true without a flag).
  bool is_set() const noexcept;
  /// Clear the flag for every copy (nothing without a flag).
  void clear() noexcept;

 private:
  struct Block;
  explicit SharedFlag(Block* block) noexcept : block_(block) {}
  void release() noexcept;

  Block* block_ = nullptr;
};

}  // namespace cuwrap::detail
