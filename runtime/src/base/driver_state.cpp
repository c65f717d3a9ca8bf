// Driver initialisation, device count and primary contexts. See
// cuwrap/detail/context.hpp for the design.
#include "base/compat.hpp"
#include "base/context_registry.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace cuwrap::detail {
namespace {

// One retained primary context per device, filled on first use.
class PrimaryContexts {
 public:
  explicit PrimaryContexts(int count)
      : count_(count),
        contexts_(std::make_unique<std::atomic<CUcontext>[]>(
            static_cast<std::size_t>(count > 0 ? count : 1))) {}

  CUcontext get(int ordinal) {
    std::atomic<CUcontext>& slot = contexts_[static_cast<std::size_t>(ordinal)];
    CUcontext context = slot.load(std::memory_order_acquire);
    if (context != nullptr) [[likely]] {
      return context;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    context = slot.load(std::memory_order_relaxed);
    if (context == nullptr) {
      // Retained once and never released: objects using it may live until exit.
      context = driver::cuDevicePrimaryCtxRetain(driver::cuDeviceGet(ordinal));
      slot.store(context, std::memory_order_release);
    }
    return context;
  }

  // Retain device `ordinal`'s primary context anew after a cuDevicePrimaryCtxReset (the
  // handle cuwrap held names a destroyed context; the reset kept its retain count, so the
  // extra retain is released again) and return the usable handle.
  CUcontext renew(int ordinal) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const CUdevice device = driver::cuDeviceGet(ordinal);
    const CUcontext context = driver::cuDevicePrimaryCtxRetain(device);
    contexts_[static_cast<std::size_t>(ordinal)].store(context, std::memory_order_release);
    report_release_failure(driver::raw::cuDevicePrimaryCtxRelease(device),
                           "cuDevicePrimaryCtxRelease", "Device");
    return context;
  }

  // Return the ordinal whose already-retained primary context is `context`, or -1.
  int find(CUcontext context) const {
    for (int i = 0; i < count_; ++i) {
      if (contexts_[static_cast<std::size_t>(i)].load(std::memory_order_acquire) == context) {
        return i;
      }
    }
    return -1;
  }

  int count() const { return count_; }

 private:
  int count_;
  std::unique_ptr<std::atomic<CUcontext>[]> contexts_;
  std::mutex mutex_;
};

int query_device_count() {
  try {
    ensure_driver_initialized();
  } catch (const DriverError& e) {
    if (e.code() == CUDA_ERROR_NO_DEVICE) {
      return 0;
    }
    throw;
  }
  return driver::cuDeviceGetCount();
}

// The IDs of the contexts known destroyed; IDs are never reused, so entries never go.
struct DestroyedContexts {
  std::shared_mutex mutex;
  std::unordered_set<unsigned long long> ids;
};

DestroyedContexts& destroyed_contexts() {
  static auto* registry = new DestroyedContexts;  // never destroyed: objects may outlive statics
  return *registry;
}

PrimaryContexts& primary_contexts() {
  // A throwing initialiser leaves the static uninitialised; the next call retries.
  static PrimaryContexts table(device_count());
  return table;
}

}  // namespace

void ensure_driver_initialized() {
  static std::once_flag once;
  // An exception leaves the flag unset, so a later call tries again.
  std::call_once(once, [] { driver::cuInit(0); });
}

int device_count() {
  static const int count = query_device_count();
  return count;
}

void check_device_ordinal(int ordinal) {
  if (ordinal < 0) {
    throw std::invalid_argument("device " + std::to_string(ordinal) +
                                " does not exist: device ordinals are >= 0");
  }
  const int count = device_count();
  if (ordinal >= count) {
    throw std::invalid_argument("device " + std::to_string(ordinal) +
                                " does not exist: " + std::to_string(count) +
                                (count == 1 ? " CUDA device present" : " CUDA devices present"));
  }
}

CUcontext primary_context(int ordinal) {
  check_device_ordinal(ordinal);
  return primary_contexts().get(ordinal);
}

CUcontext context_for_device(int ordinal) {
  const CUcontext current = current_context();
  if (current != nullptr && device_of_context(current) == ordinal) {
    return current;
  }
  return primary_context(ordinal);
}

CUcontext renew_primary_context(int ordinal) {
  check_device_ordinal(ordinal);
  return primary_contexts().renew(ordinal);
}

int ordinal_of(CUdevice device) {
  const int count = device_count();
  for (int i = 0; i < count; ++i) {
    if (driver::cuDeviceGet(i) == device) {
      return i;
    }
  }
  throw std::invalid_argument("CUdevice " + std::to_string(device) + " is not one of the " +
                              std::to_string(count) + " visible CUDA devices");
}

CUcontext current_context() {
  ensure_driver_initialized();
  return driver::cuCtxGetCurrent();
}

int device_of_context(CUcontext context) {
  if (const int ordinal = primary_contexts().find(context); ordinal >= 0) {
    return ordinal;
  }
  return ordinal_of(context_device(context));
}

void ensure_current_context(int ordinal) {
  if (current_context() == nullptr) {
    driver::cuCtxSetCurrent(primary_context(ordinal));
  }
}

unsigned long long context_id(CUcontext context) { return driver::cuCtxGetId(context); }

std::atomic<unsigned long long> g_destroyed_context_count{0};

namespace {
std::atomic<ContextDestroyHook> g_context_destroy_hook{nullptr};
}  // namespace

void set_context_destroy_hook(ContextDestroyHook hook) noexcept {
  g_context_destroy_hook.store(hook, std::memory_order_release);
}

void run_context_destroy_hook(unsigned long long id) noexcept {
  if (const ContextDestroyHook hook = g_context_destroy_hook.load(std::memory_order_acquire);
      hook != nullptr && id != 0) {
    hook(id);
  }
}

void note_context_destroyed(unsigned long long id) noexcept {
  if (id == 0) {
    return;
  }
  DestroyedContexts& registry = destroyed_contexts();
  try {
    const std::unique_lock<std::shared_mutex> lock(registry.mutex);
    if (!registry.ids.insert(id).second) {
      return;
    }
  } catch (...) {  // no memory: not recorded; a driver error still finds it gone
    return;
  }
  g_destroyed_context_count.fetch_add(1, std::memory_order_release);
}

bool context_recorded_destroyed(unsigned long long id) noexcept {
  if (id == 0 || g_destroyed_context_count.load(std::memory_order_acquire) == 0) {
    return false;
  }
  DestroyedContexts& registry = destroyed_contexts();
  const std::shared_lock<std::shared_mutex> lock(registry.mutex);
  return registry.ids.count(id) != 0;
}

bool context_is_gone(CUcontext context, unsigned long long id) noexcept {
  if (id == 0 || context == nullptr) {
    return false;
  }
  if (context_recorded_destroyed(id)) {
    return true;
  }
  unsigned long long now = 0;
  const CUresult status = driver::raw::cuCtxGetId(context, &now);
  // Another ID: a context created since at the destroyed one's address.
  const bool gone = status == CUDA_SUCCESS ? now != id
                                           : status == CUDA_ERROR_CONTEXT_IS_DESTROYED ||
                                                 status == CUDA_ERROR_INVALID_CONTEXT;
  if (gone) {
    note_context_destroyed(id);
  }
  return gone;
}

void throw_context_destroyed(const char* object, const void* handle, unsigned long long id,
                             const char* operation, const char* detail) {
  char address[2 + 2 * sizeof(void*) + 1];
  std::snprintf(address, sizeof(address), "%p", handle);
  throw ContextDestroyedError(std::string(object) + " " + address, id, operation,
                              detail != nullptr ? detail : "");
}

void ContextUse::translate(const DriverErrorFrame& frame, CUresult code, const char* function) {
  const auto& use = static_cast<const ContextUse&>(frame);
  if (code == CUDA_ERROR_DEINITIALIZED || !context_is_gone(use.context_, use.id_)) {
    return;
  }
  const std::string detail = std::string(function) + " answered " + std::string(to_string(code));
  throw_context_destroyed(use.object_, use.handle_, use.id_, use.operation_, detail.c_str());
}

ScopedContext::ScopedContext(CUcontext context) {
  const CUcontext current = current_context();
  if (current != context) {
    driver::cuCtxSetCurrent(context);
    previous_ = current;
    restore_ = true;
  }
}

ScopedContext::ScopedContext(int ordinal) : ScopedContext(primary_context(ordinal)) {}

ScopedContext::~ScopedContext() {
  if (restore_) {
    // Where restoring fails, the context set here stays current: reported, not thrown.
    report_release_failure(driver::raw::cuCtxSetCurrent(previous_), "cuCtxSetCurrent", "Context");
  }
}

ScopedCurrentOrPrimary::ScopedCurrentOrPrimary(int ordinal) : context_(current_context()) {
  if (context_ == nullptr) {
    context_ = primary_context(ordinal);
    driver::cuCtxSetCurrent(context_);
    restore_ = true;
  }
}

ScopedCurrentOrPrimary::~ScopedCurrentOrPrimary() {
  if (restore_) {
    report_release_failure(driver::raw::cuCtxSetCurrent(nullptr), "cuCtxSetCurrent", "Context");
  }
}

}  // namespace cuwrap::detail
