// Compiled by test_toolkits (never built into a test): what one generated header declares.
// CUWRAP_PROBE_HEADER is the header under test, CUWRAP_PROBE_TYPED 1 when it must declare
// the typed forms and 0 when it must not. Each probe function below adds a template
// overload; a call picks the typed form when one is declared (a non-template beats a
// template of the same match) and the probe's otherwise, so the static_asserts fail in
// either direction.
#include CUWRAP_PROBE_HEADER

#include <type_traits>

namespace cuwrap_probe {
struct NotDeclared {};
template <class... Args>
NotDeclared cuCtxGetCurrent(Args...);
template <class... Args>
NotDeclared nvrtcVersion(Args...);
template <class... Args>
NotDeclared nvJitLinkVersion(Args...);
}  // namespace cuwrap_probe

namespace cuwrap::driver {
using cuwrap_probe::cuCtxGetCurrent;
}  // namespace cuwrap::driver
namespace cuwrap::nvrtc {
using cuwrap_probe::nvrtcVersion;
}  // namespace cuwrap::nvrtc
namespace cuwrap::nvjitlink {
using cuwrap_probe::nvJitLinkVersion;
}  // namespace cuwrap::nvjitlink

constexpr bool kTyped = CUWRAP_PROBE_TYPED != 0;

// The raw forms are declared by every header of the split but the enums one.
#if defined(CUWRAP_PROBE_DRIVER)
static_assert(std::is_same_v<decltype(cuwrap::driver::cuCtxGetCurrent()), CUcontext> == kTyped,
              "typed driver forms: declared by driver.hpp only");
#if !defined(CUWRAP_PROBE_ENUMS)
static_assert(std::is_same_v<decltype(cuwrap::driver::raw::cuCtxGetCurrent(nullptr)), CUresult>);
#endif
#endif
#if defined(CUWRAP_PROBE_NVRTC)
static_assert(std::is_same_v<decltype(cuwrap::nvrtc::nvrtcVersion()), cuwrap_probe::NotDeclared> !=
                  kTyped,
              "typed NVRTC forms: declared by nvrtc.hpp only");
#if !defined(CUWRAP_PROBE_ENUMS)
static_assert(
    std::is_same_v<decltype(cuwrap::nvrtc::raw::nvrtcVersion(nullptr, nullptr)), nvrtcResult>);
#endif
#endif
#if defined(CUWRAP_PROBE_NVJITLINK)
static_assert(
    std::is_same_v<decltype(cuwrap::nvjitlink::nvJitLinkVersion()), cuwrap_probe::NotDeclared> !=
        kTyped,
    "typed nvJitLink forms: declared by nvjitlink.hpp only");
#if !defined(CUWRAP_PROBE_ENUMS)
static_assert(std::is_same_v<decltype(cuwrap::nvjitlink::raw::nvJitLinkVersion(nullptr, nullptr)),
                             nvJitLinkResult>);
#endif
#endif
