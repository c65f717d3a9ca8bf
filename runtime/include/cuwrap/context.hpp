// Context: a CUDA context made by Device::create_context, regular (cuCtxCreate) or green
// (a part of one device's SMs that streams run their work on), as cuda.core's Context
// and ContextOptions; ContextRef, the non-owning form of any CUcontext, with the
// context's settings; ScopedCurrentContext. The resources a green context is made of
// are in green_context.hpp.
#pragma once

#include <cuwrap/detail/hash.hpp>
#include <cuwrap/green_context.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace cuwrap {

class Device;
class ScopedCurrentContext;

/// Options of Device::create_context, as cuda.core's ContextOptions.
struct ContextOptions {
  /// The SM groups (from SMResource::split, all of one split and one device) the green
  /// context runs its work on; empty makes a regular context (cuCtxCreate).
  std::vector<SMResource> resources{};
  /// CU_CTX_* flags of a regular context (scheduling, CU_CTX_MAP_HOST, ...); must be 0
  /// for a green context.
  unsigned flags = 0;
};

/// The range of stream priorities of a context: `greatest` is the highest priority
/// (the lowest number), `least` the lowest (0 on current devices).
struct StreamPriorityRange {
  int least = 0;     ///< the lowest priority (the largest number)
  int greatest = 0;  ///< the highest priority (the smallest number)
};

/// A CUDA context that this object does not own (as StreamRef is to Stream), made by
/// any library: a primary, regular or green context.
///
/// Trivially copyable; never calls the driver to be made. Its operations that work on
/// "the current context" in the driver (limits, cache config, flags, priority range)
/// make it current for the call and restore the caller's current context after it.
///
/// Example:
/// \code
///   cuwrap::ContextRef ctx = cuwrap::Device(0).primary_context();
///   ctx.set_limit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20);
///   {
///     auto current = ctx.make_current();   // pushed until the end of the scope
///     // ... code that works in the current context ...
///   }
/// \endcode
class ContextRef {
 public:
  /// Refer to `handle`, a context of any library.
  ///
  /// Throws std::invalid_argument when `handle` is null.
  ContextRef(CUcontext handle);  // NOLINT(google-explicit-constructor)

  /// Return a view of `handle`, a context of any library; nothing destroys it here.
  ///
  /// The same as ContextRef(handle); Context::from_handle is this function: a view is a
  /// ContextRef, never a Context. Throws std::invalid_argument when `handle` is null.
  static ContextRef from_handle(CUcontext handle) { return ContextRef(handle); }
  /// Return the context current on the calling thread, or std::nullopt when none is
  /// (cuCtxGetCurrent).
  static std::optional<ContextRef> current();

  /// Return the CUDA context handle (null only for a closed Context seen as a ContextRef).
  CUcontext handle() const noexcept { return handle_; }
  /// Return the device the context belongs to.
  Device device() const;
  /// Return whether this is a green context made by cuwrap (Device::create_context
  /// with resources) that is still alive; false for every other context.
  bool is_green() const;
  /// Block until all work queued in the context is done.
  void sync() const;
  /// Return the value of `limit` (CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE,
  /// CU_LIMIT_STACK_SIZE, ...) in this context (cuCtxGetLimit).
  std::size_t limit(CUlimit limit) const;
  /// Set `limit` to `value` in this context (cuCtxSetLimit); the driver may round it.
  ///
  /// Throws DriverError when the driver refuses the value (e.g. a heap size after the
  /// first kernel that uses malloc ran).
  void set_limit(CUlimit limit, std::size_t value) const;
  /// Return the context's preferred cache configuration (cuCtxGetCacheConfig).
  CUfunc_cache cache_config() const;
  /// Set the context's preferred cache configuration (cuCtxSetCacheConfig).
  ///
  /// Throws std::invalid_argument for a value outside CU_FUNC_CACHE_PREFER_*.
  void set_cache_config(CUfunc_cache config) const;
  /// Return the range of stream priorities (cuCtxGetStreamPriorityRange).
  StreamPriorityRange stream_priority_range() const;
  /// Return the context's CU_CTX_* flags (cuCtxGetFlags).
  unsigned flags() const;
  /// Push this context onto the calling thread's context stack; the returned guard pops
  /// it at the end of its scope (also when an exception leaves it), restoring the
  /// context that was current before.
  [[nodiscard]] ScopedCurrentContext make_current() const;
  /// Make this context current on the calling thread, replacing the top of its context
  /// stack (cuCtxSetCurrent), until something else is made current: the non-scoped form
  /// of make_current(), as C and PyCUDA programs use contexts.
  void set_current() const;
  /// Push this context onto the calling thread's context stack (cuCtxPushCurrent); pop()
  /// takes it off again. Return this context.
  ContextRef push() const;
  /// Pop the calling thread's current context off its context stack (cuCtxPopCurrent),
  /// making the one below it current, and return the popped one.
  ///
  /// Throws std::logic_error when no context is current (the stack is empty).
  static ContextRef pop();

  /// Return whether both refer to the same CUDA context handle.
  friend bool operator==(const ContextRef& a, const ContextRef& b) noexcept {
    return a.handle_ == b.handle_;
  }

 protected:
  /// A closed Context: every operation throws std::logic_error.
  ContextRef() noexcept = default;
  /// Return the handle for `operation`; throws std::logic_error when closed.
  CUcontext handle_for(const char* operation) const;

  CUcontext handle_ = nullptr;  // null only in a closed Context
};

/// The context pushed by ContextRef::make_current, current until this guard is
/// destroyed; move-only.
///
/// The destructor pops the context (cuCtxPopCurrent), making the one that was current
/// before current again, none included; it never throws (a failing pop is reported on
/// stderr).
class ScopedCurrentContext {
 public:
  ScopedCurrentContext(ScopedCurrentContext&& other) noexcept
      : context_(std::exchange(other.context_, nullptr)) {}
  ScopedCurrentContext& operator=(ScopedCurrentContext&&) = delete;
  ScopedCurrentContext(const ScopedCurrentContext&) = delete;
  ScopedCurrentContext& operator=(const ScopedCurrentContext&) = delete;
  /// Pop the context pushed by make_current (never throws).
  ~ScopedCurrentContext();

  /// Return the context this guard made current (null when moved from).
  CUcontext context() const noexcept { return context_; }

 private:
  friend class ContextRef;
  explicit ScopedCurrentContext(CUcontext context) noexcept : context_(context) {}

  CUcontext context_ = nullptr;
};

/// A context made by Device::create_context; an RAII, move-only owner. A Context is a
/// ContextRef (its settings and make_current apply to it).
///
/// With ContextOptions::resources, a green context (cuGreenCtxCreate). Without, a
/// regular context (cuCtxCreate with ContextOptions::flags), destroyed (cuCtxDestroy)
/// under the same rule as a green one. Operations on a closed Context throw
/// std::logic_error.
///
/// A green context's streams run kernels only on the SMs it was made with. The CUDA green context
/// is destroyed (cuGreenCtxDestroy, after the work queued in it has finished) when the Context is
/// closed and the last stream created in it is gone: streams keep it alive.
///
/// Example:
/// \code
///   cuwrap::Device dev(0);
///   cuwrap::SMResourceSplit split = dev.resources().sm().split({.count = {16}});
///   cuwrap::Context green = dev.create_context({.resources = {split.groups[0]}});
///   cuwrap::Stream s = green.create_stream();   // kernels on s use those 16 SMs
/// \endcode
class Context : public ContextRef {
 public:
  Context(Context&& other) noexcept
      : ContextRef(static_cast<const ContextRef&>(other)), state_(std::move(other.state_)) {
    other.handle_ = nullptr;
  }
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// Close the context (never throws).
  ~Context();

  /// Create a stream in this context (cuGreenCtxStreamCreate for a green context,
  /// cuStreamCreateWithPriority for a regular one).
  ///
  /// Green-context streams are always non-blocking (the driver's rule), so
  /// options.nonblocking = false throws std::invalid_argument. Needs CUDA 12.5 (toolkit
  /// and driver): UnsupportedError names the version otherwise.
  Stream create_stream(const StreamOptions& options = {}) const;
  /// Return the resources the green context was made with.
  ///
  /// Throws std::logic_error for a regular context.
  DeviceResources resources() const;
  /// Return the device the context belongs to.
  Device device() const;
  /// Return whether this is a green context (cuda.core's is_green).
  bool is_green() const;
  /// Return whether the object still owns the context (false after close or a move).
  bool is_open() const noexcept { return state_ != nullptr; }
  /// Return the context as a CUcontext (cuCtxFromGreenCtx), usable with cuCtxSetCurrent
  /// and every API taking a CUcontext.
  CUcontext handle() const;
  /// Return the green context handle.
  ///
  /// Throws std::logic_error for a regular context.
  CUgreenCtx green_handle() const;
  /// Release this object's ownership; the green context is destroyed once no stream of
  /// it is left. Idempotent, never throws.
  void close() noexcept;

 private:
  friend class Device;
  explicit Context(detail::Ref<const detail::GreenContextState> state) noexcept;
  const detail::GreenContextState& state(const char* operation) const;

  detail::Ref<const detail::GreenContextState> state_;
};

}  // namespace cuwrap

/// Hash a ContextRef by its handle, so that contexts key unordered containers.
template <>
struct std::hash<cuwrap::ContextRef> {
  /// Return the hash of the context's handle.
  std::size_t operator()(const cuwrap::ContextRef& context) const noexcept {
    return cuwrap::detail::hash_pointer(context.handle());
  }
};
