// Texture and surface objects. See cuwrap/texture.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/texture.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

bool is_integer_format(CUarray_format format) {
  return format != CU_AD_FORMAT_FLOAT && format != CU_AD_FORMAT_HALF;
}

CUDA_TEXTURE_DESC to_texture_desc(const TextureOptions& options) {
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
               (options.read_as_integer ? CU_TRSF_READ_AS_INTEGER : 0U) |
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
auto create_in(CUcontext context, Create&& create) {
  detail::ensure_driver_initialized();
  if (context != nullptr) {
    const detail::ScopedContext scope(context);
    return create();
  }
  const detail::ScopedCurrentOrPrimary scope(0);
  return create();
}

CUtexObject create_texture(const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC& texture,
                           CUcontext context) {
  return create_in(context, [&] { return driver::cuTexObjectCreate(&resource, &texture, nullptr); });
}

void check_filtering(CUarray_format format, const TextureOptions& options) {
  if (options.filter_mode == CU_TR_FILTER_MODE_LINEAR && options.read_as_integer &&
      is_integer_format(format)) {
    throw std::invalid_argument(
        "TextureOptions: linear filtering of integer data read as integers is not possible; "
        "drop read_as_integer (values are then normalised) or use point filtering");
  }
}

}  // namespace

// ---- TextureObject ----

TextureObject::TextureObject(const ArrayRef& array, const TextureOptions& options) {
  check_filtering(array.descriptor().Format, options);
  const CUDA_TEXTURE_DESC texture = to_texture_desc(options);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array.handle();
  handle_ = create_texture(resource, texture, array.context());
}

TextureObject::TextureObject(const MipmappedArray& array, const TextureOptions& options) {
  check_filtering(array.level(0).descriptor().Format, options);
  const CUDA_TEXTURE_DESC texture = to_texture_desc(options);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  resource.res.mipmap.hMipmappedArray = array.handle();
  handle_ = create_texture(resource, texture, array.context());
}

TextureObject::TextureObject(TextureObject&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)) {}

TextureObject& TextureObject::operator=(TextureObject&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, 0);
  }
  return *this;
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
    detail::report_release_failure(driver::raw::cuTexObjectDestroy(handle_), "cuTexObjectDestroy",
                                   "TextureObject");
    handle_ = 0;
  }
}

// ---- SurfaceObject ----

SurfaceObject::SurfaceObject(const ArrayRef& array) {
  if ((array.descriptor().Flags & CUDA_ARRAY3D_SURFACE_LDST) == 0) {
    throw std::invalid_argument(
        "SurfaceObject: the array was not created with ArrayOptions::surface_load_store");
  }
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array.handle();
  handle_ = create_in(array.context(), [&] { return driver::cuSurfObjectCreate(&resource); });
}

SurfaceObject::SurfaceObject(SurfaceObject&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)) {}

SurfaceObject& SurfaceObject::operator=(SurfaceObject&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, 0);
  }
  return *this;
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
    detail::report_release_failure(driver::raw::cuSurfObjectDestroy(handle_),
                                   "cuSurfObjectDestroy", "SurfaceObject");
    handle_ = 0;
  }
}

}  // namespace cuwrap
