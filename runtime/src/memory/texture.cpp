// Texture and surface objects. See cuwrap/texture.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/texture.hpp>

#include "base/destroy_in.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

bool is_integer_format(CUarray_format format) {
  return format != CU_AD_FORMAT_FLOAT && format != CU_AD_FORMAT_HALF;
}

bool reads_elements(const TextureOptions& options) {
  return options.read_as_integer || options.read_mode == ReadMode::ElementType;
}

CUDA_TEXTURE_DESC to_texture_desc(const TextureOptions& options) {
  if (options.read_mode != ReadMode::ElementType &&
      options.read_mode != ReadMode::NormalizedFloat) {
    throw std::invalid_argument("TextureOptions::read_mode " +
                                std::to_string(static_cast<int>(options.read_mode)) +
                                " is not ReadMode::ElementType or ReadMode::NormalizedFloat");
  }
  if (options.max_anisotropy > 16) {
    throw std::invalid_argument("TextureOptions::max_anisotropy " +
                                std::to_string(options.max_anisotropy) + " is above 16");
  }
  CUDA_TEXTURE_DESC desc{};
  for (std::size_t i = 0; i < 3; ++i) {
    desc.addressMode[i] = options.address_mode[i];
  }
  desc.filterMode = options.filter_mode;
  desc.flags = (options.normalized_coords ? CU_TRSF_NORMALIZED_COORDINATES : 0U) |
               (reads_elements(options) ? CU_TRSF_READ_AS_INTEGER : 0U) |
               (options.srgb ? CU_TRSF_SRGB : 0U);
  desc.maxAnisotropy = options.max_anisotropy;
  desc.mipmapFilterMode = options.mipmap_filter_mode;
  desc.mipmapLevelBias = options.mipmap_level_bias;
  desc.minMipmapLevelClamp = options.min_mipmap_level_clamp;
  desc.maxMipmapLevelClamp = options.max_mipmap_level_clamp;
  for (std::size_t i = 0; i < 4; ++i) {
    desc.borderColor[i] = options.border_color[i];
  }
  return desc;
}

// Run `create` in `context` (the array's) or, for an array of unknown context, in the
// current one (device 0's primary context when none is); the caller's current context
// is what it was afterwards.
template <class Create>
auto create_in(CUcontext context, CUcontext& used, Create&& create) {
  detail::ensure_driver_initialized();
  if (context != nullptr) {
    const detail::ScopedContext scope(context);
    used = context;
    return create();
  }
  const detail::ScopedCurrentOrPrimary scope(0);
  used = scope.context();
  return create();
}

CUtexObject create_texture(const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC& texture,
                           CUcontext context, CUcontext& used) {
  return create_in(context, used,
                   [&] { return driver::cuTexObjectCreate(&resource, &texture, nullptr); });
}

void check_filtering(CUarray_format format, const TextureOptions& options) {
  if (options.filter_mode == CU_TR_FILTER_MODE_LINEAR && reads_elements(options) &&
      is_integer_format(format)) {
    throw std::invalid_argument(
        "TextureOptions: linear filtering of integer data read as integers "
        "(ReadMode::ElementType, the default) is not possible; use "
        "read_mode = ReadMode::NormalizedFloat (and read_as_integer = false) or point "
        "filtering");
  }
}

void require_open(CUarray handle, const char* what) {
  if (handle == nullptr) {
    throw std::invalid_argument(std::string(what) + ": the Array is closed (or moved from)");
  }
}

}  // namespace

namespace {

// The bytes of one element of `format`, after checking its channel count.
std::size_t checked_element_bytes(const TextureFormat& format) {
  if (format.channels != 1 && format.channels != 2 && format.channels != 4) {
    throw std::invalid_argument("TextureFormat: channels is " + std::to_string(format.channels) +
                                "; a texture over memory has 1, 2 or 4");
  }
  return detail::channel_bytes(format.format) * format.channels;
}

}  // namespace

std::size_t TextureFormat::element_bytes() const noexcept {
  try {
    return checked_element_bytes(*this);
  } catch (const std::invalid_argument&) {
    return 0;
  }
}

namespace {

std::size_t elements_in(const char* what, std::size_t bytes, const TextureFormat& format) {
  const std::size_t element = checked_element_bytes(format);
  if (bytes % element != 0) {
    throw std::invalid_argument(std::string("TextureObject: ") + what + " of " +
                                std::to_string(bytes) + " bytes is not a whole number of " +
                                std::to_string(element) + "-byte elements");
  }
  return bytes / element;
}

// A texture over linear or pitched memory (no array to share), in the current context or
// device 0's primary one.
CUtexObject create_over_memory(const CUDA_RESOURCE_DESC& resource, const TextureFormat& format,
                               const TextureOptions& options, CUcontext& used) {
  check_filtering(format.format, options);
  return create_texture(resource, to_texture_desc(options), nullptr, used);
}

}  // namespace

// ---- TextureObject ----

TextureObject::TextureObject(const Array& array, const TextureOptions& options)
    : TextureObject(static_cast<const ArrayRef&>(array), options) {
  storage_ = array.storage_;
}

TextureObject::TextureObject(const ArrayRef& array, const TextureOptions& options) {
  require_open(array.handle(), "TextureObject");
  check_filtering(array.descriptor().Format, options);
  const CUDA_TEXTURE_DESC texture = to_texture_desc(options);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array.handle();
  handle_ = create_texture(resource, texture, array.context(), context_);
}

TextureObject::TextureObject(BufferRef memory, const TextureFormat& format,
                             const TextureOptions& options) {
  (void)elements_in("the memory", memory.size(), format);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_LINEAR;
  resource.res.linear.devPtr = memory.handle();
  resource.res.linear.format = format.format;
  resource.res.linear.numChannels = format.channels;
  resource.res.linear.sizeInBytes = memory.size();
  handle_ = create_over_memory(resource, format, options, context_);
}

TextureObject::TextureObject(const PitchedBufferRef& memory, const TextureFormat& format,
                             const TextureOptions& options) {
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_PITCH2D;
  resource.res.pitch2D.devPtr = memory.handle();
  resource.res.pitch2D.format = format.format;
  resource.res.pitch2D.numChannels = format.channels;
  resource.res.pitch2D.width = elements_in("a row", memory.width_bytes(), format);
  resource.res.pitch2D.height = memory.height();
  resource.res.pitch2D.pitchInBytes = memory.pitch();
  handle_ = create_over_memory(resource, format, options, context_);
}

TextureObject::TextureObject(const MipmappedArray& array, const TextureOptions& options) {
  check_filtering(array.level(0).descriptor().Format, options);
  const CUDA_TEXTURE_DESC texture = to_texture_desc(options);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  resource.res.mipmap.hMipmappedArray = array.handle();
  handle_ = create_texture(resource, texture, array.context(), context_);
  storage_ = array.storage_;
}

TextureObject::TextureObject(TextureObject&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)),
      context_(other.context_),
      storage_(std::move(other.storage_)) {}

TextureObject& TextureObject::operator=(TextureObject&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

TextureObject::~TextureObject() { close(); }

CUtexObject TextureObject::handle() const {
  if (handle_ == 0) {
    throw std::logic_error("TextureObject::handle on a closed TextureObject");
  }
  return handle_;
}

void TextureObject::close() noexcept {
  if (handle_ != 0) {
    detail::destroy_in(context_, "cuTexObjectDestroy", "TextureObject",
                       [&] { return driver::raw::cuTexObjectDestroy(handle_); });
    handle_ = 0;
  }
  storage_.reset();  // after the texture: the array may go with it
}

// ---- SurfaceObject ----

SurfaceObject::SurfaceObject(const Array& array)
    : SurfaceObject(static_cast<const ArrayRef&>(array)) {
  storage_ = array.storage_;
}

SurfaceObject::SurfaceObject(const ArrayRef& array) {
  require_open(array.handle(), "SurfaceObject");
  if ((array.descriptor().Flags & CUDA_ARRAY3D_SURFACE_LDST) == 0) {
    throw std::invalid_argument(
        "SurfaceObject: the array was not created with ArrayOptions::surface_load_store");
  }
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array.handle();
  handle_ =
      create_in(array.context(), context_, [&] { return driver::cuSurfObjectCreate(&resource); });
}

SurfaceObject::SurfaceObject(SurfaceObject&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)),
      context_(other.context_),
      storage_(std::move(other.storage_)) {}

SurfaceObject& SurfaceObject::operator=(SurfaceObject&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

SurfaceObject::~SurfaceObject() { close(); }

CUsurfObject SurfaceObject::handle() const {
  if (handle_ == 0) {
    throw std::logic_error("SurfaceObject::handle on a closed SurfaceObject");
  }
  return handle_;
}

void SurfaceObject::close() noexcept {
  if (handle_ != 0) {
    detail::destroy_in(context_, "cuSurfObjectDestroy", "SurfaceObject",
                       [&] { return driver::raw::cuSurfObjectDestroy(handle_); });
    handle_ = 0;
  }
  storage_.reset();  // after the surface: the array may go with it
}

}  // namespace cuwrap
