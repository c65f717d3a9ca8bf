// Support for the generated to_string() of the CUDA enums (generated/src/*.cpp).
#pragma once

#include <string_view>

namespace cuwrap::detail {

/// Spell a value that no enumerator names, e.g. "CUresult(12345)". The text lives in a
/// thread-local buffer, valid until this thread formats the next unknown value.
std::string_view unknown_enum_value(const char* type, long long value) noexcept;

}  // namespace cuwrap::detail
