// Driver initialisation, device count and primary contexts. See
// cuwrap/detail/context.hpp for the design.
#include "compat.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

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

unsigned long long context_id(CUcontext context) {
  return driver::cuCtxGetId(context);
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
    report_release_failure(driver::raw::cuCtxSetCurrent(previous_), "cuCtxSetCurrent",
                           "Context");
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
