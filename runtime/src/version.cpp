// The installed driver's version and the version checks of the high-level layer.
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include <atomic>

namespace cuwrap {
namespace {

std::atomic<int> g_driver_version{0};  // 0 until read

}  // namespace

int driver_version() {
  int version = g_driver_version.load(std::memory_order_relaxed);
  if (version == 0) {
    version = driver::cuDriverGetVersion();
    g_driver_version.store(version, std::memory_order_relaxed);
  }
  return version;
}

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
