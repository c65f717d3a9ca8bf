// std::filesystem::path in cuwrap's signatures, without <filesystem>.
//
// A few functions take a `const std::filesystem::path&` (ObjectCode::from_file,
// Graph::debug_dot_print, FileProgramCache, the IPC socket paths). <filesystem> costs
// about 65% on the include-cost baseline (bench_header_compile) in every translation unit, and even
// libstdc++'s forward-declaring <bits/fs_fwd.h> adds a fifth (it brings <system_error>
// and the clocks of <chrono>), so the public headers declare path exactly as
// <bits/fs_fwd.h> does, with libstdc++'s own namespace macros (the inline, ABI-tagged
// __cxx11 namespace included, so that a later <filesystem> agrees). Other standard
// libraries get <bits/fs_fwd.h> where it exists, else <filesystem>.
//
// Each such function has a twin template for string-like arguments (a literal,
// std::string, std::string_view): it matches them exactly, so a call with a string
// works without <filesystem> and is not ambiguous when the caller has included it; a
// std::filesystem::path argument still picks the path overload.
#pragma once

#include <string_view>  // also brings <bits/c++config.h> with libstdc++'s macros

#if defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI) && \
    defined(_GLIBCXX_BEGIN_NAMESPACE_VERSION) && defined(_GLIBCXX_VISIBILITY)
// NOLINTBEGIN: the declaration of <bits/fs_fwd.h>, in libstdc++'s own terms
// (clang-format is off here: these macros confuse its namespace comments)
// clang-format off
namespace std _GLIBCXX_VISIBILITY(default) {
_GLIBCXX_BEGIN_NAMESPACE_VERSION
namespace filesystem {
#if _GLIBCXX_USE_CXX11_ABI
inline namespace __cxx11 __attribute__((__abi_tag__("cxx11"))) {
class path;
}  // namespace __cxx11
#else
class path;
#endif
}  // namespace filesystem
_GLIBCXX_END_NAMESPACE_VERSION
}  // namespace std
// clang-format on
// NOLINTEND
#elif __has_include(<bits/fs_fwd.h>)
#include <bits/fs_fwd.h>
#else
#include <filesystem>
#endif

#include <type_traits>

namespace cuwrap::detail {

/// A string-like argument accepted where a std::filesystem::path is: a literal, a
/// `const char*`, std::string or std::string_view (not a path, which is not implicitly
/// convertible to std::string_view).
template <class T>
concept PathString = std::is_convertible_v<const T&, std::string_view>;

}  // namespace cuwrap::detail
