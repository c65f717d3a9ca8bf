// std::filesystem::path in cuwrap's signatures, without <filesystem>.
//
// A few functions take a `const std::filesystem::path&` (ObjectCode::from_file,
// Graph::debug_dot_print, FileProgramCache, the IPC socket paths). <filesystem> costs
// about half of the C headers' own parse time in every translation unit, so the public
// headers only forward-declare path (libstdc++'s <bits/fs_fwd.h>; other libraries get
// <filesystem>), and each such function has a twin template for string-like arguments
// (a literal, std::string, std::string_view): it matches them exactly, so a call with
// a string works without <filesystem> and is not ambiguous when the caller has
// included it; a std::filesystem::path argument still picks the path overload.
#pragma once

#if __has_include(<bits/fs_fwd.h>)
#include <bits/fs_fwd.h>
#else
#include <filesystem>
#endif

#include <string_view>
#include <type_traits>

namespace cuwrap::detail {

/// A string-like argument accepted where a std::filesystem::path is: a literal, a
/// `const char*`, std::string or std::string_view (not a path, which is not implicitly
/// convertible to std::string_view).
template <class T>
concept PathString = std::is_convertible_v<const T&, std::string_view>;

}  // namespace cuwrap::detail
