// Device::default_stream(): the legacy default stream.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>

namespace cuwrap {

StreamRef Device::default_stream() const {
  detail::ensure_current_context(ordinal_);
  return kLegacyDefaultStream;
}

}  // namespace cuwrap
