// Graphics interop: OpenGL buffers and images (and EGL images) shared with CUDA, as
// cuda.core's GraphicsResource.
//
// A GraphicsResource registers a GL object with CUDA (cuGraphicsGLRegisterBuffer,
// cuGraphicsGLRegisterImage, cuGraphicsEGLRegisterImage); map(stream) hands out a
// MappedGraphicsResource guard whose buffer() or array() CUDA work may use until the
// guard unmaps it on the same stream. GL must not touch the object while it is mapped.
//
// This header includes no GL or EGL header, so it may come before or after a GL loader
// (GLAD, GLEW, epoxy, <GL/gl.h>): GLuint and GLenum are declared in namespace cuwrap as
// the unsigned int every GL header makes them, and the GL entry points CUDA needs are
// asked from the driver at run time, so neither cuwrap nor its users link a GL library.
#pragma once

#include <cuwrap/array.hpp>
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/ref.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {

/// The type of a GL object name (GL's GLuint, an unsigned int in every GL header).
using GLuint = unsigned int;
/// The type of a GL enumerant such as GL_TEXTURE_2D (GL's GLenum, an unsigned int).
using GLenum = unsigned int;
/// An EGL image (EGLImageKHR / EGLImage, a pointer in every EGL header).
using EGLImage = void*;

/// How CUDA will use a registered resource (CU_GRAPHICS_REGISTER_FLAGS_*); combine with |.
enum class GraphicsRegisterFlags : unsigned {
  None = 0,              ///< read and written by CUDA
  ReadOnly = 1,          ///< CUDA only reads it
  WriteDiscard = 2,      ///< CUDA overwrites all of it; its contents are not kept
  SurfaceLoadStore = 4,  ///< an image whose arrays surfaces may bind (SurfaceObject)
  TextureGather = 8,     ///< an image that texture gather may read
};

/// Return the union of two sets of registration flags.
constexpr GraphicsRegisterFlags operator|(GraphicsRegisterFlags a,
                                          GraphicsRegisterFlags b) noexcept {
  return static_cast<GraphicsRegisterFlags>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
/// Add the flags of `b` to `a`; return `a`.
constexpr GraphicsRegisterFlags& operator|=(GraphicsRegisterFlags& a,
                                            GraphicsRegisterFlags b) noexcept {
  return a = a | b;
}
/// Return the flags set in both.
constexpr GraphicsRegisterFlags operator&(GraphicsRegisterFlags a,
                                          GraphicsRegisterFlags b) noexcept {
  return static_cast<GraphicsRegisterFlags>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}

/// How one mapping will use the resource (CU_GRAPHICS_MAP_RESOURCE_FLAGS_*), set with
/// cuGraphicsResourceSetMapFlags before the map; apart from the registration flags.
enum class GraphicsMapFlags : unsigned {
  None = 0,          ///< read and written
  ReadOnly = 1,      ///< CUDA only reads it during this mapping
  WriteDiscard = 2,  ///< CUDA overwrites all of it during this mapping
};

/// Thrown when the driver refuses a graphics interop call; what() names the GL object,
/// layer or level concerned as well as the status (code() and function() as DriverError).
class GraphicsError : public DriverError {
 public:
  /// Build the error for `code` returned by `function`, with `message` as what().
  GraphicsError(CUresult code, std::string function, const std::string& message)
      : DriverError(code, std::move(function), message) {}
};

namespace detail {
/// The registration shared by a GraphicsResource and its mapping guards
/// (runtime/src/graphics/graphics_resource.cpp).
struct GraphicsState;
void ref_acquire(const GraphicsState* state) noexcept;
void ref_release(const GraphicsState* state) noexcept;
}  // namespace detail

class MappedGraphicsResource;

/// A GL buffer or image (or EGL image) registered with CUDA; RAII, move-only.
///
/// Registration needs the GL context that owns the object current on the calling thread.
/// The resource belongs to the CUDA context current at registration or, when none is,
/// to the primary context of the GL context's device. close() (and the destructor)
/// unmaps a resource still mapped, on the stream it was mapped on, then unregisters it;
/// its guards then report !is_mapped().
///
/// Example:
/// \code
///   auto pbo = cuwrap::GraphicsResource::from_gl_buffer(
///       gl_buffer, cuwrap::GraphicsRegisterFlags::WriteDiscard);
///   {
///     auto mapped = pbo.map(stream);
///     cuwrap::launch(stream, config, kernel, mapped.buffer().handle(), width, height);
///   }  // unmapped on `stream`: GL may use the buffer once the stream gets there
/// \endcode
class GraphicsResource {
 public:
  /// Register GL buffer object `buffer` (cuGraphicsGLRegisterBuffer).
  ///
  /// Throws std::logic_error when no GL context is current on this thread and
  /// DriverError (naming the buffer) when the driver refuses it, e.g. a name that is no
  /// buffer of the current GL context.
  static GraphicsResource from_gl_buffer(GLuint buffer,
                                         GraphicsRegisterFlags flags = GraphicsRegisterFlags::None);
  /// Register GL texture or renderbuffer `image` of `target` (GL_TEXTURE_2D,
  /// GL_RENDERBUFFER, ...) (cuGraphicsGLRegisterImage); errors as from_gl_buffer.
  static GraphicsResource from_gl_image(GLuint image, GLenum target,
                                        GraphicsRegisterFlags flags = GraphicsRegisterFlags::None);
  /// Register EGL image `image` (cuGraphicsEGLRegisterImage).
  ///
  /// Throws std::invalid_argument for a null image, DriverError when the driver refuses it.
  static GraphicsResource from_egl_image(EGLImage image,
                                         GraphicsRegisterFlags flags = GraphicsRegisterFlags::None);
  /// Take ownership of `handle`, registered in `context`; close() unregisters it.
  static GraphicsResource from_handle(CUgraphicsResource handle, CUcontext context);

  GraphicsResource(GraphicsResource&& other) noexcept;
  GraphicsResource& operator=(GraphicsResource&& other) noexcept;
  GraphicsResource(const GraphicsResource&) = delete;
  GraphicsResource& operator=(const GraphicsResource&) = delete;
  /// Unmap (when mapped) and unregister (never throws).
  ~GraphicsResource();

  /// Map the resource on `stream` for CUDA; the guard unmaps it on `stream`.
  ///
  /// Throws std::logic_error when the resource is closed or already mapped, DriverError
  /// when the driver refuses (e.g. CUDA_ERROR_ALREADY_MAPPED from another owner).
  [[nodiscard]] MappedGraphicsResource map(StreamRef stream,
                                           GraphicsMapFlags flags = GraphicsMapFlags::None);
  /// Map several resources of one context in one cuGraphicsMapResources call.
  ///
  /// Returns one guard per resource, in order; each unmaps its own resource. Throws
  /// std::invalid_argument for a null pointer or a resource listed twice, std::logic_error
  /// when one is closed or mapped; nothing is mapped when it throws.
  [[nodiscard]] static std::vector<MappedGraphicsResource> map_all(
      std::span<GraphicsResource* const> resources, StreamRef stream,
      GraphicsMapFlags flags = GraphicsMapFlags::None);
  /// Unmap (when mapped, on the stream of the mapping) and unregister; idempotent.
  void close() noexcept;

  /// Return the registered handle; throws std::logic_error when closed.
  CUgraphicsResource handle() const;
  /// Return the context the resource was registered in; throws std::logic_error when closed.
  CUcontext context() const;
  /// Return the flags it was registered with.
  GraphicsRegisterFlags flags() const noexcept { return flags_; }
  /// Return whether the resource is registered (not closed or moved from).
  bool is_open() const noexcept;
  /// Return whether it is mapped now.
  bool is_mapped() const noexcept;

 private:
  GraphicsResource(detail::Ref<detail::GraphicsState> state, GraphicsRegisterFlags flags) noexcept;
  // Own `handle`, registered in `context` with `flags` (unregistered again if this throws).
  static GraphicsResource adopt(CUgraphicsResource handle, CUcontext context,
                                GraphicsRegisterFlags flags);

  detail::Ref<detail::GraphicsState> state_;
  GraphicsRegisterFlags flags_ = GraphicsRegisterFlags::None;
};

/// A mapped GraphicsResource; a move-only guard that unmaps it on the mapping's stream.
///
/// buffer() and array() are valid while the guard is mapped: after unmap(), or once the
/// resource is closed, they throw std::logic_error (the memory they named is GL's again).
class MappedGraphicsResource {
 public:
  MappedGraphicsResource(MappedGraphicsResource&& other) noexcept;
  MappedGraphicsResource& operator=(MappedGraphicsResource&& other) noexcept;
  MappedGraphicsResource(const MappedGraphicsResource&) = delete;
  MappedGraphicsResource& operator=(const MappedGraphicsResource&) = delete;
  /// Unmap on the mapping's stream when still mapped (never throws).
  ~MappedGraphicsResource();

  /// Return a buffer's mapped memory (cuGraphicsResourceGetMappedPointer).
  ///
  /// Throws std::logic_error when not mapped, DriverError for a resource that is an image.
  BufferRef buffer() const;
  /// Return layer `layer` (cube face or array index) of mip level `mip_level` of a mapped
  /// image (cuGraphicsSubResourceGetMappedArray), in the resource's context.
  ///
  /// Surfaces may bind it when the image was registered with SurfaceLoadStore.
  /// Throws std::logic_error when not mapped, DriverError for a buffer or a level or layer
  /// the image lacks.
  ArrayRef array(unsigned layer = 0, unsigned mip_level = 0) const;
  /// Unmap now, on the mapping's stream; a second call does nothing.
  ///
  /// Throws DriverError when the driver refuses (the guard is unmapped anyway).
  void unmap();
  /// Return whether the resource is still mapped through this guard.
  bool is_mapped() const noexcept;
  /// Return the stream the resource was mapped on.
  CUstream stream() const noexcept { return stream_; }

 private:
  friend class GraphicsResource;
  void release() noexcept;  // unmap when still mapped, reporting a failure
  MappedGraphicsResource(detail::Ref<detail::GraphicsState> state, CUstream stream,
                         unsigned long long mapping) noexcept;

  detail::Ref<detail::GraphicsState> state_;
  CUstream stream_ = nullptr;
  unsigned long long mapping_ = 0;  // which mapping of the resource this guard holds
};

}  // namespace cuwrap
