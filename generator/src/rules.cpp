// Stage 2: model → binding plan. See rules.hpp.
//
// Parameter roles are inferred from the declaration's shape and the header's own
// documentation (`\param pctx - Returned context handle`, `\param [out] prog ...`).
// What inference gets wrong is fixed in the override tables right below, each entry
// with the reason; everything else is a rule that applies to every function.
#include "rules.hpp"

#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace cuwrap::gen {
namespace {

using text::has_word;
using text::is_integer;
using text::is_word_char;
using text::lower;

// ---------------------------------------------------------------------------------
// Override tables: the decisions inference cannot make from the header.

// Statuses that answer a question instead of reporting a failure. The typed form
// returns bool: true for success, false for this status; anything else throws.
struct AnswerOverride {
  const char* function;
  const char* status;
};
constexpr AnswerOverride kAnswers[] = {
    // "Is the stream's work done?" — NOT_READY means "not yet", not an error.
    {"cuStreamQuery", "CUDA_ERROR_NOT_READY"},
    // "Has the event completed?" — same question for events.
    {"cuEventQuery", "CUDA_ERROR_NOT_READY"},
    // With a timeout, NOT_READY means "not locked in time; still RUNNING", which a
    // caller polls on rather than treats as failure.
    {"cuCheckpointProcessLock", "CUDA_ERROR_NOT_READY"},
    // Not here: nvrtcGetPCHCreateStatus. Several statuses answer it (created, not
    // attempted, heap exhausted), which one bool cannot carry; raw:: returns them all.
};

// Parameter roles that inference gets wrong.
struct ParamOverride {
  const char* function;
  const char* param;
  ParamRole role;
};
constexpr ParamOverride kParamOverrides[] = {
    // cufile.h documents no parameter. "fh will be updated for use in cuFileRead,
    // cuFileWrite" (NVIDIA's cuFile API reference): the registered handle is the result.
    {"cuFileHandleRegister", "fh", ParamRole::Output},
    // "batch_idp: pointer to the batch handle" the call sets up (the API reference).
    {"cuFileBatchIOSetUp", "batch_idp", ParamRole::Output},
    // "value: the location where the value will be stored" (no "returned" in the text).
    {"cuFileGetParameterBool", "value", ParamRole::Output},
    // "barSize: pointer to store the BAR size": one value written.
    {"cuFileGetBARSizeInKB", "barSize", ParamRole::Output},
    // "Buffer to receive slab sizes/counts" of `len` elements the caller sizes: arrays,
    // not one value each (as one, the library would write past it).
    {"cuFileGetParameterPosixPoolSlabArray", "size_values", ParamRole::Input},
    {"cuFileGetParameterPosixPoolSlabArray", "count_values", ParamRole::Input},
    // Documented as "Major/Minor revision number" with no "returned", and the name has
    // no "Get"; both are plain outputs.
    {"cuDeviceComputeCapability", "major", ParamRole::Output},
    {"cuDeviceComputeCapability", "minor", ParamRole::Output},
    // "The captured graph": the graph capture produced, written by the call.
    {"cuStreamEndCapture", "phGraph", ParamRole::Output},
    // "Time between hStart and hEnd in ms": the elapsed time is the result.
    {"cuEventElapsedTime", "pMilliseconds", ParamRole::Output},
    // "A handle representing the registered callback instance": written by the call.
    {"cuDeviceRegisterAsyncNotification", "callback", ParamRole::Output},
    // "... flags are returned ... See ::cuStreamCreate for the list of valid flags": one
    // flags word, though the text mentions a list.
    {"cuStreamGetFlags", "flags", ParamRole::Output},
    // nvvm.h marks it "[in] prog" though the brief says the call sets "*prog": the
    // created handle is the result.
    {"nvvmCreateProgram", "prog", ParamRole::Output},
    // "Returned Type and Value of RGBA color": four floats, an array the caller sizes.
    {"cuTexRefGetBorderColor", "pBorderColor", ParamRole::Input},
    // "Returned CUDA devices": an array of cudaDeviceCount the caller sizes, not one value
    // (as one, the driver would write past it); the count written stays the result.
    {"cuGLGetDevices", "pCudaDevices", ParamRole::Input},
    // "Connection on which to return" and "CUDA stream on which to return the frame":
    // the caller's connection and stream, passed by pointer; only the frame is returned.
    {"cuEGLStreamProducerReturnFrame", "conn", ParamRole::Input},
    {"cuEGLStreamProducerReturnFrame", "pStream", ParamRole::Input},
    // "Populates the 2D Array passed via output paramater versions": an `int (*)[2]` of
    // nvPTXCompilerGetNumSupportedVersions rows the caller sizes, not one returned value
    // (a function cannot return `int[2]`).
    {"nvPTXCompilerGetSupportedVersions", "versions", ParamRole::Input},
};

// The buffer a `(char* buf, int len)` string output gets. Device names and PCI bus ids
// are far shorter; cuDeviceGetName documents 256 as ample.
constexpr std::size_t kStringLength = 256;

// ---------------------------------------------------------------------------------
// Text helpers.

bool has_any_word(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return has_word(text, w); });
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Whether `text` contains `phrase` starting at a word boundary ("paramsArray of" does
// not contain "array of").
bool has_phrase(std::string_view text, std::string_view phrase) {
  for (std::size_t at = text.find(phrase); at != std::string_view::npos;
       at = text.find(phrase, at + 1)) {
    if (at == 0 || !is_word_char(text[at - 1])) {
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------
// Parameter roles.

// Whether the documentation says the parameter is written by the call.
bool doc_says_output(const std::string& doc) {
  return has_any_word(doc, {"returned", "returns", "return", "store", "receive", "output"}) ||
         doc.rfind("on success, this will", 0) == 0 || contains(doc, " to create");
}

// Whether the documentation describes several elements (an array the caller sizes).
// "Returned array" alone is one CUarray handle, so the phrases are specific.
bool doc_says_array(const std::string& doc) {
  if (contains(doc, "pointer to an array") || contains(doc, "size of the array")) {
    return false;  // one pointer to a driver-owned array, or one count
  }
  for (const std::string_view phrase :
       {"array of", "array to ", "array containing", "two-dimensional array", "list of",
        "buffer where", "of each"}) {
    if (has_phrase(doc, phrase)) {
      return true;
    }
  }
  return has_word(doc, "arrays");
}

// Whether the documentation says the caller must look elsewhere: an in/out value.
bool doc_says_in_out(const std::string& doc) { return contains(doc, "see description"); }

// Whether `p` is an in/out element count such as cuGraphGetNodes' `size_t* numNodes`
// ("See description"): on input the array's capacity, on output the number written.
bool is_in_out_count(const Param& p) {
  if (!p.is_pointer || p.pointee_const || !is_integer(p.pointee)) {
    return false;
  }
  const std::string name = lower(p.name);
  const bool count_name =
      name.rfind("num", 0) == 0 || name.rfind("nb", 0) == 0 || contains(name, "count");
  return count_name && (p.direction == "in,out" || doc_says_in_out(lower(p.doc)));
}

// Whether a value of the pointee can be returned (a complete, non-void, non-char type).
bool returnable(const Param& p) {
  return p.is_pointer && !p.pointee_const && p.pointee != "void" && p.pointee != "char" &&
         p.pointee_complete;
}

// Decide the roles of all parameters and, in `why`, the rule that decided each; return
// a reason when no typed form can be made.
std::string infer_roles(const Function& f, std::vector<ParamRole>& roles,
                        std::vector<std::string>& why) {
  roles.assign(f.params.size(), ParamRole::Input);
  why.assign(f.params.size(), "nothing says the call writes it");
  const bool has_in_out_count = std::any_of(f.params.begin(), f.params.end(), is_in_out_count);
  // Getters write through every plain pointer they take; creators through undocumented
  // handle pointers (cuMemPoolCreate documents no parameter).
  const bool getter = contains(f.name, "Get");
  const bool creator = contains(f.name, "Create");
  // A size next to a void* buffer is the buffer's size, read by the call
  // (cuCoredumpGetAttribute's `size_t* size`).
  const bool has_void_buffer = std::any_of(f.params.begin(), f.params.end(), [](const Param& p) {
    return p.is_pointer && !p.pointee_const && p.pointee == "void";
  });
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    const std::string doc = lower(p.doc);
    const bool marked_out = p.direction == "out";
    if (!returnable(p)) {
      // void* and char* outputs are caller-owned buffers: inputs. An output of a type
      // that cannot be created (an incomplete struct) has no typed form.
      const bool opaque = p.is_pointer && !p.pointee_const && !p.pointee_complete &&
                          p.pointee != "void" && p.pointee.find('(') == std::string::npos;
      if (opaque && (marked_out || doc_says_output(doc))) {
        why[i] = marked_out ? "[out] marker on an incomplete type"
                            : "documented as written by the call, of an incomplete type";
        return "output parameter '" + p.name + "' points to incomplete type '" + p.pointee + "'";
      }
      why[i] = p.is_pointer ? "not a pointer to a value that can be returned" : "passed by value";
      continue;
    }
    if (p.direction == "in" || p.direction == "in,out") {
      why[i] = "[" + p.direction + "] marker";
      continue;
    }
    if (doc_says_in_out(doc)) {
      why[i] = "documented \"see description\": read and written by the call";
      continue;
    }
    if (doc_says_array(doc)) {
      why[i] = "documented as an array the caller sizes";
      continue;
    }
    // cuGraphGetNodes: `numNodes` is an in/out count, `nodes` the array it sizes.
    if (has_in_out_count && (is_in_out_count(p) || p.pointee.find('*') == std::string::npos)) {
      why[i] = is_in_out_count(p) ? "in/out element count" : "array of an in/out element count";
      continue;
    }
    const bool buffer_size =
        has_void_buffer && is_integer(p.pointee) && contains(lower(p.name), "size");
    // An undocumented pointer is an output only where the APIs put outputs: first
    // (cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, ...)) or named so
    // (cuStreamGetAttribute's value_out, nvrtcGetNVVMSize's nvvmSizeRet).
    const bool output_position =
        i == 0 || p.name.ends_with("_out") || p.name.ends_with("Out") || p.name.ends_with("Ret");
    const bool by_name = p.direction.empty() && !buffer_size && (getter || creator) &&
                         (doc.empty() ? output_position : getter);
    if (marked_out) {
      roles[i] = ParamRole::Output;
      why[i] = "[out] marker";
    } else if (doc_says_output(doc)) {
      roles[i] = ParamRole::Output;
      why[i] = R"(documented as written by the call ("returned", "stores", ...))";
    } else if (by_name) {
      roles[i] = ParamRole::Output;
      why[i] = doc.empty() ? std::string(getter ? "Get" : "Create") +
                                 " function, undocumented pointer in an output position"
                           : "Get function: a documented pointer whose text does not say "
                             "\"returned\" is still an output";
    } else if (buffer_size) {
      why[i] = "size of a void* buffer";
    }
  }
  for (const auto& o : kParamOverrides) {
    if (f.name != o.function) {
      continue;
    }
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      if (f.params[i].name == o.param) {
        roles[i] = o.role;
        why[i] = "override (rules.cpp kParamOverrides)";
      }
    }
  }
  return {};
}

// `(char* name, int len, ...)`: a string the call writes into a caller-sized buffer.
bool mark_string_output(const Function& f, std::vector<ParamRole>& roles,
                        std::vector<std::string>& why) {
  for (std::size_t i = 0; i + 1 < f.params.size(); ++i) {
    const Param& buf = f.params[i];
    const Param& len = f.params[i + 1];
    const std::string len_name = lower(len.name);
    const bool length_name = len_name == "len" || len_name == "length" ||
                             len_name.ends_with("len") || len_name.ends_with("length") ||
                             len_name.ends_with("size");
    if (buf.is_pointer && !buf.pointee_const && buf.pointee == "char" && !len.is_pointer &&
        is_integer(len.type) && length_name) {
      roles[i] = ParamRole::StringBuffer;
      roles[i + 1] = ParamRole::StringLength;
      why[i] = "char* buffer followed by its length";
      why[i + 1] = "length of the char* buffer before it";
      return true;
    }
  }
  return false;
}

// `nvrtcGetPTX(prog, char* ptx)` with a sibling `nvrtcGetPTXSize(prog, size_t* size)`
// whose typed form returns that size.
std::optional<OneCall> size_query(const Function& f, const std::vector<FunctionPlan>& siblings) {
  if (f.params.empty()) {
    return std::nullopt;
  }
  const Param& buffer = f.params.back();
  if (!buffer.is_pointer || buffer.pointee_const ||
      (buffer.pointee != "char" && buffer.pointee != "void")) {
    return std::nullopt;
  }
  for (const auto& sibling : siblings) {
    const Function& s = sibling.function;
    if (s.name != f.name + "Size" || s.params.size() != f.params.size() ||
        s.params.back().type != "size_t*" || sibling.shape != Shape::Value ||
        sibling.outputs() != std::vector<std::size_t>{s.params.size() - 1}) {
      continue;
    }
    bool same_inputs = true;
    for (std::size_t i = 0; i + 1 < f.params.size(); ++i) {
      same_inputs = same_inputs && s.params[i].type == f.params[i].type;
    }
    if (same_inputs) {
      // PTX and logs are text; cubins, LTO IR and OptiX IR are binary images.
      const std::string what = lower(f.name + " " + buffer.name);
      return OneCall{s.name, contains(what, "ptx") || contains(what, "log")};
    }
  }
  return std::nullopt;
}

// The input parameter whose log an exception should carry (nvrtcProgram prog, ...).
std::string log_handle(const Function& f, const LibraryConfig& config) {
  if (config.log_handle_type.empty()) {
    return {};
  }
  for (const auto& p : f.params) {
    if (p.type == config.log_handle_type) {
      return p.name;
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------
// Enums.

bool deprecated(const Enumerator& e) {
  return e.deprecated || lower(e.doc).rfind("deprecated", 0) == 0;
}

// Fold enumerators with equal values: keep the first non-deprecated name (or the first).
std::vector<const Enumerator*> distinct(const Enum& e) {
  std::vector<const Enumerator*> out;
  std::map<std::int64_t, std::size_t> at;
  for (const auto& k : e.enumerators) {
    const auto it = at.find(k.value);
    if (it == at.end()) {
      at.emplace(k.value, out.size());
      out.push_back(&k);
    } else if (deprecated(*out[it->second]) && !deprecated(k)) {
      out[it->second] = &k;
    }
  }
  return out;
}

// The longest common prefix of the enumerators' names, cut after an underscore.
std::string common_prefix(const Enum& e) {
  if (e.enumerators.empty()) {
    return {};
  }
  std::string prefix = e.enumerators.front().name;
  for (const auto& k : e.enumerators) {
    std::size_t n = 0;
    while (n < prefix.size() && n < k.name.size() && prefix[n] == k.name[n]) {
      ++n;
    }
    prefix.resize(n);
  }
  const std::size_t underscore = prefix.rfind('_');
  return underscore == std::string::npos ? std::string() : prefix.substr(0, underscore + 1);
}

// Whether an attribute answers yes or no, by its name (..._SUPPORTED: the header's
// documentation of some is worded otherwise, or misspelled, e.g. "Device suports") or by
// its documentation: "1 if ...", "Device supports ...", "Device can ...", "Device is ...",
// "Device has ...", "Whether ...". A few are named here, because cuda.core types them as
// bool while the header words them otherwise ("Specifies whether ...", "Indicates ...",
// "... are supported ...", or "Deprecated").
bool is_yes_no(const Enumerator& k) {
  if (k.name.ends_with("_SUPPORTED")) {
    return true;
  }
  static constexpr std::string_view kNamed[] = {
      "CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT",
      "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING",
      "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES",
      "CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST",
      "CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER",
      "CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES",
      "CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH",
      "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS",
      "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR",
      "CU_DEVICE_ATTRIBUTE_MPS_ENABLED",
      "CU_FUNC_ATTRIBUTE_CACHE_MODE_CA",
      "CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET",
      "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
  };
  if (std::find(std::begin(kNamed), std::end(kNamed), k.name) != std::end(kNamed)) {
    return true;
  }
  const std::string doc = lower(k.doc);
  for (const std::string_view lead : {"1 if ", "device supports ", "device can ", "device is ",
                                      "device has ", "whether ", "true if "}) {
    if (doc.rfind(lead, 0) == 0) {
      return true;
    }
  }
  return false;
}

AttributeList attribute_list(const Enum& e, std::string file, std::string macro) {
  AttributeList list{std::move(file), std::move(macro), e.name, {}};
  const std::string prefix = common_prefix(e);
  for (const Enumerator* k : distinct(e)) {
    const std::string name = lower(k->name.substr(prefix.size()));
    if (name == "max") {
      continue;  // the count sentinel, not an attribute
    }
    list.entries.push_back({name, k->name, is_yes_no(*k) ? "bool" : "int"});
  }
  return list;
}

}  // namespace

std::string free_local(const Function& f, std::string name) {
  while (std::any_of(f.params.begin(), f.params.end(),
                     [&](const Param& p) { return p.name == name; })) {
    name += '_';
  }
  return name;
}

void add_one_call_forms(std::vector<FunctionPlan>& functions) {
  for (auto& plan : functions) {
    if (plan.shape == Shape::Void) {
      plan.one_call = size_query(plan.function, functions);
    }
  }
}

const char* shape_name(Shape shape) {
  switch (shape) {
    case Shape::Void:
      return "void";
    case Shape::Value:
      return "value";
    case Shape::Aggregate:
      return "aggregate";
    case Shape::Answer:
      return "answer";
    case Shape::String:
      return "string";
    case Shape::PassThrough:
      return "pass-through";
    case Shape::RawOnly:
      return "raw-only";
  }
  return "unknown";
}

std::vector<std::size_t> FunctionPlan::outputs() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < roles.size(); ++i) {
    if (roles[i] == ParamRole::Output) {
      out.push_back(i);
    }
  }
  return out;
}

namespace {

// The library's two-call buffer protocol in `function`: a pointer to a count named *count*,
// *size* or *length* beside a pointer to an array, documented as sizing it (the count
// names the array, an array or a buffer, or the array is a buffer; a plain count output,
// "count of active sessions", is neither). Other arrays of the same element count that
// follow (nvmlDeviceGetRetiredPages_v2's timestamps beside addresses) share the count. A
// count documented without the array's size ("The count of returned GPU instances") is
// written only: the caller sizes the array, and the count is the first form's output.
// Fills plan.sized_*; false when there is no such pair.
bool find_sized_buffer(const Function& function, const LibraryConfig& config, FunctionPlan& plan) {
  if (config.sized_buffer_status.empty()) {
    return false;
  }
  const auto lower_case = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  };
  const auto ends_with = [](const std::string& text, std::string_view end) {
    return text.size() >= end.size() &&
           text.compare(text.size() - end.size(), end.size(), end) == 0;
  };
  const auto& params = function.params;
  const auto is_array = [&](std::size_t j) {
    return j < params.size() && params[j].is_pointer && !params[j].pointee_const &&
           params[j].pointee != "char" && params[j].pointee != "void";
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Param& count = params[i];
    const std::string name = lower_case(count.name);
    if (!count.is_pointer || count.pointee_const ||
        !(ends_with(name, "count") || ends_with(name, "size") || ends_with(name, "length")) ||
        (count.pointee != "unsigned int" && count.pointee != "unsigned long long" &&
         count.pointee != "size_t" && count.pointee != "int")) {
      continue;
    }
    for (const std::size_t j : {i + 1, i - 1}) {  // i - 1 wraps for i == 0: out of range
      if (!is_array(j)) {
        continue;
      }
      const std::string doc = lower_case(count.doc);
      const std::string array_doc = lower_case(params[j].doc);
      const bool names_array = doc.find("array") != std::string::npos ||
                               doc.find("buffer") != std::string::npos ||
                               doc.find(lower_case(params[j].name)) != std::string::npos;
      if (!names_array && array_doc.find("buffer") == std::string::npos) {
        continue;
      }
      plan.sized_count = i;
      plan.sized_arrays = {j};
      for (std::size_t k = j + 1; j > i && is_array(k) && params[k].pointee == params[j].pointee;
           ++k) {
        plan.sized_arrays.push_back(k);
      }
      plan.sized_in_bytes = ends_with(name, "size");
      plan.sized_status = config.sized_buffer_status;
      // "Reference in which to provide the infos array size", "caller supplied array size",
      // "Size of hwbcEntries array": the capacity goes in. "The count of returned GPU
      // instances": it does not.
      const bool capacity_in = doc.find("array") != std::string::npos ||
                               doc.find("buffer") != std::string::npos ||
                               doc.find("size") != std::string::npos;
      plan.sized_capacity_in = capacity_in;
      plan.roles[i] = capacity_in ? ParamRole::Input : ParamRole::Output;
      for (const std::size_t a : plan.sized_arrays) {
        plan.roles[a] = ParamRole::Input;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

FunctionPlan plan_function(const Function& function, const LibraryConfig& config) {
  FunctionPlan plan;
  plan.function = function;
  plan.returns_status = function.return_type == config.status_type;
  plan.entry_local = free_local(function, "fn");  // cuLaunchHostFunc has a parameter `fn`
  if (function.variadic) {
    plan.roles.assign(function.params.size(), ParamRole::Input);
    plan.raw_only_reason = "variadic parameter list";
    return plan;
  }
  if (!plan.returns_status) {
    plan.roles.assign(function.params.size(), ParamRole::Input);
    plan.shape = Shape::PassThrough;
    return plan;
  }
  for (const auto& a : kAnswers) {
    if (function.name == a.function) {
      plan.roles.assign(function.params.size(), ParamRole::Input);
      plan.shape = Shape::Answer;
      plan.answer_status = a.status;
      plan.log_handle = log_handle(function, config);
      return plan;
    }
  }
  plan.raw_only_reason = infer_roles(function, plan.roles, plan.role_rules);
  if (plan.raw_only_reason.empty()) {
    find_sized_buffer(function, config, plan);
  }
  if (!plan.raw_only_reason.empty()) {
    plan.roles.assign(function.params.size(), ParamRole::Input);
    return plan;
  }
  plan.log_handle = log_handle(function, config);
  const std::size_t outputs = plan.outputs().size();
  if (outputs == 0 && mark_string_output(function, plan.roles, plan.role_rules)) {
    plan.shape = Shape::String;
    plan.string_length = kStringLength;
    return plan;
  }
  plan.shape = outputs == 0 ? Shape::Void : outputs == 1 ? Shape::Value : Shape::Aggregate;
  if (plan.shape == Shape::Aggregate) {
    plan.result_local = free_local(function, "result");
  }
  return plan;
}

std::string describe_status(const Enumerator& enumerator) {
  std::string text = enumerator.doc;
  // First sentence only: the what() message gets it in parentheses.
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '.' && text[i + 1] == ' ') {
      text.resize(i);
      break;
    }
  }
  if (!text.empty() && text.back() == '.') {
    text.pop_back();
  }
  for (const std::string_view noise : {"\\p ", "\\c ", "::"}) {
    for (std::size_t at = text.find(noise); at != std::string::npos; at = text.find(noise, at)) {
      text.erase(at, noise.size());
    }
  }
  for (const std::string_view lead : {"This indicates that ", "This indicates ",
                                      "This indicated that ", "This error indicates that "}) {
    if (text.rfind(lead, 0) == 0) {
      text.erase(0, lead.size());
    }
  }
  if (!text.empty()) {
    return text;
  }
  // Undocumented (nvrtc.h): NVRTC_ERROR_OUT_OF_MEMORY → "out of memory".
  std::string name = enumerator.name;
  for (const std::string_view marker : {"_ERROR_", "_SUCCESS"}) {
    if (const std::size_t at = name.find(marker); at != std::string::npos) {
      name = marker == "_SUCCESS" ? "success" : name.substr(at + marker.size());
      break;
    }
  }
  std::replace(name.begin(), name.end(), '_', ' ');
  return lower(name);
}

std::string declare(const std::string& type, const std::string& name) {
  // A function pointer: "int (*)(void*, void*)" declares as "int (*name)(void*, void*)".
  if (const std::size_t at = type.find("(*)"); at != std::string::npos) {
    return type.substr(0, at + 2) + name + type.substr(at + 2);
  }
  return type + " " + name;
}

namespace {

// Plan every function of `header`: first forms, one-call forms, second forms.
std::vector<FunctionPlan> plan_functions(const Header& header, const LibraryConfig& config) {
  std::vector<FunctionPlan> functions;
  for (const auto& f : header.functions) {
    FunctionPlan fp = plan_function(f, config);
    fp.index = functions.size();
    functions.push_back(std::move(fp));
  }
  add_one_call_forms(functions);
  add_second_forms(functions, header);
  return functions;
}

void add_decision(std::vector<ProseDecision>& out, const std::string& param, std::string rule) {
  for (const auto& d : out) {
    if (d.param == param) {
      return;  // one decision per parameter: the first form's rule comes first
    }
  }
  out.push_back({param, std::move(rule)});
}

// What the documentation decided in `documented`, the plan of a function whose plan
// without the parameters' documentation is `bare`.
std::vector<ProseDecision> prose_decisions(const FunctionPlan& documented,
                                           const FunctionPlan& bare) {
  std::vector<ProseDecision> out;
  const auto& params = documented.function.params;
  for (std::size_t i = 0; i < params.size() && i < bare.roles.size(); ++i) {
    if (documented.roles[i] != bare.roles[i]) {
      add_decision(out, params[i].name, documented.role_rules.at(i));
    }
  }
  if (documented.raw_only_reason != bare.raw_only_reason) {
    std::string param;
    std::string rule =
        documented.raw_only_reason.empty()
            ? "typed: without the documentation raw-only (" + bare.raw_only_reason + ")"
            : "raw-only: " + documented.raw_only_reason;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (i < documented.role_rules.size() && i < bare.role_rules.size() &&
          documented.role_rules[i] != bare.role_rules[i] && !documented.raw_only_reason.empty()) {
        param = params[i].name;
        rule = documented.role_rules[i] + " (" + documented.raw_only_reason + ")";
        break;
      }
    }
    add_decision(out, param, rule);
  }
  if (documented.shape != bare.shape && out.empty()) {
    add_decision(out, "",
                 std::string("shape ") + shape_name(documented.shape) +
                     "; without the documentation " + shape_name(bare.shape));
  }
  const SecondForm* a = documented.second ? &*documented.second : nullptr;
  const SecondForm* b = bare.second ? &*bare.second : nullptr;
  if (a == nullptr && b == nullptr) {
    return out;
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const FormRole ra = a != nullptr ? a->params[i].role : FormRole::Input;
    const FormRole rb = b != nullptr ? b->params[i].role : FormRole::Input;
    if (ra != rb) {
      add_decision(out, params[i].name,
                   a != nullptr ? "second form (" + a->why + "): " + form_role_name(ra) +
                                      "; without the documentation " + form_role_name(rb)
                                : std::string("no second form; without the documentation ") +
                                      form_role_name(rb) + " (" + b->why + ")");
    } else if (a != nullptr && b != nullptr && a->params[i].optional != b->params[i].optional) {
      add_decision(out, params[i].name, "documented \"optional\": the span may be empty");
    }
  }
  if (out.empty() && (a == nullptr) != (b == nullptr)) {
    add_decision(out, "",
                 a != nullptr ? "second form (" + a->why + ") only with the documentation"
                              : "no second form; without the documentation " + b->why);
  }
  return out;
}

// `header` without the parameters' documentation (markers such as [out] stay).
Header without_param_docs(Header header) {
  for (auto& f : header.functions) {
    for (auto& p : f.params) {
      p.doc.clear();
    }
  }
  return header;
}

}  // namespace

namespace {

// Whether `after` (a name past its family) starts with the verb `create`, at most after
// a dimension such as "3D" (cuArray3DCreate), not after a word (cuModuleGetLoadingMode).
bool creates_after(const std::string& after, const char* create) {
  const std::size_t at = after.find(create);
  return at != std::string::npos &&
         std::all_of(after.begin(), after.begin() + static_cast<std::ptrdiff_t>(at), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0 ||
                  std::isupper(static_cast<unsigned char>(c)) != 0;
         });
}

}  // namespace

std::vector<OwningHandle> owning_handles(const std::vector<FunctionPlan>& functions,
                                         const Header& header) {
  struct Verb {
    const char* destroy;
    std::vector<const char*> create;
  };
  static const std::vector<Verb> kVerbs = {
      {"Destroy", {"Create", "Import"}}, {"Unload", {"Load"}}, {"Unregister", {"Register"}}};
  std::vector<OwningHandle> out;
  for (const auto& t : header.typedefs) {
    if (t.underlying.empty() || t.underlying.back() != '*') {
      continue;  // an integer handle: its type does not say how to release it
    }
    std::vector<std::pair<const FunctionPlan*, const Verb*>> destroys;
    std::string family;
    std::string rest;
    for (const auto& plan : functions) {
      const Function& f = plan.function;
      if (f.deprecated || !plan.returns_status || f.params.size() != 1 ||
          f.params[0].type != t.name || f.name.rfind("cu", 0) != 0) {
        continue;
      }
      const std::string name = f.name.substr(2);
      for (const Verb& verb : kVerbs) {
        const std::size_t at = name.find(verb.destroy);
        if (at == std::string::npos) {
          continue;
        }
        // cu<Family><Verb>[<Rest>], or cuDestroy<Family> (verb first).
        const bool verb_first = at == 0;
        if (!verb_first && verb.destroy != std::string("Unregister") &&
            at + std::strlen(verb.destroy) != name.size()) {
          continue;
        }
        destroys.emplace_back(&plan, &verb);
        family = verb_first ? name.substr(std::strlen(verb.destroy)) : name.substr(0, at);
        rest = verb_first ? std::string() : name.substr(at + std::strlen(verb.destroy));
        break;
      }
    }
    if (destroys.size() != 1 || family.empty()) {
      continue;  // none, or more than one way to release it: not provable
    }
    const auto [destroy, verb] = destroys.front();
    const bool verb_first = destroy->function.name.rfind(std::string("cu") + verb->destroy, 0) == 0;
    OwningHandle owning{t.name, destroy->function.name, {}};
    for (const auto& plan : functions) {
      const auto outputs = plan.outputs();
      if (plan.function.deprecated || outputs.size() != 1 ||
          plan.function.params[outputs[0]].pointee != t.name) {
        continue;
      }
      const std::string& name = plan.function.name;
      for (const char* create : verb->create) {
        const bool named = verb_first ? name == std::string("cu") + create + family
                                      : name.rfind("cu" + family, 0) == 0 &&
                                            creates_after(name.substr(2 + family.size()), create) &&
                                            (rest.empty() || name.find(rest) != std::string::npos);
        if (named) {
          owning.creators.push_back(name);
          break;
        }
      }
    }
    if (!owning.creators.empty()) {
      out.push_back(std::move(owning));
    }
  }
  return out;
}

Plan make_plan(const Api& api) {
  Plan plan;
  plan.cuda_version = api.cuda_version;
  plan.abi_source = api.abi_source;
  for (const auto& config : library_configs()) {
    const Header* header = api.find(config.header);
    if (header == nullptr) {
      continue;
    }
    LibraryPlan lib;
    lib.config = config;
    lib.functions = plan_functions(*header, config);
    const auto bare = plan_functions(without_param_docs(*header), config);
    for (std::size_t i = 0; i < lib.functions.size(); ++i) {
      lib.functions[i].to_review = prose_decisions(lib.functions[i], bare[i]);
    }
    for (const auto& e : header->enums) {
      if (e.name.empty()) {
        lib.skipped_enums.push_back(
            "anonymous enum starting with " +
            (e.enumerators.empty() ? std::string("nothing") : e.enumerators.front().name));
        continue;
      }
      EnumPlan ep;
      ep.name = e.name;
      ep.is_status = e.name == status_code_type(config);
      for (const Enumerator* k : distinct(e)) {
        ep.cases.push_back({k->name, ep.is_status ? describe_status(*k) : std::string()});
      }
      for (const auto& k : e.enumerators) {
        ep.enumerators.push_back(k.name);
      }
      lib.enums.push_back(std::move(ep));
      if (e.name == "CUdevice_attribute") {
        plan.attribute_lists.push_back(
            attribute_list(e, "device_attributes.inc", "CUWRAP_DEVICE_ATTRIBUTE"));
      } else if (e.name == "CUfunction_attribute") {
        plan.attribute_lists.push_back(
            attribute_list(e, "function_attributes.inc", "CUWRAP_FUNCTION_ATTRIBUTE"));
      }
    }
    lib.owning = owning_handles(lib.functions, *header);
    plan.libraries.push_back(std::move(lib));
  }
  return plan;
}

}  // namespace cuwrap::gen
