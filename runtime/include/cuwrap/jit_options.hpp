// JIT options of the driver's JIT calls (cuModuleLoadDataEx, cuLinkCreate, cuLinkAddData,
// cuLinkAddFile, cuLibraryLoadData, cuLibraryLoadFromFile), in and out.
//
// cuwrap::driver::JitOptions sets options by enum with typed values and asks for the info
// and error logs and the wall time, which it reads back after the call; the typed forms
// of <cuwrap/driver.hpp> take it in place of the two option arrays. How those typed
// forms pass the arrays (and add an error log to a call that asked for none) is
// <cuwrap/detail/jit_call.hpp>'s. It also gives cuLinkAddData's forms whose input is
// read-only bytes or text.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cuwrap {
namespace driver {

/// JIT options in and out, for the typed forms of cuModuleLoadDataEx, cuLinkCreate,
/// cuLinkAddData, cuLinkAddFile, cuLibraryLoadData and cuLibraryLoadFromFile.
///
/// \code
///   cuwrap::driver::JitOptions jit;
///   jit.set(CU_JIT_MAX_REGISTERS, 32u);
///   jit.info_log(8192);
///   jit.error_log(8192);
///   jit.wall_time();
///   CUmodule m = cuwrap::driver::cuModuleLoadDataEx(image, jit);
///   std::cout << jit.info_log() << " in " << jit.wall_time_ms() << " ms\n";
/// \endcode
///
/// The driver writes the logs and the wall time while the call runs. cuLinkCreate keeps
/// the values for the link state's life: a JitOptions given to it must outlive the link
/// state and stay unchanged until cuLinkDestroy; its logs fill as inputs are added and
/// the link completes.
class JitOptions {
 public:
  /// Set `option` to `value` (an integer, an enumerator or a pointer, as the option's
  /// documentation types it; a later set of the same option replaces it).
  ///
  /// The logs and the wall time have their own calls (info_log(bytes), error_log(bytes),
  /// wall_time()): setting those options here throws std::invalid_argument.
  template <class T>
  JitOptions& set(CUjit_option option, T value) {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>,
                  "a JIT option's value is an integer, an enumerator or a pointer");
    if constexpr (std::is_pointer_v<T>) {
      put(option, const_cast<void*>(static_cast<const void*>(value)), "set");
    } else {
      put(option,
          reinterpret_cast<void*>(static_cast<std::uintptr_t>(static_cast<std::uint64_t>(value))),
          "set");
    }
    return *this;
  }

  /// Ask for the informational log, `bytes` long (including its NUL); read it with info_log().
  JitOptions& info_log(std::size_t bytes);
  /// Ask for the error log, `bytes` long (including its NUL); read it with error_log().
  JitOptions& error_log(std::size_t bytes);
  /// Ask for the wall time the compiler and linker spent; read it with wall_time_ms().
  JitOptions& wall_time();

  /// Return the informational log of the last call ("" if none was asked for or written).
  std::string info_log() const;
  /// Return the error log of the last call ("" if none was asked for or written).
  std::string error_log() const;
  /// Return the wall time of the last call in milliseconds (0 if wall_time() was not asked for).
  float wall_time_ms() const noexcept;

  /// Return the options set, in order.
  std::span<const CUjit_option> options() const noexcept;
  /// Return the values, made ready for one call: the log buffers and their sizes set
  /// anew (the driver overwrote the sizes with what it filled), the wall time cleared.
  std::span<void*> values_for_call();
  /// Return the number of options set.
  std::size_t size() const noexcept { return options_.size(); }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  std::size_t index(CUjit_option option) const noexcept;
  // `caller`: the public call setting it (its options managed by info_log, error_log
  // and wall_time are refused there); nullptr for those calls themselves.
  void put(CUjit_option option, void* value, const char* caller);
  std::string log_of(const std::vector<char>& buffer, CUjit_option size_option) const;

  std::vector<CUjit_option> options_;
  std::vector<void*> values_;
  std::vector<char> info_;
  std::vector<char> error_;
};

/// \brief Adds an input to a pending link, given as bytes (a cubin, a fatbin, LTO-IR,
/// an object or a library).
///
/// Typed form of cuLinkAddData whose input is read-only: the C function takes `void*`
/// though it never writes through it, so the caller needs no const_cast. `jit` as for the
/// other JIT forms; omit it for none.
void cuLinkAddData(CUlinkState state, CUjitInputType type, std::span<const std::byte> data,
                   const char* name, JitOptions& jit);
/// \brief Adds an input to a pending link, given as bytes, without JIT options.
void cuLinkAddData(CUlinkState state, CUjitInputType type, std::span<const std::byte> data,
                   const char* name);
/// \brief Adds an input to a pending link, given as text (PTX): the driver gets it
/// NUL-terminated, as it requires, whether or not `text` ends in a NUL.
void cuLinkAddData(CUlinkState state, CUjitInputType type, std::string_view text, const char* name,
                   JitOptions& jit);
/// \brief Adds an input to a pending link, given as text (PTX), without JIT options.
void cuLinkAddData(CUlinkState state, CUjitInputType type, std::string_view text, const char* name);

}  // namespace driver
}  // namespace cuwrap
