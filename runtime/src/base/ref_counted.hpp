// The bodies of the ref_acquire/ref_release pairs behind detail::Ref (see
// <cuwrap/detail/ref.hpp>): an implementation object derives from RefCounted, and its
// .cpp file defines the pair with these two, where the type is complete.
#pragma once

namespace cuwrap::detail {

/// Base of an implementation object shared through detail::Ref: the intrusive count,
/// one for the creator's reference.
struct RefCounted {
  mutable unsigned long ref_count = 1;  // NOLINT(google-runtime-int): the __atomic builtins' type
};

/// Add a reference to `object` (relaxed: a new reference is made from an existing one).
template <class T>
void acquire_counted(const T* object) noexcept {
  __atomic_add_fetch(&object->ref_count, 1UL, __ATOMIC_RELAXED);
}

/// Drop a reference to `object` and delete it with the last one (acquire-release, so
/// that every owner's writes happen before the destructor).
template <class T>
void release_counted(const T* object) noexcept {
  if (__atomic_sub_fetch(&object->ref_count, 1UL, __ATOMIC_ACQ_REL) == 0) {
    delete object;  // NOLINT(cppcoreguidelines-owning-memory)
  }
}

}  // namespace cuwrap::detail
