// Device::default_stream(): the legacy default stream as a non-owning Stream.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>

namespace cuwrap {

Stream Device::default_stream() const {
  detail::ensure_current_context(ordinal_);
  return Stream::from_handle(CU_STREAM_LEGACY);
}

}  // namespace cuwrap
