// The installed driver's version and the version checks of the high-level layer.
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

namespace cuwrap {

// The loader reads the version once, when it opens libcuda (it needs it to choose
// entry points), and keeps it.
int driver_version() { return detail::loaded_driver_version(); }

namespace detail {

void require_driver(int required, const char* feature) {
  const int installed = driver_version();
  if (installed < required) {
    throw UnsupportedError(feature, required, installed, "the installed driver");
  }
}

void throw_toolkit_too_old(int required, const char* feature) {
  throw UnsupportedError(feature, required, kBindingsCudaVersion,
                         "the toolkit cuwrap was built against");
}

}  // namespace detail
}  // namespace cuwrap
