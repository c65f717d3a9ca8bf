// Stage 2b: second typed forms. See shapes.hpp.
//
// The rules read the declaration and the header's documentation: a count parameter is
// paired with the arrays it counts by name (`numDependencies` ↔ `dependencies`) or by
// documentation (the count's text names the array, or the array's text names the
// count); an attribute enum's value types come from its enumerators' documentation.
// What the header does not say is in the override tables below, each with its reason.
#include "shapes.hpp"
#include "rules.hpp"
#include "text.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace cuwrap::gen {
namespace {

using text::has_word;
using text::is_integer;
using text::lower;

// ---------------------------------------------------------------------------------
// Override tables.

// Fixed-size outputs: the header declares a plain pointer, the documentation the size.
struct FixedOutput {
  const char* function;
  const char* param;
  std::size_t size;
};
constexpr FixedOutput kFixedOutputs[] = {
    // "Returned LUID": an 8-byte LUID (Windows' LUID, cudaDeviceProp::luid is char[8]).
    {"cuDeviceGetLuid", "luid", 8},
    // "Returned Type and Value of RGBA color": four floats.
    {"cuTexRefGetBorderColor", "pBorderColor", 4},
};

// Outputs the documentation does not call "returned".
struct ExtraOutput {
  const char* function;
  const char* param;
  const char* answer_status;  // a status that still returns the output, or nullptr
};
constexpr ExtraOutput kExtraOutputs[] = {
    // "the error info structure": why an update was refused. The refusal
    // (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) is the answer the info explains, not a failure.
    {"cuGraphExecUpdate", "resultInfo", "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    // "If the input resource cannot be cleanly split ..., the remaining is placed in here."
    {"cuDevSmResourceSplitByCount", "remaining", nullptr},
};

// Counts the caller requests and the call lowers: the array is sized by the request.
struct RequestedCount {
  const char* function;
  const char* count;
  const char* array;
};
constexpr RequestedCount kRequestedCounts[] = {
    // "nbGroups - ... the number of groups that would be or should be created": the
    // caller asks for nbGroups groups; the call writes how many it made.
    {"cuDevSmResourceSplitByCount", "nbGroups", "result"},
};

// Value types of key enumerators whose documentation does not name them. The types
// are those the functions' own documentation gives (cuPointerGetAttribute,
// cuMemRangeGetAttribute, cuCoredumpGetAttribute). Where that text says "a boolean"
// or gives no width, the type is the 4- or 8-byte type the driver writes.
struct KeyType {
  const char* enumerator;
  const char* type;
};
constexpr KeyType kKeyTypes[] = {
    {"CU_POINTER_ATTRIBUTE_CONTEXT", "CUcontext"},
    {"CU_POINTER_ATTRIBUTE_MEMORY_TYPE", "CUmemorytype"},
    {"CU_POINTER_ATTRIBUTE_DEVICE_POINTER", "CUdeviceptr"},
    {"CU_POINTER_ATTRIBUTE_HOST_POINTER", "void*"},
    {"CU_POINTER_ATTRIBUTE_P2P_TOKENS", "CUDA_POINTER_ATTRIBUTE_P2P_TOKENS"},
    {"CU_POINTER_ATTRIBUTE_SYNC_MEMOPS", "unsigned int"},
    {"CU_POINTER_ATTRIBUTE_BUFFER_ID", "unsigned long long"},
    {"CU_POINTER_ATTRIBUTE_IS_MANAGED", "unsigned int"},
    {"CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL", "int"},
    {"CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE", "unsigned int"},
    {"CU_POINTER_ATTRIBUTE_RANGE_START_ADDR", "CUdeviceptr"},
    {"CU_POINTER_ATTRIBUTE_RANGE_SIZE", "size_t"},
    {"CU_POINTER_ATTRIBUTE_MAPPED", "unsigned int"},
    {"CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES", "unsigned long long"},
    {"CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE", "unsigned int"},
    {"CU_POINTER_ATTRIBUTE_ACCESS_FLAGS", "unsigned long long"},
    {"CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE", "CUmemoryPool"},
    {"CU_POINTER_ATTRIBUTE_MAPPING_SIZE", "size_t"},
    {"CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR", "void*"},
    {"CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID", "unsigned long long"},
    {"CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE", "unsigned int"},
    // cuMemRangeGetAttribute: "dataSize must be 4" for each of these.
    {"CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY", "int"},
    {"CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION", "int"},
    {"CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION", "int"},
    {"CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE", "CUmemLocationType"},
    {"CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID", "int"},
    {"CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE", "CUmemLocationType"},
    {"CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID", "int"},
    // Not CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: an array of device ids, sized by the caller.
    // cuCoredumpGetAttribute: "Bool where true means ...", checked against sizeof(bool).
    {"CU_COREDUMP_ENABLE_ON_EXCEPTION", "bool"},
    {"CU_COREDUMP_TRIGGER_HOST", "bool"},
    {"CU_COREDUMP_LIGHTWEIGHT", "bool"},
    {"CU_COREDUMP_ENABLE_USER_TRIGGER", "bool"},
    {"CU_COREDUMP_GENERATION_FLAGS", "int"},
    // Not CU_COREDUMP_FILE / CU_COREDUMP_PIPE: strings of a caller-sized buffer.
    // Documented "(int)" after the first sentence, which the model does not keep.
    {"CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", "int"},
    // cuMemGetHandleForAddressRange: "a file descriptor" for DMA_BUF_FD.
    {"CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD", "int"},
};

// ---------------------------------------------------------------------------------
// Helpers.

// Whether a second typed form can return the pointee: unlike rules.cpp's returnable(), a
// char pointee can, a function pointer cannot.
bool shape_can_return(const Param& p) {
  return p.is_pointer && !p.pointee_const && p.pointee != "void" && p.pointee_complete &&
         p.pointee.find('(') == std::string::npos;
}

bool says_returned(const Param& p) {
  const std::string doc = lower(p.doc);
  return p.direction == "out" || has_word(doc, "returned") || has_word(doc, "returns") ||
         has_word(doc, "return") || has_word(doc, "output");
}

// How strongly `count` counts `array`: 3 by name (num/nb + the array's name), 2 when
// the count's documentation names the array, 1 when the array's names the count.
int pairing(const Param& count, const Param& array) {
  const std::string c = lower(count.name);
  const std::string a = lower(array.name);
  if (c == "num" + a || c == "nb" + a || c == "num_" + a) {
    return 3;
  }
  if (has_word(count.doc, array.name)) {
    return 2;
  }
  return has_word(array.doc, count.name) ? 1 : 0;
}

bool is_count_name(const std::string& name) {
  const std::string n = lower(name);
  return n.rfind("num", 0) == 0 || n.rfind("nb", 0) == 0 || n == "count" || n.ends_with("count");
}

// Whether `count` (by value) is the count that counts `array`: it pairs more strongly
// than any other count parameter of the function (a tie pairs neither).
bool counts(const Function& f, std::size_t count, std::size_t array) {
  const int score = pairing(f.params[count], f.params[array]);
  if (score == 0) {
    return false;
  }
  for (std::size_t other = 0; other < f.params.size(); ++other) {
    const Param& o = f.params[other];
    if (other != count && !o.is_pointer && is_integer(o.type) && is_count_name(o.name) &&
        pairing(o, f.params[array]) >= score) {
      return false;
    }
  }
  return true;
}

// Whether the function has an in/out element count (cuGraphGetNodes' numNodes).
std::optional<std::size_t> in_out_count(const Function& f) {
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    if (p.is_pointer && !p.pointee_const && is_integer(p.pointee) && is_count_name(p.name) &&
        (p.direction == "in,out" || lower(p.doc).find("see description") != std::string::npos)) {
      return i;
    }
  }
  return std::nullopt;
}

// The sibling that returns the count of an enumeration: nvrtcGetSupportedArchs →
// nvrtcGetNumSupportedArchs; cuModuleEnumerateFunctions → cuModuleGetFunctionCount.
std::string sibling_count(const FunctionPlan& plan, const std::vector<FunctionPlan>& all,
                          const std::vector<std::string>& input_types) {
  const std::string& name = plan.function.name;
  std::vector<std::string> candidates;
  if (const std::size_t at = name.find("Get"); at != std::string::npos) {
    candidates.push_back(name.substr(0, at) + "GetNum" + name.substr(at + 3));
  }
  if (const std::size_t at = name.find("Enumerate"); at != std::string::npos) {
    std::string thing = name.substr(at + 9);
    if (thing.ends_with("s")) {
      thing.pop_back();
    }
    candidates.push_back(name.substr(0, at) + "Get" + thing + "Count");
  }
  for (const auto& other : all) {
    if (std::find(candidates.begin(), candidates.end(), other.function.name) == candidates.end() ||
        other.shape != Shape::Value) {
      continue;
    }
    const auto outs = other.outputs();
    std::vector<std::string> inputs;
    for (std::size_t i = 0; i < other.roles.size(); ++i) {
      if (other.roles[i] == ParamRole::Input) {
        inputs.push_back(other.function.params[i].type);
      }
    }
    if (outs.size() == 1 && is_integer(other.function.params[outs[0]].pointee) &&
        inputs == input_types) {
      return other.function.name;
    }
  }
  return {};
}

// A type named in an enumerator's documentation: "(value type = cuuint64_t)" or a
// trailing "(CUmemFabricHandle)" / "(int)" that names a type the headers know.
std::string documented_type(const std::string& doc, const std::set<std::string>& known) {
  static const std::regex kValueType(R"(value type\s*=\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*\))");
  static const std::regex kTrailing(R"(\(\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*\)\s*\.?\s*$)");
  std::smatch m;
  if (std::regex_search(doc, m, kValueType) || std::regex_search(doc, m, kTrailing)) {
    std::string type = m[1];
    if (is_integer(type) || known.count(type) != 0 || type == "float" || type == "double") {
      return type;
    }
  }
  return {};
}

// The key enum of a `void*` getter/setter/exporter, and its value types.
std::optional<KeyTable> key_of(const Function& f, const Header& header, std::size_t& key) {
  const std::string& n = f.name;
  const bool accessor = n.find("Get") != std::string::npos || n.find("Set") != std::string::npos ||
                        n.find("Export") != std::string::npos ||
                        n.find("Import") != std::string::npos;
  if (!accessor) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    if (f.params[i].is_pointer) {
      continue;
    }
    for (const auto& e : header.enums) {
      if (!e.name.empty() && e.name == f.params[i].type) {
        KeyTable table = key_table(e, header);
        if (!table.types.empty()) {
          key = i;
          return table;
        }
      }
    }
  }
  return std::nullopt;
}

// Rules 1: a `void*` value typed by an attribute or handle-type parameter.
bool plan_keyed(const Function& f, const Header& header, SecondForm& form) {
  std::size_t value = f.params.size();
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    if (f.params[i].is_pointer && f.params[i].pointee == "void") {
      if (value != f.params.size()) {
        return false;  // two void* values (cuMemRangeGetAttributes' arrays): not one value
      }
      value = i;
    }
  }
  std::size_t key = 0;
  const auto table = value == f.params.size() ? std::nullopt : key_of(f, header, key);
  if (!table) {
    return false;
  }
  form.params[value] = {FormRole::KeyedValue, {}, 0, 0, false};
  form.params[key] = {FormRole::Key, {}, 0, 0, false};
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    if (i != value && i != key && lower(p.name).find("size") != std::string::npos &&
        (is_integer(p.type) || (p.is_pointer && is_integer(p.pointee)))) {
      form.params[i] = {FormRole::KeyedSize, p.is_pointer ? p.pointee : p.type, 0, 0, false};
    }
  }
  form.key = table;
  // An import takes the handle its export returns (cuMemImportFromShareableHandle: the
  // POSIX file descriptor itself, the fabric handle's address) as an input.
  form.import_handle = f.name.find("Import") != std::string::npos;
  form.setter = f.name.find("Set") != std::string::npos || form.import_handle;
  form.shape = "typed attribute";
  form.why = "the value's type depends on " + f.params[key].name;
  return true;
}

// Rule 1b: several values typed by an array of keys (cuPointerGetAttributes): a
// variadic template returning a tuple.
bool plan_keyed_plural(const Function& f, const Header& header, SecondForm& form) {
  std::size_t values = f.params.size();
  std::size_t keys = f.params.size();
  std::size_t count = f.params.size();
  std::optional<KeyTable> table;
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    if (p.is_pointer && !p.pointee_const && p.pointee == "void*") {
      values = i;
    }
    for (const auto& e : header.enums) {
      if (p.is_pointer && !e.name.empty() && e.name == p.pointee) {
        KeyTable t = key_table(e, header);
        if (!t.types.empty()) {
          keys = i;
          table = std::move(t);
        }
      }
    }
  }
  if (values == f.params.size() || !table) {
    return false;
  }
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    if (!f.params[i].is_pointer && is_integer(f.params[i].type) &&
        is_count_name(f.params[i].name) && pairing(f.params[i], f.params[keys]) > 0) {
      count = i;
    }
  }
  if (count == f.params.size()) {
    return false;
  }
  form.params[values] = {FormRole::KeyedValue, {}, 0, 0, false};
  form.params[keys] = {FormRole::Key, {}, 0, 0, false};
  form.params[count] = {FormRole::SpanCount, f.params[count].type, 0, 0, false};
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    if (p.is_pointer && is_integer(p.pointee) && lower(p.name).find("size") != std::string::npos) {
      form.params[i] = {FormRole::KeyedSize, p.pointee, 0, 0, false};
    }
  }
  form.key = std::move(table);
  form.plural = true;
  form.shape = "typed attribute";
  form.why = "the values' types depend on " + f.params[keys].name;
  return true;
}

bool unassigned(const SecondForm& form, const FunctionPlan& plan, std::size_t i) {
  return form.params[i].role == FormRole::Input && plan.roles[i] == ParamRole::Input;
}

// Rules 2-4: outputs the override tables name.
void plan_overrides(const FunctionPlan& plan, SecondForm& form) {
  const Function& f = plan.function;
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    for (const auto& o : kFixedOutputs) {
      if (f.name == o.function && p.name == o.param && p.is_pointer) {
        form.params[i] = {FormRole::Fixed, p.pointee, o.size, 0, false};
        form.why = "fixed-size output " + p.name;
      }
    }
    for (const auto& o : kExtraOutputs) {
      if (f.name == o.function && p.name == o.param && shape_can_return(p)) {
        form.params[i] = {FormRole::Output, p.pointee, 0, 0, false};
        form.answer_status = o.answer_status == nullptr ? "" : o.answer_status;
        form.why = "output " + p.name;
      }
    }
  }
  for (const auto& o : kRequestedCounts) {
    if (f.name != o.function) {
      continue;
    }
    for (std::size_t c = 0; c < f.params.size(); ++c) {
      for (std::size_t a = 0; a < f.params.size(); ++a) {
        if (f.params[c].name == o.count && f.params[a].name == o.array &&
            shape_can_return(f.params[a])) {
          form.params[c] = {FormRole::VectorCount, f.params[c].pointee, 0, 0, false};
          form.params[a] = {FormRole::Vector, f.params[a].pointee, 0, c, true};
          form.sizing = Sizing::Requested;
          form.why = "caller-sized " + f.params[a].name;
        }
      }
    }
  }
}

// Rule 4b: the library's two-call buffer protocol (rules.cpp found the count and its
// arrays): vectors sized by calling again with the count the call asks for.
void plan_capacity(const FunctionPlan& plan, SecondForm& form) {
  if (plan.sized_arrays.empty() || !plan.sized_capacity_in || plan.sized_in_bytes ||
      form.sizing != Sizing::None) {
    return;
  }
  const Function& f = plan.function;
  std::string arrays;
  for (const std::size_t a : plan.sized_arrays) {
    form.params[a] = {FormRole::Vector, f.params[a].pointee, 0, plan.sized_count, true};
    arrays += (arrays.empty() ? "" : ", ") + f.params[a].name;
  }
  form.params[plan.sized_count] = {FormRole::VectorCount, f.params[plan.sized_count].pointee, 0, 0,
                                   false};
  form.sizing = Sizing::Capacity;
  form.why = "two-call buffer protocol: " + f.params[plan.sized_count].name + " sizes " + arrays +
             ", " + plan.sized_status + " asks for more";
}

// Rule 5: an enumeration with an in/out count.
void plan_enumeration(const FunctionPlan& plan, SecondForm& form) {
  const Function& f = plan.function;
  const auto count = in_out_count(f);
  if (!count || form.sizing != Sizing::None) {
    return;
  }
  bool any = false;
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    if (i != *count && unassigned(form, plan, i) && shape_can_return(p) &&
        p.pointee.find('*') == std::string::npos) {
      form.params[i] = {FormRole::Vector, p.pointee, 0, *count, true};
      any = true;
    }
  }
  if (any) {
    form.params[*count] = {FormRole::VectorCount, f.params[*count].pointee, 0, 0, false};
    form.sizing = Sizing::Enumerate;
    form.why = "enumeration counted by " + f.params[*count].name;
  }
}

std::vector<std::string> input_types(const FunctionPlan& plan, const SecondForm& form) {
  std::vector<std::string> types;
  for (std::size_t i = 0; i < plan.roles.size(); ++i) {
    if (form.params[i].role == FormRole::Input && plan.roles[i] == ParamRole::Input) {
      types.push_back(plan.function.params[i].type);
    }
  }
  return types;
}

bool is_count(const Param& p) {
  return !p.is_pointer && is_integer(p.type) && is_count_name(p.name);
}

// Whether `p` may be an array of elements (a span or a vector of its pointee).
bool may_be_array(const Param& p) {
  return p.is_pointer && p.pointee != "void" && p.pointee != "char";
}

// Whether input `a` is counted by `c` though neither names the other: its name extends
// that of an array `c` counts (`optionValues` beside `options`, `jitOptionsValues` beside
// `jitOptions`); or `c` is the function's only count and `a`'s documentation calls it an
// array ("Array of dependent nodes", "Optional array of edge data") or names an array
// `c` counts ("Optional edge data for the dependencies"). One count counts all the arrays
// beside it: cuGraphAddDependencies' `from`, `to` and `edgeData` are all numDependencies
// long.
bool counted_beside(const Function& f, std::size_t c, std::size_t a,
                    const std::vector<std::size_t>& counted) {
  const Param& p = f.params[a];
  for (std::size_t i : counted) {
    std::string stem = f.params[i].name;
    if (stem.size() > 1 && stem.back() == 's') {
      stem.pop_back();
    }
    if (p.name.size() > stem.size() && p.name.rfind(stem, 0) == 0) {
      return true;
    }
  }
  for (std::size_t other = 0; other < f.params.size(); ++other) {
    if (other != c && is_count(f.params[other])) {
      return false;
    }
  }
  if (has_word(lower(p.doc), "array")) {
    return true;
  }
  return std::any_of(counted.begin(), counted.end(),
                     [&](std::size_t i) { return has_word(p.doc, f.params[i].name); });
}

// Rule 6: count + pointer pairs: input arrays become spans; output arrays of the same
// count become vectors as long as the spans, or sized by a sibling's count. Every input
// array of one count is a span (counted_beside), and all of them must be equally long.
void plan_spans(const FunctionPlan& plan, const std::vector<FunctionPlan>& all, SecondForm& form) {
  const Function& f = plan.function;
  for (std::size_t c = 0; c < f.params.size(); ++c) {
    const Param& count = f.params[c];
    if (!is_count(count) || !unassigned(form, plan, c)) {
      continue;
    }
    std::vector<std::size_t> inputs;
    std::vector<std::size_t> outputs;
    for (std::size_t a = 0; a < f.params.size(); ++a) {
      const Param& p = f.params[a];
      if (a == c || !may_be_array(p) || !unassigned(form, plan, a) || !counts(f, c, a)) {
        continue;
      }
      (shape_can_return(p) && says_returned(p) ? outputs : inputs).push_back(a);
    }
    std::vector<std::size_t> beside;
    for (std::size_t a = 0; a < f.params.size(); ++a) {
      const Param& p = f.params[a];
      const bool taken = std::find(inputs.begin(), inputs.end(), a) != inputs.end() ||
                         std::find(outputs.begin(), outputs.end(), a) != outputs.end();
      if (a != c && !taken && may_be_array(p) && unassigned(form, plan, a) &&
          !(shape_can_return(p) && says_returned(p)) && counted_beside(f, c, a, inputs)) {
        beside.push_back(a);
      }
    }
    if (!inputs.empty()) {
      inputs.insert(inputs.end(), beside.begin(), beside.end());
      std::sort(inputs.begin(), inputs.end());
    }
    if (!inputs.empty() && (outputs.empty() || form.sizing == Sizing::None)) {
      for (std::size_t a : inputs) {
        const Param& p = f.params[a];
        form.params[a] = {FormRole::Span, p.pointee + " const", 0, c, true};
        form.params[a].optional = has_word(lower(p.doc), "optional");
      }
      form.params[c] = {FormRole::SpanCount, count.type, 0, 0, false};
      for (std::size_t a : outputs) {
        form.params[a] = {FormRole::Vector, f.params[a].pointee, 0, inputs.front(), true};
        form.sizing = Sizing::SpanLength;
      }
      form.why = "arrays counted by " + count.name;
    } else if (inputs.empty() && outputs.size() == 1 && form.sizing == Sizing::None) {
      const std::size_t a = outputs.front();
      form.params[c] = {FormRole::VectorCount, count.type, 0, 0, false};
      form.params[a] = {FormRole::Vector, f.params[a].pointee, 0, c, true};
      const std::string sibling = sibling_count(plan, all, input_types(plan, form));
      if (sibling.empty()) {
        form.params[c] = {};
        form.params[a] = {};
        continue;
      }
      form.sizing = Sizing::Sibling;
      form.count_function = sibling;
      form.why = "enumeration counted by " + sibling;
    }
  }
}

// Rule 7: an output array with no count parameter, counted by a sibling
// (nvrtcGetSupportedArchs after nvrtcGetNumSupportedArchs).
void plan_sibling_array(const FunctionPlan& plan, const std::vector<FunctionPlan>& all,
                        SecondForm& form) {
  const Function& f = plan.function;
  if (form.sizing != Sizing::None) {
    return;
  }
  for (std::size_t a = 0; a < f.params.size(); ++a) {
    const Param& p = f.params[a];
    const std::string doc = lower(p.doc);
    // Elements that are themselves arrays (nvPTXCompilerGetSupportedVersions' `int (*)[2]`)
    // cannot be a std::vector's: the form taking the caller's array stays the only one.
    if (!unassigned(form, plan, a) || !shape_can_return(p) || p.pointee == "char" ||
        p.pointee.find('[') != std::string::npos || doc.find("array") == std::string::npos ||
        !says_returned(p)) {
      continue;
    }
    form.params[a] = {FormRole::Vector, p.pointee, 0, 0, false};
    const std::string sibling = sibling_count(plan, all, input_types(plan, form));
    if (sibling.empty()) {
      form.params[a] = {};
      continue;
    }
    form.sizing = Sizing::Sibling;
    form.count_function = sibling;
    form.why = "array counted by " + sibling;
    return;
  }
}

// Rule 8: a value the call reads and replaces ("value to swap", "auto-advancing
// iterator", a buffer size "See description").
void plan_in_out(const FunctionPlan& plan, SecondForm& form) {
  const Function& f = plan.function;
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    const std::string doc = lower(p.doc);
    if (unassigned(form, plan, i) && shape_can_return(p) &&
        p.pointee.find('*') == std::string::npos &&
        (p.direction == "in,out" || doc.find("swap") != std::string::npos ||
         doc.find("auto-advancing") != std::string::npos ||
         doc.find("see description") != std::string::npos)) {
      form.params[i] = {FormRole::InOut, p.pointee, 0, 0, false};
      form.why = "in/out " + p.name;
    }
  }
}

// JIT options (cuModuleLoadDataEx, cuLinkCreate, cuLibraryLoadData...): a span of
// CUjit_option beside a span of `void*` of one count. The driver writes the output
// options' values back (log sizes, the wall time), so the values are a span of mutable
// `void*`. A call that makes or takes a CUlinkState leaves the logs to the link state's
// options; any other gets an error log of its own when the caller asked for none.
void plan_jit(const Function& f, SecondForm& form) {
  for (std::size_t o = 0; o < f.params.size(); ++o) {
    if (form.params[o].role != FormRole::Span || f.params[o].pointee != "CUjit_option") {
      continue;
    }
    for (std::size_t v = 0; v < f.params.size(); ++v) {
      if (form.params[v].role == FormRole::Span && form.params[v].count == form.params[o].count &&
          f.params[v].pointee == "void*") {
        form.params[o].jit = JitRole::Options;
        form.params[v].jit = JitRole::Values;
        form.params[v].element = "void*";
        const bool link = std::any_of(f.params.begin(), f.params.end(), [](const Param& p) {
          return p.type == "CUlinkState" || p.pointee == "CUlinkState";
        });
        form.jit = link ? JitUse::CallersLogs : JitUse::OwnErrorLog;
        form.jit_count = form.params[o].count;
        form.jit_options = o;
        form.jit_values = v;
        return;
      }
    }
  }
}

std::string shape_of(const SecondForm& form) {
  std::size_t outputs = 0;
  bool vector = false;
  bool span = false;
  for (const auto& p : form.params) {
    outputs += p.role == FormRole::Output || p.role == FormRole::InOut ||
                       p.role == FormRole::Vector || p.role == FormRole::Fixed
                   ? 1
                   : 0;
    vector = vector || p.role == FormRole::Vector;
    span = span || p.role == FormRole::Span;
  }
  if (outputs > 1) {
    return "aggregate";
  }
  if (outputs == 1) {
    return vector ? "vector" : "value";
  }
  return span ? "span input" : "void";
}

}  // namespace

const char* form_role_name(FormRole role) {
  switch (role) {
    case FormRole::Input:
      return "input";
    case FormRole::Output:
      return "output";
    case FormRole::InOut:
      return "in-out";
    case FormRole::Vector:
      return "vector";
    case FormRole::VectorCount:
      return "vector size";
    case FormRole::Fixed:
      return "array";
    case FormRole::Span:
      return "span";
    case FormRole::SpanCount:
      return "span size";
    case FormRole::Key:
      return "template key";
    case FormRole::KeyedValue:
      return "keyed value";
    case FormRole::KeyedSize:
      return "sizeof value";
  }
  return "unknown";
}

void add_second_forms(std::vector<FunctionPlan>& functions, const Header& header) {
  for (auto& plan : functions) {
    if (plan.shape != Shape::Void && plan.shape != Shape::Value && plan.shape != Shape::Aggregate) {
      continue;
    }
    const Function& f = plan.function;
    SecondForm form;
    form.params.resize(f.params.size());
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      if (plan.roles[i] == ParamRole::Output) {
        form.params[i] = {FormRole::Output, f.params[i].pointee, 0, 0, false};
      }
    }
    if (!plan_keyed(f, header, form) && !plan_keyed_plural(f, header, form)) {
      plan_overrides(plan, form);
      plan_capacity(plan, form);
      plan_enumeration(plan, form);
      plan_spans(plan, functions, form);
      plan_jit(f, form);
      plan_sibling_array(plan, functions, form);
      plan_in_out(plan, form);
      if (form.why.empty()) {
        continue;  // the first form already says everything
      }
      form.shape = shape_of(form);
    }
    const bool taken = plan.shape == Shape::Aggregate;
    form.result_name = f.name + (taken ? "_typed_result" : "_result");
    plan.second = std::move(form);
  }
}

KeyTable key_table(const Enum& e, const Header& header) {
  KeyTable table{e.name, e.name + "_value", {}};
  std::set<std::string> known;
  for (const auto& t : header.typedefs) {
    known.insert(t.name);
  }
  std::set<std::int64_t> values;  // an alias of a value already typed adds nothing
  for (const auto& k : e.enumerators) {
    std::string type = documented_type(k.doc, known);
    for (const auto& o : kKeyTypes) {
      if (k.name == o.enumerator) {
        type = o.type;
      }
    }
    if (!type.empty() && values.insert(k.value).second) {
      table.types.emplace_back(k.name, type);
    }
  }
  return table;
}

}  // namespace cuwrap::gen
