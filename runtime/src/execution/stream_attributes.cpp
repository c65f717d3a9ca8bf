// StreamRef's attributes that need no memory: the synchronization policy and copying a
// stream's attributes (the access policy window, which takes a BufferRef, is defined
// with the memory concept). See cuwrap/stream.hpp.
#include "base/context_registry.hpp"
#include "execution/stream_use.hpp"

#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>

namespace cuwrap {
namespace {}  // namespace

CUsynchronizationPolicy StreamRef::synchronization_policy() const {
  const CUstream stream = handle_for("synchronization_policy");
  const detail::ContextUse use = detail::use_stream(*this, "Stream::synchronization_policy");
  return driver::cuStreamGetAttribute(stream, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY)
      .syncPolicy;
}

void StreamRef::set_synchronization_policy(CUsynchronizationPolicy policy) const {
  const CUstream stream = handle_for("set_synchronization_policy");
  switch (policy) {
    case CU_SYNC_POLICY_AUTO:
    case CU_SYNC_POLICY_SPIN:
    case CU_SYNC_POLICY_YIELD:
    case CU_SYNC_POLICY_BLOCKING_SYNC:
      break;
    default:
      throw std::invalid_argument("StreamRef::set_synchronization_policy: policy " +
                                  std::to_string(static_cast<int>(policy)) +
                                  " is no CU_SYNC_POLICY_* value");
  }
  const detail::ContextUse use = detail::use_stream(*this, "Stream::set_synchronization_policy");
  CUstreamAttrValue value{};
  value.syncPolicy = policy;
  driver::cuStreamSetAttribute(stream, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value);
}

void StreamRef::copy_attributes_from(StreamRef source) const {
  const CUstream destination = handle_for("copy_attributes_from");
  const CUstream from = source.handle_for("copy_attributes_from");
  const detail::ContextUse use = detail::use_stream(*this, "Stream::copy_attributes_from");
  const detail::ContextUse source_use = detail::use_stream(source, "Stream::copy_attributes_from");
  driver::cuStreamCopyAttributes(destination, from);
}

}  // namespace cuwrap
