// Stage 2b: the second typed form of a function, at least as typed as cuda.bindings.
//
// rules.cpp gives every function its first typed form (outputs by value). Some C
// functions say more than that form can express: an enumeration (`cuGraphGetNodes`
// with an in/out count), a count + pointer input, a `void*` value whose type depends
// on an attribute, a fixed-size array. For those, this stage plans a second form:
// vectors, `std::span` inputs, `std::array` outputs, and templates keyed by the
// attribute. The first form stays as an overload, for callers holding raw arrays.
#pragma once

#include "model.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap::gen {

struct FunctionPlan;

/// How one parameter appears in the second form.
enum class FormRole {
  Input,        ///< as in the C signature
  Output,       ///< written by the call; returned
  InOut,        ///< taken by value, passed by address, returned (cuThreadExchangeStreamCaptureMode)
  Vector,       ///< an array the call fills: returned as std::vector
  VectorCount,  ///< the count of the Vector outputs; supplied by the wrapper
  Fixed,        ///< a fixed-size array output: returned as std::array
  Span,         ///< an input array: std::span<const T>
  SpanCount,    ///< the count of the Span inputs: their (equal) length
  Key,          ///< the attribute or handle type: a template parameter
  KeyedValue,   ///< the `void*` value the Key types
  KeyedSize,    ///< the size of that value: sizeof
};

/// Return the role's name as the report writes it ("span", "vector size", ...).
const char* form_role_name(FormRole role);

/// How the Vector outputs are sized.
enum class Sizing {
  None,
  Enumerate,   ///< in/out count: query with null arrays, fill, retry if it grew
  Sibling,     ///< a sibling returns the count (cuModuleGetFunctionCount)
  SpanLength,  ///< as long as the Span inputs of the same count
  Requested,   ///< the caller asks for a count, the call writes how many it made
  /// The library's two-call buffer protocol (NVML): the count is the capacity in and the
  /// needed count out; call with none, then again with the count asked for, until it fits.
  Capacity,
};

/// The value type per enumerator of a key enum (attribute → value type).
struct KeyTable {
  std::string enum_name;  ///< "CUpointer_attribute"
  std::string traits;     ///< "CUpointer_attribute_value": the trait template's name
  std::vector<std::pair<std::string, std::string>> types;  ///< enumerator → value type
};

/// A JIT option array pair (CUjit_option keys beside their `void*` values): the driver
/// writes output options (log sizes, wall time) back into the values.
enum class JitRole {
  None,
  Options,  ///< the CUjit_option keys: read only
  Values,   ///< their values: written back, so a span of non-const `void*`
};

/// One parameter of the second form.
struct FormParam {
  FormRole role = FormRole::Input;
  std::string element;    ///< Vector/Fixed/Span element type, Output/InOut value type
  std::size_t fixed = 0;  ///< Fixed: the array's length
  std::size_t count = 0;  ///< Vector/Span: index of its count parameter (if has_count)
  bool has_count = false;
  /// Span: documented "Optional": may be empty beside the others (passed as nullptr)
  bool optional = false;
  JitRole jit = JitRole::None;  ///< Span: part of a JIT option pair
};

/// How the typed forms pass a JIT option pair (SecondForm::jit).
enum class JitUse {
  None,
  /// One call (cuModuleLoadDataEx, cuLibraryLoadData...): without an error-log option
  /// from the caller, the wrapper adds one, and a failure's DriverError carries the log.
  OwnErrorLog,
  /// The caller's logs only: the call makes or extends a link state, whose own options
  /// (cuLinkCreate's) receive the logs, and cuLinkCreate keeps the values array.
  CallersLogs,
};

/// The second typed form of one function.
struct SecondForm {
  std::vector<FormParam> params;  ///< parallel to the function's parameters
  Sizing sizing = Sizing::None;
  std::string count_function;   ///< Sizing::Sibling: the function returning the count
  std::string answer_status;    ///< a status that returns the outputs instead of throwing
  std::optional<KeyTable> key;  ///< Key/KeyedValue: the value types
  bool setter = false;          ///< the keyed value is an input (cuMemPoolSetAttribute)
  /// The keyed value is an OS handle passed as the `void*` itself (an integer such as a
  /// file descriptor cast to it, a pointer as it is, a struct by address): the imports.
  bool import_handle = false;
  /// Several keys at once (cuPointerGetAttributes): Key is the key array, KeyedValue
  /// the `void**` values, KeyedSize their sizes, SpanCount the number of keys.
  bool plural = false;
  std::string result_name;  ///< aggregate type name when several outputs
  /// The report's shape name: "vector", "aggregate", "value", "typed attribute",
  /// "span input" or "void".
  std::string shape;
  std::string why;              ///< which rule made it (the report shows it)
  JitUse jit = JitUse::None;    ///< a JIT option pair, and how the typed forms pass it
  std::size_t jit_count = 0;    ///< JitUse: the pair's count parameter
  std::size_t jit_options = 0;  ///< JitUse: the CUjit_option array
  std::size_t jit_values = 0;   ///< JitUse: the values array
};

/// Plan the second form of every function that needs one. `header` gives the enums
/// (attribute value types from their documentation) and typedef names.
void add_second_forms(std::vector<FunctionPlan>& functions, const Header& header);

/// Return the value-type table of the key enum `e`, from its documentation ("(value
/// type = cuuint64_t)", "(CUmemFabricHandle)") and the override table; empty types
/// when neither knows any enumerator (exposed for tests).
KeyTable key_table(const Enum& e, const Header& header);

}  // namespace cuwrap::gen
