// detail::Ref<T>: shared ownership of an implementation object, without <memory>.
//
// Kernel, ObjectCode, Stream (for the buffers that keep its CUDA stream alive),
// GraphBuilder, the green-context types and GraphicsResource (with its mapping guards)
// share their implementation objects.
// std::shared_ptr would do, but <memory> costs every translation unit that includes
// cuwrap about 45% on the include-cost baseline (C++20's <memory> brings
// <atomic_wait>, <chrono> and more), and the public headers are kept cheap (see
// docs/performance.md, "Include cost"). So the count lives in the object (intrusive),
// and Ref calls two free functions found by argument-dependent lookup:
//
//   void ref_acquire(const Impl* object) noexcept;  // add a reference
//   void ref_release(const Impl* object) noexcept;  // drop one; delete on the last
//
// declared next to the forward declaration of each implementation type and defined in
// the .cpp file where the type is complete (runtime/src/base/ref_counted.hpp has the two
// bodies: a relaxed increment, an acquire-release decrement, as shared_ptr does).
#pragma once

#include <type_traits>

namespace cuwrap::detail {

/// A reference-counted pointer to an implementation object with an intrusive count.
///
/// Copy adds a reference, move transfers it, destruction drops it; all noexcept. A new
/// object starts with a count of one, which Ref::adopt takes over.
template <class T>
class Ref {
 public:
  /// Make a null Ref.
  constexpr Ref() noexcept = default;
  /// Take over the reference the caller holds on `object` (a new object's first one).
  static Ref adopt(T* object) noexcept {
    Ref ref;
    ref.object_ = object;
    return ref;
  }
  /// Share `other`'s object.
  Ref(const Ref& other) noexcept : object_(other.object_) {
    if (object_ != nullptr) {
      ref_acquire(object_);
    }
  }
  /// Take over `other`'s reference; `other` becomes null.
  Ref(Ref&& other) noexcept : object_(other.object_) { other.object_ = nullptr; }
  /// Share the object of a Ref to a less qualified type (Ref<T> to Ref<const T>).
  template <class U>
  requires(std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>) Ref(const Ref<U>& other)
  noexcept  // NOLINT(google-explicit-constructor)
      : object_(other.get()) {
    if (object_ != nullptr) {
      ref_acquire(object_);
    }
  }
  /// Take over the reference of a Ref to a less qualified type (Ref<T> to Ref<const T>).
  template <class U>
  requires(std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>) Ref(Ref<U>&& other)
  noexcept  // NOLINT(google-explicit-constructor)
      : object_(other.release()) {}
  /// Share `other`'s object instead of this one's.
  Ref& operator=(const Ref& other) noexcept {
    if (this != &other) {
      Ref copy(other);
      swap(copy);
    }
    return *this;
  }
  /// Take over `other`'s reference instead of this one's.
  Ref& operator=(Ref&& other) noexcept {
    Ref(static_cast<Ref&&>(other)).swap(*this);
    return *this;
  }
  /// Drop the reference.
  ~Ref() { reset(); }

  /// Drop the reference now; the Ref becomes null.
  void reset() noexcept {
    if (T* object = release(); object != nullptr) {
      ref_release(object);
    }
  }
  /// Return the object and become null without dropping the reference (the caller owns it).
  T* release() noexcept {
    T* object = object_;
    object_ = nullptr;
    return object;
  }
  /// Exchange the objects of this Ref and `other`.
  void swap(Ref& other) noexcept {
    T* object = object_;
    object_ = other.object_;
    other.object_ = object;
  }

  /// Return the object (may be null).
  T* get() const noexcept { return object_; }
  /// Return the object; the Ref must not be null.
  T& operator*() const noexcept { return *object_; }
  /// Return the object; the Ref must not be null.
  T* operator->() const noexcept { return object_; }
  /// Return whether the Ref holds an object.
  explicit operator bool() const noexcept { return object_ != nullptr; }
  /// Return whether both Refs hold the same object.
  friend bool operator==(const Ref& a, const Ref& b) noexcept { return a.object_ == b.object_; }
  /// Return whether `a` is null.
  friend bool operator==(const Ref& a, decltype(nullptr) /*null*/) noexcept {
    return a.object_ == nullptr;
  }

 private:
  T* object_ = nullptr;
};

/// Make a new `T` from `args` and return the Ref that owns its first reference.
template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>::adopt(new T(static_cast<Args&&>(args)...));
}

}  // namespace cuwrap::detail
