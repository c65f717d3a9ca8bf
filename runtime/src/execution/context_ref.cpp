// ContextRef and ScopedCurrentContext. See cuwrap/context.hpp.
#include "base/compat.hpp"
#include "execution/green_contexts.hpp"

#include <cuwrap/context.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace cuwrap {

ContextRef::ContextRef(CUcontext handle) : handle_(handle) {
  if (handle == nullptr) {
    throw std::invalid_argument(
        "ContextRef: the CUcontext is null (use ContextRef::current() for the current one)");
  }
}

std::optional<ContextRef> ContextRef::current() {
  const CUcontext context = detail::current_context();
  if (context == nullptr) {
    return std::nullopt;
  }
  return ContextRef(context);
}

CUcontext ContextRef::handle_for(const char* operation) const {
  if (handle_ == nullptr) {
    throw std::logic_error(std::string("Context::") + operation + " on a closed Context");
  }
  return handle_;
}

Device ContextRef::device() const {
  return Device(detail::device_of_context(handle_for("device")));
}

bool ContextRef::is_green() const { return detail::is_live_green_context(handle_for("is_green")); }

void ContextRef::sync() const { detail::context_synchronize(handle_for("sync")); }

std::size_t ContextRef::limit(CUlimit limit) const {
  const detail::ScopedContext scope(handle_for("limit"));
  return driver::cuCtxGetLimit(limit);
}

void ContextRef::set_limit(CUlimit limit, std::size_t value) const {
  const detail::ScopedContext scope(handle_for("set_limit"));
  driver::cuCtxSetLimit(limit, value);
}

CUfunc_cache ContextRef::cache_config() const {
  const detail::ScopedContext scope(handle_for("cache_config"));
  return driver::cuCtxGetCacheConfig();
}

void ContextRef::set_cache_config(CUfunc_cache config) const {
  const CUcontext context = handle_for("set_cache_config");
  switch (config) {
    case CU_FUNC_CACHE_PREFER_NONE:
    case CU_FUNC_CACHE_PREFER_SHARED:
    case CU_FUNC_CACHE_PREFER_L1:
    case CU_FUNC_CACHE_PREFER_EQUAL:
      break;
    default:
      throw std::invalid_argument("ContextRef::set_cache_config: config " +
                                  std::to_string(static_cast<int>(config)) +
                                  " is no CU_FUNC_CACHE_PREFER_* value");
  }
  const detail::ScopedContext scope(context);
  driver::cuCtxSetCacheConfig(config);
}

StreamPriorityRange ContextRef::stream_priority_range() const {
  const detail::ScopedContext scope(handle_for("stream_priority_range"));
  const auto [least, greatest] = driver::cuCtxGetStreamPriorityRange();
  return {.least = least, .greatest = greatest};
}

unsigned ContextRef::flags() const {
  const detail::ScopedContext scope(handle_for("flags"));
  return driver::cuCtxGetFlags();
}

ScopedCurrentContext ContextRef::make_current() const {
  const CUcontext context = handle_for("make_current");
  detail::ensure_driver_initialized();
  driver::cuCtxPushCurrent(context);
  return ScopedCurrentContext(context);
}

void ContextRef::set_current() const {
  const CUcontext context = handle_for("set_current");
  detail::ensure_driver_initialized();
  driver::cuCtxSetCurrent(context);
}

ContextRef ContextRef::push() const {
  const CUcontext context = handle_for("push");
  detail::ensure_driver_initialized();
  driver::cuCtxPushCurrent(context);
  return *this;
}

ContextRef ContextRef::pop() {
  detail::ensure_driver_initialized();
  if (detail::current_context() == nullptr) {
    throw std::logic_error(
        "ContextRef::pop: no context is current on this thread (nothing to pop)");
  }
  return ContextRef(driver::cuCtxPopCurrent());
}

ScopedCurrentContext::~ScopedCurrentContext() {
  if (context_ == nullptr) {
    return;
  }
  CUcontext popped = nullptr;
  const CUresult status = driver::raw::cuCtxPopCurrent(&popped);
  detail::report_release_failure(status, "cuCtxPopCurrent", "ScopedCurrentContext");
  if (status == CUDA_SUCCESS && popped != context_) {
    // The caller pushed without popping inside the scope: what was popped is not ours.
    std::fprintf(stderr,
                 "cuwrap: ScopedCurrentContext popped a context it did not push (a push "
                 "in its scope was not popped)\n");
  }
}

}  // namespace cuwrap
