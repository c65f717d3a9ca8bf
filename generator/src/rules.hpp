// Stage 2: decide how each C function is wrapped (the binding plan).
//
// Input is the API model (model.hpp); output is a Plan that render.cpp turns into text
// and report.cpp into the coverage report. The decisions are: which parameters are
// outputs, which statuses are answers rather than failures, which functions take a
// `(char* buf, int len)` string buffer, which pairs are size queries, which calls
// attach a log to their exception, and which functions only get the raw form (and why).
#pragma once

#include "libraries.hpp"
#include "model.hpp"
#include "shapes.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace cuwrap::gen {

/// How one parameter appears in the typed form.
enum class ParamRole {
  Input,         ///< passed through as is
  Output,        ///< written by the call; returned by value
  StringBuffer,  ///< `char*` of a (buffer, length) pair; returned as std::string
  StringLength,  ///< the length of that pair; supplied by the wrapper
};

/// The shape of the typed (throwing) form.
enum class Shape {
  Void,         ///< status-returning, no outputs: `void f(inputs)`
  Value,        ///< one output: `T f(inputs)`
  Aggregate,    ///< several outputs: `f_result f(inputs)`
  Answer,       ///< the status is an answer: `bool f(inputs)`
  String,       ///< a string buffer output: `std::string f(inputs)`
  PassThrough,  ///< no status (e.g. returns const char*): same signature, LoadError on load
  RawOnly,      ///< only the raw form; see raw_only_reason
};

/// Return the shape's name as the report writes it ("value", "aggregate", ...).
const char* shape_name(Shape shape);

/// The one-call form of a size-query pair (`nvrtcGetPTX(prog)` → std::string).
struct OneCall {
  std::string size_function;  ///< "nvrtcGetPTXSize"
  bool text = false;          ///< std::string (PTX, logs) or std::vector<char> (images)
};

/// A decision that the header's prose made: without the parameters' documentation
/// (their `\param` text; `[out]`-style markers kept) the types and names would
/// classify the function otherwise. The report lists such functions "to review".
struct ProseDecision {
  std::string param;  ///< the parameter whose role or form the text decided ("" for none)
  std::string rule;   ///< the rule that decided, as the report prints it
};

/// The decisions for one function.
struct FunctionPlan {
  Function function;
  std::size_t index = 0;         ///< entry in the library's symbol table and slot arrays
  std::vector<ParamRole> roles;  ///< parallel to function.params
  /// Parallel to roles: the rule that decided each role ("documented as written by the
  /// call", "[out] marker", ...); empty where the function has no inferred roles.
  std::vector<std::string> role_rules;
  Shape shape = Shape::RawOnly;
  bool returns_status = false;
  std::string answer_status;      ///< Shape::Answer: the status that means "not yet"
  std::string log_handle;         ///< parameter whose log the exception carries, or ""
  std::string raw_only_reason;    ///< Shape::RawOnly: why
  std::string entry_local;        ///< local variable holding the entry point ("fn")
  std::string result_local;       ///< local variable for Shape::Aggregate ("result")
  std::size_t string_length = 0;  ///< Shape::String: buffer size the wrapper allocates
  std::optional<OneCall> one_call;
  std::optional<SecondForm> second;  ///< a more typed overload (vectors, spans, ...)
  /// The library's two-call buffer protocol (LibraryConfig::sized_buffer_status): a count
  /// pointer that is the arrays' capacity in and the needed count out. The first form takes
  /// the count and the arrays as the C function does; the second sizes them by calling
  /// again (shapes.cpp). Empty `sized_arrays` when the function has no such pair.
  std::size_t sized_count = 0;
  std::vector<std::size_t> sized_arrays;
  /// The count is the capacity in as well as the count out; false for a count that is
  /// written only (nvmlDeviceGetGpuInstances' count: the caller sizes the array from
  /// elsewhere), which the first form returns, with no second form.
  bool sized_capacity_in = false;
  /// The count is in bytes (a name ending in "size": nvmlVgpuInstanceGetMetadata's
  /// bufferSize): no vector of elements can be sized by it, the first form only.
  bool sized_in_bytes = false;
  std::string sized_status;  ///< the status that says "too small" (NVML_ERROR_INSUFFICIENT_SIZE)
  /// The decisions the documentation made (see ProseDecision); empty when the types
  /// and names alone classify the function the same way.
  std::vector<ProseDecision> to_review;

  /// Return the indices of output parameters (Output role), in order.
  std::vector<std::size_t> outputs() const;
};

/// One case of a to_string switch.
struct EnumCase {
  std::string name;
  std::string description;  ///< short human text (used by describe() for status enums)
};

/// An enum as it gets to_string / operator<< (duplicate values folded).
struct EnumPlan {
  std::string name;
  std::vector<EnumCase> cases;           ///< one per distinct value, the preferred name
  std::vector<std::string> enumerators;  ///< every enumerator's name, aliases too (the report)
  bool is_status = false;                ///< the library's status type: also gets describe()
};

/// One line of an X-macro attribute list (device_attributes.inc ...).
struct AttributeEntry {
  std::string name;          ///< "multiprocessor_count"
  std::string enumerator;    ///< "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"
  std::string type = "int";  ///< the accessor's type: "bool" for yes/no attributes
};

/// An X-macro attribute list file.
struct AttributeList {
  std::string file;   ///< "device_attributes.inc"
  std::string macro;  ///< "CUWRAP_DEVICE_ATTRIBUTE"
  std::string enum_name;
  std::vector<AttributeEntry> entries;
};

/// A handle type the header creates and destroys in pairs (cuModuleLoad* / cuModuleUnload):
/// it gets an owning unique_handle<H>.
struct OwningHandle {
  std::string handle;                 ///< "CUmodule": a typedef of a pointer
  std::string destroy;                ///< "cuModuleUnload": takes the handle alone
  std::vector<std::string> creators;  ///< "cuModuleLoad", ...: return the handle
};

/// Everything rendered for one library.
struct LibraryPlan {
  LibraryConfig config;
  std::vector<FunctionPlan> functions;  ///< header order; index == position
  std::vector<EnumPlan> enums;
  std::vector<std::string> skipped_enums;  ///< anonymous enums (no type to overload on)
  std::vector<OwningHandle> owning;        ///< handle types with proven create/destroy pairs
};

/// Find the create/destroy pairs of `header`'s handle types (exposed for tests). A pair
/// is proven when: the handle type is a typedef of a pointer (integer handles such as
/// CUdeviceptr and CUtexObject share one type, so a type cannot say how to release them);
/// exactly one non-deprecated function takes it alone and is named for its release,
/// cu<Family>Destroy / Unload / Unregister<rest> or cuDestroy<Family>; and at least one
/// function returns it as its only output, named for its creation in the same family
/// (Destroy: Create or Import, Unload: Load, Unregister: Register).
std::vector<OwningHandle> owning_handles(const std::vector<FunctionPlan>& functions,
                                         const Header& header);

/// The whole binding plan.
struct Plan {
  int cuda_version = 0;
  AbiSource abi_source = AbiSource::Typedefs;  ///< where the driver ABI versions came from
  std::vector<LibraryPlan> libraries;
  std::vector<AttributeList> attribute_lists;
};

/// Build the plan for `api`. Each function's `to_review` is filled by planning the
/// headers a second time without the parameters' documentation and comparing.
Plan make_plan(const Api& api);

/// Plan one function of `config`'s library (exposed for tests); size-query pairs are
/// found afterwards by add_one_call_forms.
FunctionPlan plan_function(const Function& function, const LibraryConfig& config);

/// Give `X(..., char* buf)` a one-call form where a sibling `XSize(..., size_t*)`
/// returns the size (nvrtcGetPTX + nvrtcGetPTXSize).
void add_one_call_forms(std::vector<FunctionPlan>& functions);

/// A local variable name for a wrapper body that no parameter of `f` already uses: `name`,
/// with '_' appended while a parameter has it.
std::string free_local(const Function& f, std::string name);

/// Return a short human description of a status from its doc comment or name.
std::string describe_status(const Enumerator& enumerator);

/// Return `type name` as a declaration (handles function pointer types).
std::string declare(const std::string& type, const std::string& name);

}  // namespace cuwrap::gen
