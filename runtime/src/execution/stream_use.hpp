// Private to the sources that check the stream an operation runs on (execution/ and the
// concepts after it): the ContextUse of a stream.
#pragma once

#include "base/context_registry.hpp"

#include <cuwrap/stream.hpp>

namespace cuwrap::detail {

/// The check for the stream `operation` runs on (a default stream checks nothing).
inline ContextUse use_stream(StreamRef stream, const char* operation) {
  const ContextKey key = stream_context_key(stream);
  return {key.context, key.id, "Stream", reinterpret_cast<const void*>(stream.handle()), operation};
}

}  // namespace cuwrap::detail
