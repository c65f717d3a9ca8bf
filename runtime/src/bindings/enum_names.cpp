#include <cuwrap/detail/enum_names.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>

namespace cuwrap::detail {

std::string_view unknown_enum_value(const char* type, long long value) noexcept {
  thread_local char text[128];
  const int n = std::snprintf(text, sizeof text, "%s(%lld)", type, value);
  return {text, n < 0 ? 0 : std::min(static_cast<std::size_t>(n), sizeof text - 1)};
}

}  // namespace cuwrap::detail
