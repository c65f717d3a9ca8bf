// Test support: small predicates the tests assert with: text containment (messages,
// PTX, logs), the message of an expected exception, the ELF magic of CUBIN images, and the
// move-only ownership of handle types.
#pragma once

#include <cstring>
#include <span>
#include <string>
#include <type_traits>

namespace cuwrap::testing {

/// Return whether `text` contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Return the message of the `Exception` that `call()` throws, or "<nothing thrown>".
template <class Exception, class Call>
std::string thrown_message(Call&& call) {
  try {
    call();
  } catch (const Exception& e) {
    return e.what();
  }
  return "<nothing thrown>";
}

/// Return whether `code` starts with the ELF magic (a CUBIN, for instance).
inline bool is_elf(std::span<const char> code) {
  return code.size() > 4 && std::memcmp(code.data(),
                                        "\x7f"
                                        "ELF",
                                        4) == 0;
}

/// Satisfied by an owning handle type: copying neither constructs nor assigns it, and
/// moving does both without throwing.
template <class T>
concept NothrowMoveOnly =
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
    std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>;

}  // namespace cuwrap::testing
