// GraphicsResource and its mapping guard. See cuwrap/graphics.hpp.
//
// The registration functions of cudaGL.h and cudaEGL.h are asked from the driver with
// cuGetProcAddress here, declared by hand: including those headers would need the GL and
// EGL headers, which a build machine may lack (and which users should not have to bring).
// The versions asked for are the ABIs of the prototypes declared below (cudaGLTypedefs.h,
// cudaEGLTypedefs.h), all older than the oldest driver cuwrap supports.
#include <cuwrap/graphics.hpp>

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include "base/destroy_in.hpp"
#include "base/ref_counted.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {

namespace detail {

// One registration: its handle and context, and which mapping (if any) is live. The
// GraphicsResource and each of its guards hold a reference, so that a guard still sees
// the registration (closed, then) after the resource is gone.
struct GraphicsState : RefCounted {
  CUgraphicsResource handle = nullptr;
  CUcontext context = nullptr;
  bool mapped = false;
  CUstream map_stream = nullptr;
  unsigned long long mapping = 0;  // counts the maps, so an old guard cannot unmap a new one
  unsigned map_flags = 0;          // the flags cuGraphicsResourceSetMapFlags last set
  // An EGL image: cudaEGL.h says it needs no cuGraphicsMapResources (the driver answers
  // CUDA_ERROR_UNKNOWN to one); its guard maps and unmaps nothing in the driver.
  bool egl_image = false;
};

void ref_acquire(const GraphicsState* state) noexcept { acquire_counted(state); }
void ref_release(const GraphicsState* state) noexcept { release_counted(state); }

}  // namespace detail

namespace {

using RegisterGLBuffer = CUresult (*)(CUgraphicsResource*, GLuint, unsigned int);
using RegisterGLImage = CUresult (*)(CUgraphicsResource*, GLuint, GLenum, unsigned int);
using RegisterEGLImage = CUresult (*)(CUgraphicsResource*, EGLImage, unsigned int);
using GetCurrentContext = void* (*)();

// Return the driver's `name` of ABI `version`, resolved once per process (a LoadError,
// naming it, where the driver lacks it).
template <class Fn>
Fn graphics_entry(const char* name, int version) {
  detail::ensure_driver_initialized();
  return reinterpret_cast<Fn>(detail::resolve_driver_proc(name, version));
}

// Return whether a GL context is current on this thread, asked of the GL libraries that
// the process has loaded (EGL, GLX); none loaded means none can be current.
bool gl_context_current() {
  struct Probe {
    const char* library;
    const char* function;
  };
  static constexpr std::array<Probe, 4> kProbes = {{{"libEGL.so.1", "eglGetCurrentContext"},
                                                    {"libGLX.so.0", "glXGetCurrentContext"},
                                                    {"libGL.so.1", "glXGetCurrentContext"},
                                                    {"libEGL.so", "eglGetCurrentContext"}}};
  for (const auto& probe : kProbes) {
    void* library = ::dlopen(probe.library, RTLD_LAZY | RTLD_NOLOAD);
    if (library == nullptr) {
      continue;
    }
    auto* current = reinterpret_cast<GetCurrentContext>(::dlsym(library, probe.function));
    const bool is_current = current != nullptr && current() != nullptr;
    ::dlclose(library);  // drops the reference RTLD_NOLOAD took; the library stays loaded
    if (is_current) {
      return true;
    }
  }
  return false;
}

// Throw the error for a failed registration of `what` by `function`: misuse when no GL
// context is current, else the driver's status naming the object.
[[noreturn]] void throw_register_failure(CUresult status, const char* function,
                                         const std::string& what) {
  if (!gl_context_current() && status != CUDA_ERROR_NOT_INITIALIZED) {
    throw std::logic_error(std::string("GraphicsResource: cannot register ") + what +
                           ": no OpenGL or EGL context is current on this thread (" + function +
                           " returned " + std::string(to_string(status)) + ")");
  }
  throw GraphicsError(status, function,
                      std::string(function) + " failed for " + what + ": " +
                          std::string(to_string(status)) +
                          " (is it an object of the GL context current on this thread?)");
}

// Return the context to register in: the current one, or the primary context of the GL
// context's first CUDA device (device 0 where the driver cannot tell).
CUcontext registration_context() {
  detail::ensure_driver_initialized();
  if (CUcontext current = detail::current_context(); current != nullptr) {
    return current;
  }
  using GetGLDevices = CUresult (*)(unsigned int*, CUdevice*, unsigned int, unsigned int);
  constexpr unsigned int kGLDeviceListAll = 1;  // CU_GL_DEVICE_LIST_ALL
  unsigned int count = 0;
  CUdevice device = 0;
  static const auto get_devices = graphics_entry<GetGLDevices>("cuGLGetDevices", 6050);
  if (get_devices(&count, &device, 1, kGLDeviceListAll) == CUDA_SUCCESS && count > 0) {
    return detail::primary_context(detail::ordinal_of(device));
  }
  return detail::primary_context(0);
}

// Register with `call` (a lambda taking CUgraphicsResource*) in the chosen context.
template <class Call>
std::pair<CUgraphicsResource, CUcontext> register_resource(const char* function,
                                                           const std::string& what, Call&& call) {
  const CUcontext context = registration_context();
  const detail::ScopedContext scope(context);
  CUgraphicsResource handle = nullptr;
  if (const CUresult status = call(&handle); status != CUDA_SUCCESS) {
    throw_register_failure(status, function, what);
  }
  return {handle, context};
}

// Unmap `state`'s live mapping on its stream; the state is unmapped whatever the status.
CUresult unmap_state(detail::GraphicsState& state) noexcept {
  state.mapped = false;
  if (state.egl_image) {
    return CUDA_SUCCESS;
  }
  CUgraphicsResource handle = state.handle;
  return driver::raw::cuGraphicsUnmapResources(1, &handle, state.map_stream);
}

[[noreturn]] void throw_closed(const char* operation) {
  throw std::logic_error(std::string("GraphicsResource::") + operation +
                         ": the resource is closed (or moved from)");
}

[[noreturn]] void throw_unmapped(const char* operation) {
  throw std::logic_error(std::string("MappedGraphicsResource::") + operation +
                         ": the resource is no longer mapped (unmapped, closed or moved from); "
                         "its memory belongs to GL again");
}

}  // namespace

// ---- GraphicsResource ----

GraphicsResource::GraphicsResource(detail::Ref<detail::GraphicsState> state,
                                   GraphicsRegisterFlags flags) noexcept
    : state_(std::move(state)), flags_(flags) {}

GraphicsResource GraphicsResource::from_gl_buffer(GLuint buffer, GraphicsRegisterFlags flags) {
  static const auto fn = graphics_entry<RegisterGLBuffer>("cuGraphicsGLRegisterBuffer", 3000);
  const auto [handle, context] = register_resource(
      "cuGraphicsGLRegisterBuffer", "GL buffer " + std::to_string(buffer),
      [&](CUgraphicsResource* out) { return fn(out, buffer, static_cast<unsigned>(flags)); });
  return adopt(handle, context, flags);
}

GraphicsResource GraphicsResource::from_gl_image(GLuint image, GLenum target,
                                                 GraphicsRegisterFlags flags) {
  static const auto fn = graphics_entry<RegisterGLImage>("cuGraphicsGLRegisterImage", 3000);
  const auto [handle, context] = register_resource(
      "cuGraphicsGLRegisterImage",
      "GL image " + std::to_string(image) + " (target " + std::to_string(target) + ")",
      [&](CUgraphicsResource* out) {
        return fn(out, image, target, static_cast<unsigned>(flags));
      });
  return adopt(handle, context, flags);
}

GraphicsResource GraphicsResource::from_egl_image(EGLImage image, GraphicsRegisterFlags flags) {
  if (image == nullptr) {
    throw std::invalid_argument("GraphicsResource::from_egl_image: image is null (EGL_NO_IMAGE)");
  }
  static const auto fn = graphics_entry<RegisterEGLImage>("cuGraphicsEGLRegisterImage", 7000);
  const CUcontext context = [] {
    detail::ensure_driver_initialized();
    const CUcontext current = detail::current_context();
    return current != nullptr ? current : detail::primary_context(0);
  }();
  const detail::ScopedContext scope(context);
  CUgraphicsResource handle = nullptr;
  if (const CUresult status = fn(&handle, image, static_cast<unsigned>(flags));
      status != CUDA_SUCCESS) {
    throw DriverError(status, "cuGraphicsEGLRegisterImage");
  }
  GraphicsResource resource = adopt(handle, context, flags);
  resource.state_->egl_image = true;
  return resource;
}

GraphicsResource GraphicsResource::from_handle(CUgraphicsResource handle, CUcontext context) {
  if (handle == nullptr) {
    throw std::invalid_argument("GraphicsResource::from_handle: handle is null");
  }
  return adopt(handle, context, GraphicsRegisterFlags::None);
}

GraphicsResource GraphicsResource::adopt(CUgraphicsResource handle, CUcontext context,
                                         GraphicsRegisterFlags flags) {
  detail::Ref<detail::GraphicsState> state;
  try {
    state = detail::make_ref<detail::GraphicsState>();
  } catch (...) {
    detail::destroy_in(context, "cuGraphicsUnregisterResource", "GraphicsResource",
                       [&] { return driver::raw::cuGraphicsUnregisterResource(handle); });
    throw;
  }
  state->handle = handle;
  state->context = context;
  return GraphicsResource(std::move(state), flags);
}

GraphicsResource::GraphicsResource(GraphicsResource&& other) noexcept
    : state_(std::move(other.state_)), flags_(other.flags_) {}

GraphicsResource& GraphicsResource::operator=(GraphicsResource&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

GraphicsResource::~GraphicsResource() { close(); }

void GraphicsResource::close() noexcept {
  if (!state_ || state_->handle == nullptr) {
    state_.reset();
    return;
  }
  detail::GraphicsState& state = *state_;
  if (state.mapped) {
    detail::destroy_in(state.context, "cuGraphicsUnmapResources", "GraphicsResource",
                       [&] { return unmap_state(state); });
  }
  detail::destroy_in(state.context, "cuGraphicsUnregisterResource", "GraphicsResource",
                     [&] { return driver::raw::cuGraphicsUnregisterResource(state.handle); });
  state.handle = nullptr;  // guards still holding the state see it closed
  state_.reset();
}

MappedGraphicsResource GraphicsResource::map(StreamRef stream, GraphicsMapFlags flags) {
  GraphicsResource* self = this;
  return std::move(map_all(std::span(&self, 1), stream, flags).front());
}

std::vector<MappedGraphicsResource> GraphicsResource::map_all(
    std::span<GraphicsResource* const> resources, StreamRef stream, GraphicsMapFlags flags) {
  std::vector<CUgraphicsResource> handles;
  handles.reserve(resources.size());
  CUcontext context = nullptr;
  for (std::size_t i = 0; i < resources.size(); ++i) {
    GraphicsResource* resource = resources[i];
    if (resource == nullptr) {
      throw std::invalid_argument("GraphicsResource::map_all: resources[" + std::to_string(i) +
                                  "] is null");
    }
    if (!resource->is_open()) {
      throw_closed("map");
    }
    if (resource->state_->mapped) {
      throw std::logic_error(
          "GraphicsResource::map: the resource is already mapped (end or unmap() its "
          "MappedGraphicsResource first)");
    }
    if (std::find(handles.begin(), handles.end(), resource->state_->handle) != handles.end()) {
      throw std::invalid_argument("GraphicsResource::map_all: resources[" + std::to_string(i) +
                                  "] is listed twice");
    }
    handles.push_back(resource->state_->handle);
    context = resource->state_->context;
  }
  std::vector<MappedGraphicsResource> guards;
  if (handles.empty()) {
    return guards;
  }
  guards.reserve(handles.size());
  const CUstream handle = stream.handle();
  const detail::ScopedContext scope(context);
  const auto map_flags = static_cast<unsigned>(flags);
  std::vector<CUgraphicsResource> to_map;  // EGL images are used without a map
  to_map.reserve(handles.size());
  for (GraphicsResource* resource : resources) {
    if (resource->state_->egl_image) {
      continue;
    }
    to_map.push_back(resource->state_->handle);
    if (resource->state_->map_flags != map_flags) {
      driver::cuGraphicsResourceSetMapFlags(resource->state_->handle, map_flags);
      resource->state_->map_flags = map_flags;
    }
  }
  if (!to_map.empty()) {
    driver::cuGraphicsMapResources(static_cast<unsigned>(to_map.size()), to_map.data(), handle);
  }
  for (GraphicsResource* resource : resources) {
    detail::GraphicsState& state = *resource->state_;
    state.mapped = true;
    state.map_stream = handle;
    ++state.mapping;
    guards.push_back(MappedGraphicsResource(resource->state_, handle, state.mapping));
  }
  return guards;
}

CUgraphicsResource GraphicsResource::handle() const {
  if (!is_open()) {
    throw_closed("handle");
  }
  return state_->handle;
}

CUcontext GraphicsResource::context() const {
  if (!is_open()) {
    throw_closed("context");
  }
  return state_->context;
}

bool GraphicsResource::is_open() const noexcept { return state_ && state_->handle != nullptr; }

bool GraphicsResource::is_mapped() const noexcept { return is_open() && state_->mapped; }

// ---- MappedGraphicsResource ----

MappedGraphicsResource::MappedGraphicsResource(detail::Ref<detail::GraphicsState> state,
                                               CUstream stream, unsigned long long mapping) noexcept
    : state_(std::move(state)), stream_(stream), mapping_(mapping) {}

MappedGraphicsResource::MappedGraphicsResource(MappedGraphicsResource&& other) noexcept
    : state_(std::move(other.state_)), stream_(other.stream_), mapping_(other.mapping_) {}

MappedGraphicsResource& MappedGraphicsResource::operator=(MappedGraphicsResource&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

MappedGraphicsResource::~MappedGraphicsResource() { release(); }

void MappedGraphicsResource::release() noexcept {
  if (is_mapped()) {
    detail::destroy_in(state_->context, "cuGraphicsUnmapResources", "MappedGraphicsResource",
                       [&] { return unmap_state(*state_); });
  }
}

bool MappedGraphicsResource::is_mapped() const noexcept {
  return state_ && state_->handle != nullptr && state_->mapped && state_->mapping == mapping_;
}

BufferRef MappedGraphicsResource::buffer() const {
  if (!is_mapped()) {
    throw_unmapped("buffer");
  }
  const detail::ScopedContext scope(state_->context);
  CUdeviceptr ptr = 0;
  std::size_t size = 0;
  if (const CUresult status =
          driver::raw::cuGraphicsResourceGetMappedPointer(&ptr, &size, state_->handle);
      status != CUDA_SUCCESS) {
    throw GraphicsError(
        status, "cuGraphicsResourceGetMappedPointer",
        "MappedGraphicsResource::buffer: cuGraphicsResourceGetMappedPointer "
        "returned " +
            std::string(to_string(status)) +
            (status == CUDA_ERROR_NOT_MAPPED_AS_POINTER ? " (the resource is an image: use array())"
                                                        : ""));
  }
  return {ptr, size};
}

ArrayRef MappedGraphicsResource::array(unsigned layer, unsigned mip_level) const {
  if (!is_mapped()) {
    throw_unmapped("array");
  }
  const detail::ScopedContext scope(state_->context);
  CUarray handle = nullptr;
  if (const CUresult status = driver::raw::cuGraphicsSubResourceGetMappedArray(
          &handle, state_->handle, layer, mip_level);
      status != CUDA_SUCCESS) {
    throw GraphicsError(
        status, "cuGraphicsSubResourceGetMappedArray",
        "MappedGraphicsResource::array(layer " + std::to_string(layer) + ", mip_level " +
            std::to_string(mip_level) + "): cuGraphicsSubResourceGetMappedArray returned " +
            std::string(to_string(status)) +
            (status == CUDA_ERROR_NOT_MAPPED_AS_ARRAY ? " (the resource is a buffer: use buffer())"
                                                      : ""));
  }
  return ArrayRef::from_handle(handle, state_->context);
}

void MappedGraphicsResource::unmap() {
  if (!is_mapped()) {
    return;
  }
  const detail::ScopedContext scope(state_->context);
  if (const CUresult status = unmap_state(*state_); status != CUDA_SUCCESS) {
    throw DriverError(status, "cuGraphicsUnmapResources");
  }
}

}  // namespace cuwrap
