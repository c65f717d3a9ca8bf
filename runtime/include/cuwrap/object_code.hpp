// ObjectCode: compiled device code (CUBIN, PTX, LTO-IR or fatbin), loaded lazily.
//
// An ObjectCode is a cheap copyable handle: copies share one immutable implementation
// that holds the code, the name-expression map recorded at compile time and, once the
// first kernel is requested, the CUlibrary loaded with cuLibraryLoadData. The library
// API is context-independent, so creating an ObjectCode needs neither a GPU nor a
// current context; only get_kernel() and handle() load the code (once, thread-safe).
// get_kernel() also reads the kernel's parameter layout, which needs a context: when
// none is current, device 0's primary context is made current (as Device::set_current).
// The library is unloaded when the last ObjectCode or Kernel referring to it is gone.
#pragma once

#include <cuwrap/detail/path.hpp>
#include <cuwrap/detail/ref.hpp>

#include <cuda.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuwrap {

class BufferRef;  // <cuwrap/buffer.hpp>
class Device;
class Kernel;

/// Kinds of device code a Program produces and an ObjectCode holds.
enum class TargetType {
  Ptx,      ///< PTX text (JIT-compiled by the driver when loaded)
  Cubin,    ///< a CUDA binary for one architecture
  Ltoir,    ///< LTO-IR: link it with a Linker (link_time_optimization) before loading
  Fatbin,   ///< a fat binary (several CUBIN/PTX images)
  Object,   ///< a host object file with relocatable device code (nvcc -rdc -c): link input
  Library,  ///< a static library (.a) of such objects: link input
};

/// Return the lower-case name of `type` ("ptx", "cubin", "ltoir", "fatbin", "object",
/// "library").
std::string_view to_string(TargetType type) noexcept;

namespace detail {
struct ObjectCodeImpl;  // runtime/src/launch/object_code.cpp
void ref_acquire(const ObjectCodeImpl* impl) noexcept;
void ref_release(const ObjectCodeImpl* impl) noexcept;
}  // namespace detail

/// Compiled device code; copyable handle sharing ownership of the loaded library.
///
/// Example:
/// \code
///   cuwrap::ObjectCode obj = program.compile(cuwrap::TargetType::Cubin);
///   cuwrap::Kernel k = obj.get_kernel("saxpy");
/// \endcode
class ObjectCode {
 public:
  /// Name expression → lowered (mangled) symbol pairs, as cuda.core's `symbol_mapping`:
  /// get_kernel() and lowered_name() then accept the expressions.
  using SymbolMapping = std::vector<std::pair<std::string, std::string>>;

  /// Wrap a CUBIN image (copied). `name` labels the code in messages.
  static ObjectCode from_cubin(std::span<const std::byte> data, std::string name = "",
                               SymbolMapping symbol_mapping = {});
  /// Wrap the image held as chars; from_cubin(std::as_bytes(data), ...) is the one form.
  [[deprecated("pass std::as_bytes(data)")]] static ObjectCode from_cubin(
      std::span<const char> data, std::string name = "", SymbolMapping symbol_mapping = {}) {
    return from_cubin(std::as_bytes(data), std::move(name), std::move(symbol_mapping));
  }
  /// Wrap PTX text (JIT-compiled by the driver when first loaded).
  static ObjectCode from_ptx(std::string ptx, std::string name = "",
                             SymbolMapping symbol_mapping = {});
  /// Wrap an LTO-IR image (copied); it can only be linked, not loaded.
  static ObjectCode from_ltoir(std::span<const std::byte> data, std::string name = "",
                               SymbolMapping symbol_mapping = {});
  /// Wrap the image held as chars; from_ltoir(std::as_bytes(data), ...) is the one form.
  [[deprecated("pass std::as_bytes(data)")]] static ObjectCode from_ltoir(
      std::span<const char> data, std::string name = "", SymbolMapping symbol_mapping = {}) {
    return from_ltoir(std::as_bytes(data), std::move(name), std::move(symbol_mapping));
  }
  /// Wrap a fatbin image (copied); the driver loads the image that fits the device.
  static ObjectCode from_fatbin(std::span<const std::byte> data, std::string name = "",
                                SymbolMapping symbol_mapping = {});
  /// Wrap the image held as chars; from_fatbin(std::as_bytes(data), ...) is the one form.
  [[deprecated("pass std::as_bytes(data)")]] static ObjectCode from_fatbin(
      std::span<const char> data, std::string name = "", SymbolMapping symbol_mapping = {}) {
    return from_fatbin(std::as_bytes(data), std::move(name), std::move(symbol_mapping));
  }
  /// Wrap a relocatable object file (nvcc -rdc=true -c); it can only be linked (Linker).
  static ObjectCode from_object(std::span<const std::byte> data, std::string name = "",
                                SymbolMapping symbol_mapping = {});
  /// Wrap the image held as chars; from_object(std::as_bytes(data), ...) is the one form.
  [[deprecated("pass std::as_bytes(data)")]] static ObjectCode from_object(
      std::span<const char> data, std::string name = "", SymbolMapping symbol_mapping = {}) {
    return from_object(std::as_bytes(data), std::move(name), std::move(symbol_mapping));
  }
  /// Wrap a static library (.a) of relocatable objects; it can only be linked (Linker).
  static ObjectCode from_library(std::span<const std::byte> data, std::string name = "",
                                 SymbolMapping symbol_mapping = {});
  /// Wrap the image held as chars; from_library(std::as_bytes(data), ...) is the one form.
  [[deprecated("pass std::as_bytes(data)")]] static ObjectCode from_library(
      std::span<const char> data, std::string name = "", SymbolMapping symbol_mapping = {}) {
    return from_library(std::as_bytes(data), std::move(name), std::move(symbol_mapping));
  }
  /// Read code from `path`, choosing the kind by extension: .cubin .ptx .ltoir .fatbin,
  /// .o (Object) and .a (Library).
  ///
  /// Throws std::invalid_argument naming an unknown extension, and std::system_error
  /// (code(): the errno of the failed call, e.g. ENOENT, EACCES, EISDIR) naming the
  /// path when the file cannot be read.
  static ObjectCode from_file(const std::filesystem::path& path, SymbolMapping symbol_mapping = {});
  /// Read code from the file named `path` (a string: no `<filesystem>` needed); as above.
  template <detail::PathString Path>
  static ObjectCode from_file(const Path& path, SymbolMapping symbol_mapping = {}) {
    return from_file_named(std::string_view(path), std::move(symbol_mapping));
  }

  /// Return the kernel `name`: a symbol name or a name expression given at compile time.
  ///
  /// Loads the code on first use. Throws std::invalid_argument listing the kernels that
  /// exist when there is no such kernel, and std::logic_error for LTO-IR, objects and
  /// libraries (link them first).
  Kernel get_kernel(std::string_view name) const;
  /// Return the memory of the `__device__` or `__constant__` variable `name` (a symbol
  /// name or a name expression given at compile time) in `device`'s primary context.
  /// NVRTC takes a variable's name expression as its address: compile with
  /// `{"&scale<float>"}` and ask for `get_global("&scale<float>", dev)`.
  ///
  /// Copy to and from it like any memory: `code.get_global("table", dev).as<float>()
  /// .copy_from(host, stream)` (BufferRef, DeviceSpan; include <cuwrap/buffer.hpp>).
  /// Loads the code on first use; the memory stays valid while the code is loaded (as
  /// long as an ObjectCode or Kernel of it exists). Throws std::invalid_argument naming
  /// the variable when there is none of that name, std::logic_error for code that cannot
  /// be loaded (LTO-IR, objects, libraries).
  BufferRef get_global(std::string_view name, const Device& device) const;
  /// Return the symbol names of every kernel in the code (cuLibraryEnumerateKernels;
  /// the lowered names of templates). Loads the code on first use.
  std::vector<std::string> kernel_names() const;
  /// Return the lowered (mangled) name of a name expression given at compile time.
  ///
  /// Throws std::invalid_argument naming the expression and the known expressions.
  std::string lowered_name(std::string_view name_expression) const;
  /// Return every name expression given at compile time with its lowered name.
  const std::vector<std::pair<std::string, std::string>>& name_expressions() const;

  /// Return the kind of code held.
  TargetType code_type() const;
  /// Return the code bytes (PTX without a terminating NUL).
  std::span<const char> code() const;
  /// Return the label given at creation (the program name for compiled code).
  const std::string& name() const;
  /// Return the loaded library, loading it on first use.
  CUlibrary handle() const;

  /// Build from parts; used by Program and Linker to attach name expressions.
  static ObjectCode from_parts(TargetType type, std::string code, std::string name,
                               std::vector<std::pair<std::string, std::string>> lowered);

 private:
  explicit ObjectCode(detail::Ref<detail::ObjectCodeImpl> impl);
  static ObjectCode from_file_named(std::string_view path, SymbolMapping symbol_mapping);

  detail::Ref<detail::ObjectCodeImpl> impl_;
};

}  // namespace cuwrap
