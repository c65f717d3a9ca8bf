// StreamRef::set_access_policy_window and reset_access_policy_window: the L2 persistence
// window of a stream, over a BufferRef (hence here, with the memory concept). See
// cuwrap/stream.hpp.
#include "base/compat.hpp"
#include "base/context_registry.hpp"
#include "execution/stream_use.hpp"

#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>

namespace cuwrap {
namespace {

bool is_access_property(CUaccessProperty property) {
  return property == CU_ACCESS_PROPERTY_NORMAL || property == CU_ACCESS_PROPERTY_STREAMING ||
         property == CU_ACCESS_PROPERTY_PERSISTING;
}

void set_window(CUstream stream, CUdeviceptr base, std::size_t bytes, float hit_ratio,
                CUaccessProperty hit, CUaccessProperty miss) {
  CUstreamAttrValue value{};
  value.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(base);
  value.accessPolicyWindow.num_bytes = bytes;
  value.accessPolicyWindow.hitRatio = hit_ratio;
  value.accessPolicyWindow.hitProp = hit;
  value.accessPolicyWindow.missProp = miss;
  driver::cuStreamSetAttribute(stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value);
}

}  // namespace

void StreamRef::set_access_policy_window(BufferRef window, float hit_ratio, CUaccessProperty hit,
                                         CUaccessProperty miss) const {
  const CUstream stream = handle_for("set_access_policy_window");
  if (window.size() == 0) {
    throw std::invalid_argument(
        "StreamRef::set_access_policy_window: window is empty (use "
        "reset_access_policy_window() to remove the window)");
  }
  // Negated so that NaN is refused too.
  if (!(hit_ratio >= 0.0F && hit_ratio <= 1.0F)) {
    throw std::invalid_argument("StreamRef::set_access_policy_window: hit_ratio " +
                                std::to_string(hit_ratio) + " is outside [0, 1]");
  }
  if (!is_access_property(hit)) {
    throw std::invalid_argument("StreamRef::set_access_policy_window: hit " +
                                std::to_string(static_cast<int>(hit)) +
                                " is no CU_ACCESS_PROPERTY_* value");
  }
  if (!is_access_property(miss) || miss == CU_ACCESS_PROPERTY_PERSISTING) {
    throw std::invalid_argument("StreamRef::set_access_policy_window: miss " +
                                std::to_string(static_cast<int>(miss)) +
                                " must be CU_ACCESS_PROPERTY_STREAMING or _NORMAL");
  }
  const detail::ContextUse use = detail::use_stream(*this, "Stream::set_access_policy_window");
  const Device owner = device();
  const auto limit =
      static_cast<std::size_t>(owner.attribute(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE));
  if (window.size() > limit) {
    throw std::invalid_argument("StreamRef::set_access_policy_window: window of " +
                                std::to_string(window.size()) + " bytes is larger than device " +
                                std::to_string(owner.device_id()) +
                                "'s max_access_policy_window_size " + std::to_string(limit));
  }
  set_window(stream, window.handle(), window.size(), hit_ratio, hit, miss);
}

void StreamRef::reset_access_policy_window() const {
  const CUstream stream = handle_for("reset_access_policy_window");
  const detail::ContextUse use = detail::use_stream(*this, "Stream::reset_access_policy_window");
  set_window(stream, 0, 0, 0.0F, CU_ACCESS_PROPERTY_NORMAL, CU_ACCESS_PROPERTY_NORMAL);
}

}  // namespace cuwrap
