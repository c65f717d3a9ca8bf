// Context: a green context, a part of one device's SMs that streams run their work on
// (cuda.core's Context and ContextOptions). Made by Device::create_context; the
// resources it is made of are in green_context.hpp.
#pragma once

#include <cuwrap/green_context.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <utility>
#include <vector>

namespace cuwrap {

class Device;

/// Options of Device::create_context, as cuda.core's ContextOptions.
struct ContextOptions {
  /// The SM groups (from SMResource::split, all of one split and one device) the green
  /// context runs its work on.
  std::vector<SMResource> resources{};
};

/// A green context (cuGreenCtxCreate); an RAII, move-only owner.
///
/// Its streams run kernels only on the SMs it was made with. The CUDA green context is
/// destroyed (cuGreenCtxDestroy, after the work queued in it has finished) when the
/// Context is closed and the last stream created in it is gone: streams keep it alive.
///
/// Example:
/// \code
///   cuwrap::Device dev(0);
///   cuwrap::SMResourceSplit split = dev.resources().sm().split({.count = {16}});
///   cuwrap::Context green = dev.create_context({.resources = {split.groups[0]}});
///   cuwrap::Stream s = green.create_stream();   // kernels on s use those 16 SMs
/// \endcode
class Context {
 public:
  Context(Context&& other) noexcept = default;
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// Close the context (never throws).
  ~Context();

  /// Create a stream in this green context (cuGreenCtxStreamCreate).
  ///
  /// Green-context streams are always non-blocking (the driver's rule), so
  /// options.nonblocking = false throws std::invalid_argument. Needs CUDA 12.5 (toolkit
  /// and driver): UnsupportedError names the version otherwise.
  Stream create_stream(const StreamOptions& options = {}) const;
  /// Return the resources the context was made with.
  DeviceResources resources() const;
  /// Return the device the context belongs to.
  Device device() const;
  /// Return whether this is a green context (always, for now: cuda.core's is_green).
  bool is_green() const noexcept { return true; }
  /// Return whether close() was called (or the object was moved from).
  bool is_closed() const noexcept { return state_ == nullptr; }
  /// Return the context as a CUcontext (cuCtxFromGreenCtx), usable with cuCtxSetCurrent
  /// and every API taking a CUcontext.
  CUcontext handle() const;
  /// Return the green context handle.
  CUgreenCtx green_handle() const;
  /// Release this object's ownership; the green context is destroyed once no stream of
  /// it is left. Idempotent, never throws.
  void close() noexcept;

 private:
  friend class Device;
  explicit Context(detail::Ref<const detail::GreenContextState> state) noexcept
      : state_(std::move(state)) {}
  const detail::GreenContextState& state(const char* operation) const;

  detail::Ref<const detail::GreenContextState> state_;
};

}  // namespace cuwrap
