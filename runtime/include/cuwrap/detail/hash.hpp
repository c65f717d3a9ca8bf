// The hash of cuwrap's handle types' std::hash specializations: a 64-bit mix of the
// handle's bits (the finaliser of SplitMix64), so that <cuwrap/device.hpp> and the others
// need not include <functional> (std::hash's specializations for integers and pointers
// come with it) for one line each. <string_view> declares std::hash for the
// specializations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cuwrap::detail {

/// Return a well-mixed hash of `bits`.
constexpr std::size_t hash_bits(std::uint64_t bits) noexcept {
  bits ^= bits >> 30;
  bits *= 0xbf58476d1ce4e5b9ULL;
  bits ^= bits >> 27;
  bits *= 0x94d049bb133111ebULL;
  bits ^= bits >> 31;
  return static_cast<std::size_t>(bits);
}

/// Return a well-mixed hash of the address `pointer`.
inline std::size_t hash_pointer(const void* pointer) noexcept {
  return hash_bits(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pointer)));
}

}  // namespace cuwrap::detail
