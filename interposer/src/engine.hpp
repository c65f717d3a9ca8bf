// The interposer's engine: what every generated wrapper (generated/interposer/
// interposer.cpp) calls around the real driver entry: fault injection, handle
// counting and tracing, configured from the environment. See docs/interposer.md.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cuwrap::interposer {

/// How an entry changes the set of live handles.
enum class Effect : unsigned char {
  None,           ///< no handle made or released
  Create,         ///< makes the handle its output parameter points to
  CreateByValue,  ///< takes a reference keyed by an input's value (primary context retain)
  Destroy,        ///< releases the handle its parameter holds
};

/// One wrapped driver entry point, as reached through cuGetProcAddress.
struct Entry {
  const char* name;        ///< the name cuGetProcAddress is asked for ("cuMemAlloc")
  const char* function;    ///< the header's name, for traces and CUWRAP_FAULT_FUNCTION
  const char* symbol;      ///< the real driver's exported symbol ("cuMemAlloc_v2")
  int version;             ///< the ABI version whose prototype the wrapper has
  bool per_thread;         ///< reached with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
  void* wrapper;           ///< the generated wrapper
  const char* params;      ///< parameter names, comma-separated
  std::uint32_t out_mask;  ///< bit i: parameter i is an output (traced after the call)
  std::uint32_t hex_mask;  ///< bit i: parameter i is a device address (traced in hex)
  Effect effect;           ///< what the call does to live handles
  const char* kind;        ///< the handle kind ("memory", "stream"), "" for Effect::None
  int handle_param;        ///< the parameter holding the handle, -1 for Effect::None
};

/// A CUresult's name and value, for traces and CUWRAP_FAULT_STATUS.
struct StatusName {
  const char* name;
  CUresult value;
};

// The generated table (generated/interposer/interposer.cpp).
extern const int kTableCudaVersion;
extern const Entry kEntries[];
extern const std::size_t kEntryCount;
extern const StatusName kStatuses[];
extern const std::size_t kStatusCount;

/// One argument of a call as the engine sees it: its bits and how to read what it
/// points to (only done for outputs, after a successful call).
struct ArgValue {
  /// How the bits are printed.
  enum class Kind : unsigned char { Unsigned, Signed, Pointer, Float, Other };
  Kind kind = Kind::Other;
  std::uint64_t bits = 0;
  double real = 0;
  std::uint64_t (*read)(const void*) = nullptr;  ///< reads the pointee's bits; null if none
};

/// Return the bits of a scalar or pointer value (0 for anything else).
template <typename T>
std::uint64_t to_bits(T value) noexcept {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<std::uintptr_t>(value);
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<std::uint64_t>(value);
  } else {
    return 0;
  }
}

/// Read the `P` at `p` as bits.
template <typename P>
std::uint64_t read_pointee(const void* p) noexcept {
  return to_bits(*static_cast<const P*>(p));
}

/// Describe one argument for tracing and handle counting.
template <typename T>
ArgValue describe(T value) noexcept {
  ArgValue a;
  if constexpr (std::is_pointer_v<T>) {
    a.kind = ArgValue::Kind::Pointer;
    a.bits = to_bits(value);
    using P = std::remove_cv_t<std::remove_pointer_t<T>>;
    if constexpr (std::is_integral_v<P> || std::is_enum_v<P> || std::is_pointer_v<P>) {
      a.read = &read_pointee<P>;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    a.kind = ArgValue::Kind::Float;
    a.real = static_cast<double>(value);
  } else if constexpr (std::is_enum_v<T> || (std::is_integral_v<T> && std::is_signed_v<T>)) {
    a.kind = ArgValue::Kind::Signed;
    a.bits = to_bits(value);
  } else if constexpr (std::is_integral_v<T>) {
    a.kind = ArgValue::Kind::Unsigned;
    a.bits = to_bits(value);
  }
  return a;
}

/// Return the real driver entry behind table entry `entry` (set when it was handed out).
void* real_entry(std::size_t entry) noexcept;

/// Count a call of `entry`; return true, with the status in `injected`, when this call
/// is the one to fail (CUWRAP_FAULT_AT): the real entry is then not called.
bool begin_call(std::size_t entry, CUresult& injected) noexcept;

/// Record the outcome of a call: trace it, update the live handles.
void end_call(std::size_t entry, CUresult status, bool injected, const ArgValue* args) noexcept;

/// Forward one call of table entry `entry` (whose wrapper has type `Fn`) to the driver.
template <typename Fn, typename... A>
CUresult forward(std::size_t entry, A... args) noexcept {
  CUresult status = CUDA_SUCCESS;
  const bool injected = begin_call(entry, status);
  if (!injected) {
    status = reinterpret_cast<Fn>(real_entry(entry))(args...);
  }
  const ArgValue values[sizeof...(A) + 1] = {describe(args)..., ArgValue{}};
  end_call(entry, status, injected, values);
  return status;
}

}  // namespace cuwrap::interposer
