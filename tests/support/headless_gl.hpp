// Test support: an OpenGL context without a display or window, on an EGL device
// (EGL_EXT_platform_device, eglQueryDevicesEXT), for the graphics interop tests and the
// GL interop example.
//
// Nothing here links a GL library or includes a GL or EGL header: libEGL.so.1 and
// libOpenGL.so.0 (glvnd) are opened at run time and the few types, enumerants and entry
// points used are declared below with the values of the Khronos headers. A machine
// without them, or whose EGL has no device platform, gets a reason instead of a context.
//
// On the NVIDIA driver the device whose EGL_CUDA_DEVICE_NV is the wanted CUDA device is
// chosen; elsewhere (Mesa's software device) the first device that gives a context.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cuwrap::testing {

/// The GL enumerants the tests use (values of the Khronos GL headers).
namespace gl {
inline constexpr unsigned kTexture2D = 0x0DE1;
inline constexpr unsigned kUnsignedByte = 0x1401;
inline constexpr unsigned kFloat = 0x1406;
inline constexpr unsigned kRgba = 0x1908;
inline constexpr unsigned kRgba8 = 0x8058;
inline constexpr unsigned kRgba32f = 0x8814;
inline constexpr unsigned kRenderer = 0x1F01;
inline constexpr unsigned kVersion = 0x1F02;
inline constexpr unsigned kNearest = 0x2600;
inline constexpr unsigned kTextureMagFilter = 0x2800;
inline constexpr unsigned kTextureMinFilter = 0x2801;
inline constexpr unsigned kPackAlignment = 0x0D05;
inline constexpr unsigned kUnpackAlignment = 0x0CF5;
inline constexpr unsigned kArrayBuffer = 0x8892;
inline constexpr unsigned kPixelPackBuffer = 0x88EB;
inline constexpr unsigned kPixelUnpackBuffer = 0x88EC;
inline constexpr unsigned kStreamDraw = 0x88E0;
inline constexpr unsigned kDynamicCopy = 0x88EA;
inline constexpr unsigned kNoError = 0;
}  // namespace gl

/// The GL entry points the tests and the example call (GL 1.1 to 4.5, all in libOpenGL.so.0).
struct GLFunctions {
  void (*GenBuffers)(int, unsigned*) = nullptr;
  void (*DeleteBuffers)(int, const unsigned*) = nullptr;
  void (*BindBuffer)(unsigned, unsigned) = nullptr;
  void (*BufferData)(unsigned, std::intptr_t, const void*, unsigned) = nullptr;
  void (*GetBufferSubData)(unsigned, std::intptr_t, std::intptr_t, void*) = nullptr;
  void (*GenTextures)(int, unsigned*) = nullptr;
  void (*DeleteTextures)(int, const unsigned*) = nullptr;
  void (*BindTexture)(unsigned, unsigned) = nullptr;
  void (*TexParameteri)(unsigned, unsigned, int) = nullptr;
  void (*TexImage2D)(unsigned, int, int, int, int, int, unsigned, unsigned, const void*) = nullptr;
  void (*TexSubImage2D)(unsigned, int, int, int, int, int, unsigned, unsigned,
                        const void*) = nullptr;
  void (*GetTexImage)(unsigned, int, unsigned, unsigned, void*) = nullptr;
  void (*PixelStorei)(unsigned, int) = nullptr;
  void (*Finish)() = nullptr;
  unsigned (*GetError)() = nullptr;
  const unsigned char* (*GetString)(unsigned) = nullptr;
};

/// A current GL context on an EGL device, made with create(); released on destruction.
class HeadlessGL {
 public:
  /// Make a GL context current on this thread, on the EGL device of CUDA device
  /// `cuda_device` when the EGL driver tells (any device when -1 or when none tells).
  ///
  /// Returns nullptr and sets `why_not` (naming what is missing) when it cannot.
  static std::unique_ptr<HeadlessGL> create(std::string& why_not, int cuda_device = -1) {
    auto context = std::unique_ptr<HeadlessGL>(new HeadlessGL());
    why_not = context->open(cuda_device);
    if (!why_not.empty()) {
      return nullptr;
    }
    return context;
  }

  HeadlessGL(const HeadlessGL&) = delete;
  HeadlessGL& operator=(const HeadlessGL&) = delete;
  ~HeadlessGL() {
    if (display_ != nullptr) {
      if (context_ != nullptr) {
        egl_.MakeCurrent(display_, nullptr, nullptr, nullptr);
        egl_.DestroyContext(display_, context_);
      }
      egl_.Terminate(display_);
    }
    // The libraries stay loaded: GL drivers do not all survive being unloaded.
  }

  /// Return the GL entry points.
  const GLFunctions& gl() const noexcept { return gl_; }
  /// Return the CUDA device of the EGL device (EGL_CUDA_DEVICE_NV), or -1 when not told.
  int cuda_device() const noexcept { return cuda_device_; }
  /// Return GL_RENDERER and GL_VERSION, for messages.
  std::string description() const {
    const auto text = [&](unsigned name) {
      const unsigned char* s = gl_.GetString(name);
      return s == nullptr ? std::string("?") : std::string(reinterpret_cast<const char*>(s));
    };
    return text(gl::kRenderer) + ", GL " + text(gl::kVersion);
  }
  /// Return glGetError() (gl::kNoError when fine).
  unsigned error() const { return gl_.GetError(); }
  /// Return an EGL image of GL texture `texture` (level 0 of a GL_TEXTURE_2D), made with
  /// eglCreateImage (EGL 1.5), or nullptr when EGL cannot; destroy it with destroy_image.
  void* create_texture_image(unsigned texture) const {
    if (egl_.CreateImage == nullptr) {
      return nullptr;
    }
    const std::intptr_t attributes[] = {kNone};
    return egl_.CreateImage(display_, context_, kGLTexture2D,
                            reinterpret_cast<void*>(static_cast<std::uintptr_t>(texture)),
                            attributes);
  }
  /// Destroy an image of create_texture_image.
  void destroy_image(void* image) const {
    if (image != nullptr && egl_.DestroyImage != nullptr) {
      egl_.DestroyImage(display_, image);
    }
  }

 private:
  // EGL 1.5 entry points used here (EGLDisplay, EGLContext, ... are pointers).
  struct EGLFunctions {
    void* (*GetProcAddress)(const char*) = nullptr;
    unsigned (*Initialize)(void*, int*, int*) = nullptr;
    unsigned (*Terminate)(void*) = nullptr;
    unsigned (*BindAPI)(unsigned) = nullptr;
    unsigned (*ChooseConfig)(void*, const int*, void**, int, int*) = nullptr;
    void* (*CreateContext)(void*, void*, void*, const int*) = nullptr;
    unsigned (*DestroyContext)(void*, void*) = nullptr;
    unsigned (*MakeCurrent)(void*, void*, void*, void*) = nullptr;
    const char* (*QueryString)(void*, int) = nullptr;
    unsigned (*QueryDevicesEXT)(int, void**, int*) = nullptr;
    unsigned (*QueryDeviceAttribEXT)(void*, int, std::intptr_t*) = nullptr;
    void* (*GetPlatformDisplayEXT)(unsigned, void*, const int*) = nullptr;
    void* (*CreateImage)(void*, void*, unsigned, void*, const std::intptr_t*) = nullptr;
    unsigned (*DestroyImage)(void*, void*) = nullptr;
  };
  static constexpr int kNone = 0x3038;
  static constexpr int kExtensions = 0x3055;
  static constexpr unsigned kOpenGLApi = 0x30A2;
  static constexpr unsigned kPlatformDevice = 0x313F;
  static constexpr int kCudaDeviceNV = 0x323A;
  static constexpr int kSurfaceType = 0x3033;
  static constexpr int kPbufferBit = 0x0001;
  static constexpr int kRenderableType = 0x3040;
  static constexpr int kOpenGLBit = 0x0008;
  static constexpr unsigned kGLTexture2D = 0x30B1;  // EGL_GL_TEXTURE_2D

  HeadlessGL() = default;

  template <class Fn>
  static bool load(void* library, const char* name, Fn& fn) {
    fn = reinterpret_cast<Fn>(::dlsym(library, name));
    return fn != nullptr;
  }

  // Open EGL and GL, pick a device, make a context current; "" or what is missing.
  std::string open(int wanted_cuda_device) {
    void* egl = ::dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (egl == nullptr) {
      return "no EGL (libEGL.so.1 not found: install libegl1)";
    }
    void* opengl = ::dlopen("libOpenGL.so.0", RTLD_NOW | RTLD_LOCAL);
    if (opengl == nullptr) {
      return "no OpenGL (libOpenGL.so.0 not found: install libopengl0)";
    }
    if (!(load(egl, "eglGetProcAddress", egl_.GetProcAddress) &&
          load(egl, "eglInitialize", egl_.Initialize) &&
          load(egl, "eglTerminate", egl_.Terminate) && load(egl, "eglBindAPI", egl_.BindAPI) &&
          load(egl, "eglChooseConfig", egl_.ChooseConfig) &&
          load(egl, "eglCreateContext", egl_.CreateContext) &&
          load(egl, "eglDestroyContext", egl_.DestroyContext) &&
          load(egl, "eglMakeCurrent", egl_.MakeCurrent) &&
          load(egl, "eglQueryString", egl_.QueryString))) {
      return "libEGL.so.1 lacks an EGL 1.5 entry point";
    }
    load(egl, "eglCreateImage", egl_.CreateImage);  // optional: only the EGL image test uses them
    load(egl, "eglDestroyImage", egl_.DestroyImage);
    egl_.QueryDevicesEXT =
        reinterpret_cast<decltype(egl_.QueryDevicesEXT)>(egl_.GetProcAddress("eglQueryDevicesEXT"));
    egl_.QueryDeviceAttribEXT = reinterpret_cast<decltype(egl_.QueryDeviceAttribEXT)>(
        egl_.GetProcAddress("eglQueryDeviceAttribEXT"));
    egl_.GetPlatformDisplayEXT = reinterpret_cast<decltype(egl_.GetPlatformDisplayEXT)>(
        egl_.GetProcAddress("eglGetPlatformDisplayEXT"));
    if (egl_.QueryDevicesEXT == nullptr || egl_.GetPlatformDisplayEXT == nullptr) {
      return "EGL without EGL_EXT_device_enumeration / EGL_EXT_platform_device";
    }
    int count = 0;
    if (egl_.QueryDevicesEXT(0, nullptr, &count) == 0 || count <= 0) {
      return "EGL lists no device (no EGL vendor library: set __EGL_VENDOR_LIBRARY_FILENAMES?)";
    }
    std::vector<void*> devices(static_cast<std::size_t>(count));
    egl_.QueryDevicesEXT(count, devices.data(), &count);
    devices.resize(static_cast<std::size_t>(count));
    // The wanted CUDA device first, then the others in EGL's order.
    std::vector<std::pair<void*, int>> candidates;
    for (void* device : devices) {
      std::intptr_t cuda = -1;
      if (egl_.QueryDeviceAttribEXT == nullptr ||
          egl_.QueryDeviceAttribEXT(device, kCudaDeviceNV, &cuda) == 0) {
        cuda = -1;
      }
      const auto entry = std::pair(device, static_cast<int>(cuda));
      if (wanted_cuda_device >= 0 && cuda == wanted_cuda_device) {
        candidates.insert(candidates.begin(), entry);
      } else {
        candidates.push_back(entry);
      }
    }
    std::string last = "no EGL device gives a GL context";
    for (const auto& [device, cuda] : candidates) {
      last = try_device(device);
      if (last.empty()) {
        cuda_device_ = cuda;
        break;
      }
    }
    if (!last.empty()) {
      return last;
    }
    pin_loaded_libraries();
    const auto gl_function = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(opengl, name));
      if (fn == nullptr) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(egl_.GetProcAddress(name));
      }
      return fn != nullptr;
    };
    if (!(gl_function("glGenBuffers", gl_.GenBuffers) &&
          gl_function("glDeleteBuffers", gl_.DeleteBuffers) &&
          gl_function("glBindBuffer", gl_.BindBuffer) &&
          gl_function("glBufferData", gl_.BufferData) &&
          gl_function("glGetBufferSubData", gl_.GetBufferSubData) &&
          gl_function("glGenTextures", gl_.GenTextures) &&
          gl_function("glDeleteTextures", gl_.DeleteTextures) &&
          gl_function("glBindTexture", gl_.BindTexture) &&
          gl_function("glTexParameteri", gl_.TexParameteri) &&
          gl_function("glTexImage2D", gl_.TexImage2D) &&
          gl_function("glTexSubImage2D", gl_.TexSubImage2D) &&
          gl_function("glGetTexImage", gl_.GetTexImage) &&
          gl_function("glPixelStorei", gl_.PixelStorei) && gl_function("glFinish", gl_.Finish) &&
          gl_function("glGetError", gl_.GetError) && gl_function("glGetString", gl_.GetString))) {
      return "libOpenGL.so.0 lacks a GL entry point the tests use";
    }
    return "";
  }

  // Keep every library loaded now (the EGL vendor's, its GL driver's) loaded until the
  // process ends. The drivers keep allocations for the process's life; LeakSanitizer
  // reports them at exit, and only a library still loaded then can be named in its
  // suppressions (scripts/sanitize.sh): eglTerminate would unload Mesa's DRI driver.
  static void pin_loaded_libraries() {
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void*) {
          if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
            ::dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
          }
          return 0;
        },
        nullptr);
  }

  // Make a context current on EGL device `device`; "" or why not.
  std::string try_device(void* device) {
    void* display = egl_.GetPlatformDisplayEXT(kPlatformDevice, device, nullptr);
    if (display == nullptr) {
      return "eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT) gave no display";
    }
    int major = 0;
    int minor = 0;
    if (egl_.Initialize(display, &major, &minor) == 0) {
      return "eglInitialize failed on the device display";
    }
    const auto fail = [&](std::string why) {
      egl_.Terminate(display);
      return why;
    };
    if (egl_.BindAPI(kOpenGLApi) == 0) {
      return fail("eglBindAPI(EGL_OPENGL_API) failed: EGL without desktop GL");
    }
    const int attributes[] = {kSurfaceType, kPbufferBit, kRenderableType, kOpenGLBit, kNone};
    void* config = nullptr;
    int configs = 0;
    const bool have_config =
        egl_.ChooseConfig(display, attributes, &config, 1, &configs) != 0 && configs > 0;
    const char* extensions = egl_.QueryString(display, kExtensions);
    const bool surfaceless =
        extensions != nullptr &&
        std::string(extensions).find("EGL_KHR_surfaceless_context") != std::string::npos;
    if (!surfaceless) {
      return fail("the EGL device display lacks EGL_KHR_surfaceless_context");
    }
    void* context = egl_.CreateContext(display, have_config ? config : nullptr, nullptr, nullptr);
    if (context == nullptr) {
      return fail("eglCreateContext failed on the device display");
    }
    if (egl_.MakeCurrent(display, nullptr, nullptr, context) == 0) {
      egl_.DestroyContext(display, context);
      return fail("eglMakeCurrent (surfaceless) failed");
    }
    display_ = display;
    context_ = context;
    return "";
  }

  EGLFunctions egl_;
  GLFunctions gl_;
  void* display_ = nullptr;
  void* context_ = nullptr;
  int cuda_device_ = -1;
};

}  // namespace cuwrap::testing
