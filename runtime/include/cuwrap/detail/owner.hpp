// detail::move_assign: the one move-assignment of every owner (docs/ownership.md).
//
// An owner's move-assignment releases what the owner holds, then takes the other's state
// exactly as its move constructor does, leaving the other closed. Each owner used to write
// that by hand, member by member, where a member added later could be moved by the
// constructor and forgotten by the assignment. Here it is written once: the owner is
// destroyed (an owner's destructor is its close(): it releases and never throws) and made
// again in the same storage by its move constructor, so the constructor is the only place
// that knows the members.
//
// The restriction that comes with it: `self` is a complete object, an array element or a
// member, never a base-class subobject or a [[no_unique_address]] member. Only then does
// the new object transparently replace the old one (C++20 [basic.life]/8), so that `self`,
// `this` and every pointer to the owner name the new object. No cuwrap owner is used as a
// base class; a class derived from one defines its own move-assignment.
#pragma once

#include <new>
#include <type_traits>

namespace cuwrap::detail {

/// Release what `self` owns, then take over what `other` owns, as `Owner`'s move
/// constructor does; `other` is left closed. Self-assignment does nothing.
///
/// An owner's move-assignment is this one line:
/// \code
///   Stream& Stream::operator=(Stream&& other) noexcept {
///     return detail::move_assign(*this, static_cast<Stream&&>(other));
///   }
/// \endcode
template <class Owner>
Owner& move_assign(Owner& self, Owner&& other) noexcept {
  static_assert(std::is_nothrow_move_constructible_v<Owner>,
                "an owner's move constructor must not throw: move_assign has already "
                "released the old state when it runs");
  static_assert(std::is_nothrow_destructible_v<Owner>, "an owner's destructor must not throw");
  if (&self != &other) {
    self.~Owner();
    ::new (static_cast<void*>(&self)) Owner(static_cast<Owner&&>(other));
  }
  return self;
}

}  // namespace cuwrap::detail
